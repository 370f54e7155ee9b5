"""`Skill`: a skill as the public API hands it over and takes it back, a single markdown file or a
package (SKILL.md with references and scripts)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillgrad.atomic import write_text_atomic
from skillgrad.package.folder import write_package
from skillgrad.package.model import SKILL_FILE, SkillPackage, as_package, is_package
from skillgrad.session.build import read_skill


@dataclass(frozen=True)
class Skill:
    """A skill. `text` is its canonical text, the form the trainer, the call cache and
    `skillgrad.evaluate` take: the markdown of a single-file skill, or a package's encoded text
    (docs/architecture.md, "Packages"). `path`: where it was read from or written to, if anywhere.

    A skill's text passes through the run's redactor when a run folder keeps it, so a skill read
    back from a run never holds a credential."""

    text: str
    path: Path | None = None

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> Skill:
        """A SKILL.md (any markdown file) or a skill folder; UserError naming the path otherwise."""
        where = Path(path).expanduser()
        return cls(read_skill(where), where)

    @property
    def is_package(self) -> bool:
        return is_package(self.text)

    @property
    def package(self) -> SkillPackage | None:
        """The package (its text files and binary files by path), or None for a single file."""
        return as_package(self.text)

    @property
    def markdown(self) -> str:
        """SKILL.md's text: the whole skill for a single file, the instructions of a package."""
        package = self.package
        return self.text if package is None else package.skill_md

    @property
    def files(self) -> dict[str, str]:
        """Every text file by its path in the package (a single file: {"SKILL.md": text})."""
        package = self.package
        return {SKILL_FILE: self.text} if package is None else dict(package.files)

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the skill: a single file to `path`, a package as the folder `path` (replaced
        whole). Returns the path written."""
        target = Path(path).expanduser()
        package = self.package
        if package is None:
            target.parent.mkdir(parents=True, exist_ok=True)
            write_text_atomic(target, self.text)
        else:
            write_package(target, package)
        return target

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "path": str(self.path) if self.path else None}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Skill:
        path = data.get("path")
        return cls(str(data["text"]), Path(path) if path else None)
