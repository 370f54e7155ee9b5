"""What a run checks about its initial skill before any work: the budget, and the options that
cannot handle a package."""

from __future__ import annotations

from pathlib import Path

from skillgrad.config import Config
from skillgrad.errors import UserError
from skillgrad.package.model import as_package


def check_initial_package(cfg: Config, path: Path, text: str) -> None:
    package = as_package(text)
    size = package.chars() if package is not None else len(text)
    if cfg.skill.max_chars is not None and size > cfg.skill.max_chars:
        raise UserError(
            f"skill.init {path}: {size} chars, over skill.max_chars={cfg.skill.max_chars}; "
            "raise the budget or shorten the skill"
        )
    if package is not None and cfg.optimizer.edit_mode == "rewrite":
        raise UserError(
            f"skill.init {path} is a package folder; optimizer.edit_mode: rewrite works on a single "
            "file; use edit_mode: patch"
        )
