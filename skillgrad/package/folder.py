"""A package on disk: load a skill folder (with its name checks) and write one out (installed
for a harness, or as a version folder of the run)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from skillgrad.atomic import write_bytes_atomic
from skillgrad.errors import UserError
from skillgrad.package.model import SKILL_FILE, SkillPackage, path_problem

MAX_FILES = 200
MAX_FILE_BYTES = 1_000_000
SKIPPED_DIRS = ("__pycache__",)  # build outputs, not part of a skill


def _text_of(data: bytes) -> str | None:
    """The file's text when it is UTF-8 without NUL bytes; None for a binary file."""
    if b"\x00" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _member(root: Path, path: Path) -> str:
    """`path`'s name in the package; a symlink that leaves the package, or a bad name, is refused."""
    rel = path.relative_to(root).as_posix()
    if path.is_symlink():
        target = path.resolve()
        if not target.is_relative_to(root.resolve()) or not target.is_file():
            raise UserError(
                f"{path}: symlink points outside the skill folder {root}; copy the file in instead"
            )
    problem = path_problem(rel)
    if problem:
        raise UserError(f"{root}: file name {problem}; rename it")
    return rel


def load_package(root: Path) -> SkillPackage:
    """The package in folder `root`: SKILL.md and every file under it (hidden files and
    `__pycache__` skipped). Raises UserError naming the file for anything unusable."""
    if not (root / SKILL_FILE).is_file() or (root / SKILL_FILE).is_symlink():
        raise UserError(
            f"{root}: a skill folder needs a {SKILL_FILE} file; add one or point skill.init at a file"
        )
    files: dict[str, str] = {}
    binary: dict[str, bytes] = {}
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIPPED_DIRS)
        for sub in dirs:
            if (Path(folder) / sub).is_symlink():
                raise UserError(f"{Path(folder) / sub}: symlinked folder in the skill; copy it in instead")
        for name in sorted(n for n in names if not n.startswith(".")):
            path = Path(folder) / name
            rel = _member(root, path)
            data = path.read_bytes()
            if len(data) > MAX_FILE_BYTES:
                raise UserError(
                    f"{path}: {len(data)} bytes, over the {MAX_FILE_BYTES}-byte limit of a skill file"
                )
            text = _text_of(data)
            if text is None:
                binary[rel] = data
            else:
                files[rel] = text
            if len(files) + len(binary) > MAX_FILES:
                raise UserError(
                    f"{root}: more than {MAX_FILES} files; a skill package holds its own files only"
                )
    if SKILL_FILE not in files:
        raise UserError(f"{root / SKILL_FILE}: not UTF-8 text; save it as UTF-8")
    return SkillPackage(files, binary)


def write_package(
    folder: Path,
    package: SkillPackage,
    *,
    skill_md: str | None = None,
    redact: Callable[[str], str] = lambda text: text,
) -> None:
    """Write `package` as `folder` (replacing it whole): built beside it, then renamed, so a
    reader never sees half a version. `skill_md` replaces SKILL.md's text (the installed form);
    scripts with a `#!` line are made executable."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        for rel, text in package.files.items():
            body = skill_md if rel == SKILL_FILE and skill_md is not None else text
            target = staging / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            write_bytes_atomic(target, redact(body).encode("utf-8"), fsync=False)
            if body.startswith("#!"):
                target.chmod(0o755)
        for rel, data in package.binary.items():
            target = staging / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            write_bytes_atomic(target, data, fsync=False)
        staging.chmod(0o755)
        if folder.exists():
            old = folder.with_name(f".{folder.name}.old")
            shutil.rmtree(old, ignore_errors=True)
            folder.rename(old)
            staging.rename(folder)
            shutil.rmtree(old, ignore_errors=True)
        else:
            staging.rename(folder)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def read_skill_at(stem: Path) -> str:
    """The skill a run folder keeps at `stem`: the folder `stem`/ as package text, else `stem`.md."""
    if stem.is_dir():
        return load_package(stem).encode()
    return stem.with_name(f"{stem.name}.md").read_text(encoding="utf-8")
