"""A skill package: `SKILL.md` plus the text files under it (references, scripts), and binary
files carried unchanged.

Through the training loop a skill travels as text: the call cache, the validation memo, the
checkpoint and the ahead-of-time rollouts all key on it. A package therefore has one canonical
text form, `encode()`: a header line, then the files as sorted JSON (binary files base64). A
single-file skill is its markdown, as before; `is_package` tells the two apart by the header.
"""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass, field

from skillgrad.skilldoc import MAIN_FILE

PACKAGE_HEADER = "<!-- skillgrad package v1 -->\n"
SKILL_FILE = MAIN_FILE  # a package's instructions; an edit that names no file changes it
# A path component a package may hold: no `..`, nothing hidden, no spaces or shell characters.
_COMPONENT = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,99}$")
SCRIPT_SUFFIXES = (".py", ".sh", ".bash")
MAX_DEPTH = 6


def is_package(text: str) -> bool:
    return text.startswith(PACKAGE_HEADER)


def path_problem(path: str) -> str | None:
    """Why `path` cannot name a file of a package (None when it can): relative, POSIX, at most
    MAX_DEPTH components, each of letters, digits, `_`, `-`, `.`, none hidden and none `..`."""
    if not path or path.startswith("/") or "\\" in path:
        return f"{path!r} is not a relative POSIX path"
    parts = path.split("/")
    if len(parts) > MAX_DEPTH:
        return f"{path!r} is deeper than {MAX_DEPTH} folders"
    for part in parts:
        if part in (".", "..") or not _COMPONENT.match(part):
            return f"{path!r}: component {part!r} is not allowed (letters, digits, '_', '-', '.'; no '..')"
    return None


def is_script(path: str, text: str = "") -> bool:
    return path.endswith(SCRIPT_SUFFIXES) or text.startswith("#!")


@dataclass(frozen=True)
class SkillPackage:
    """`files`: path -> text (SKILL.md always among them); `binary`: path -> bytes, never edited."""

    files: dict[str, str]
    binary: dict[str, bytes] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if SKILL_FILE not in self.files:
            raise ValueError(f"a skill package needs {SKILL_FILE}")

    @property
    def skill_md(self) -> str:
        return self.files[SKILL_FILE]

    def chars(self) -> int:
        """The package's size for `skill.max_chars`: the characters of its text files."""
        return sum(len(text) for text in self.files.values())

    def paths(self) -> list[str]:
        """Every file, SKILL.md first, then the rest in path order."""
        rest = sorted(p for p in [*self.files, *self.binary] if p != SKILL_FILE)
        return [SKILL_FILE, *rest]

    def with_file(self, path: str, text: str) -> SkillPackage:
        return SkillPackage({**self.files, path: text}, self.binary)

    def encode(self) -> str:
        body = {
            "files": dict(sorted(self.files.items())),
            "binary": {p: base64.b64encode(b).decode("ascii") for p, b in sorted(self.binary.items())},
        }
        return PACKAGE_HEADER + json.dumps(body, ensure_ascii=False, indent=1) + "\n"

    @classmethod
    def decode(cls, text: str) -> SkillPackage:
        """The package `encode` wrote; raises ValueError for anything else."""
        if not is_package(text):
            raise ValueError("not an encoded skill package")
        data = json.loads(text[len(PACKAGE_HEADER) :])
        files = {str(p): str(t) for p, t in data["files"].items()}
        binary = {str(p): base64.b64decode(b) for p, b in data.get("binary", {}).items()}
        return cls(files, binary)


def as_package(text: str) -> SkillPackage | None:
    """The package a skill text encodes, or None for a single-file skill."""
    return SkillPackage.decode(text) if is_package(text) else None


def skill_chars(text: str) -> int:
    """A skill's size: a package's text files together, a single file its length."""
    package = as_package(text)
    return len(text) if package is None else package.chars()
