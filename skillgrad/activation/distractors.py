"""The other skills installed beside the one under training, so that loading it is a choice:
`benchmark.distractor_skills` names a folder of skill folders (each with its SKILL.md, a name of
lowercase letters, digits and hyphens, and a description); unset, the few plausible ones shipped
in `distractors/` are used (PDF forms, git, data analysis, web research, code review)."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from skillgrad.activation.description import DESCRIPTION_LIMIT, own_description
from skillgrad.backends.workspace import install_skill
from skillgrad.config import Config
from skillgrad.errors import UserError
from skillgrad.package.folder import load_package
from skillgrad.package.model import SKILL_FILE

_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")


@dataclass(frozen=True)
class Distractor:
    name: str
    text: str  # the skill text: its SKILL.md, or a package's encoded text

    @property
    def description(self) -> str:
        return own_description(self.text) or ""

    def fingerprint(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()[:16]


def shipped_folder() -> Path:
    return Path(str(resources.files("skillgrad.activation").joinpath("distractors")))


def _load_one(folder: Path, skill_name: str) -> Distractor:
    name = folder.name
    where = f"benchmark.distractor_skills: {folder}"
    if not _NAME.match(name):
        raise UserError(f"{where}: a skill's folder name is its name: lowercase letters, digits, hyphens")
    if name == skill_name:
        raise UserError(f"{where}: has the name of the skill under training (skill.name); rename one")
    package = load_package(folder)
    text = package.skill_md if len(package.files) == 1 and not package.binary else package.encode()
    description = own_description(text)
    if description is None:
        raise UserError(f"{folder / SKILL_FILE}: no description in its front matter; a distractor needs one")
    if len(description) > DESCRIPTION_LIMIT:
        raise UserError(f"{folder / SKILL_FILE}: description over {DESCRIPTION_LIMIT} characters; shorten it")
    return Distractor(name, text)


def load_distractors(cfg: Config) -> list[Distractor]:
    """The distractor skills of the run, in name order (UserError for an unusable folder)."""
    configured = cfg.benchmark.distractor_skills
    root = cfg.resolve_path(configured) if configured else shipped_folder()
    if not root.is_dir():
        raise UserError(f"benchmark.distractor_skills: {root} is not a folder of skill folders")
    folders = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    return [_load_one(folder, cfg.skill.name) for folder in folders if (folder / SKILL_FILE).is_file()]


def install_distractors(workspace: Path, skills_dir: str, distractors: list[Distractor]) -> None:
    for distractor in distractors:
        install_skill(workspace, distractor.text, distractor.name, skills_dir)
