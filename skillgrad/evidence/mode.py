"""Digest or workspace: how the analyst reads the minibatch's sessions (`optimizer.reflection`),
decided in one place for the trainer, the estimate and the run's set-up."""

from __future__ import annotations

from typing import Literal

from skillgrad.backend_specs import spec_for
from skillgrad.backends.reading import can_read_folders
from skillgrad.config import Config
from skillgrad.errors import UserError

Mode = Literal["digest", "workspace"]


def reflection_mode(cfg: Config) -> Mode:
    """`optimizer.reflection` as set, else workspace when the optimizer is an agent harness.
    Raises UserError for a workspace asked of a chat optimizer, which has no tools to read it."""
    backend = cfg.model.backend_for("optimizer")
    harness = spec_for(backend).harness
    chosen = cfg.optimizer.reflection
    if chosen == "workspace" and not harness:
        raise UserError(
            f"optimizer.reflection=workspace: the optimizer backend {backend!r} is a chat model with no "
            "tools to read a workspace; use claude_code_exec or codex_exec as the optimizer "
            "(model.optimizer_backend), or set optimizer.reflection=digest"
        )
    if chosen is not None:
        return chosen
    return "workspace" if harness else "digest"


def reads_workspace(cfg: Config, chat: object) -> bool:
    """Whether this run's analysts read a workspace: the mode says so and the optimizer can (a
    harness whose backend has no `investigate` reads the digest, unless workspace was asked for)."""
    if reflection_mode(cfg) == "digest":
        return False
    if can_read_folders(chat):
        return True
    if cfg.optimizer.reflection == "workspace":
        raise UserError(
            f"optimizer.reflection=workspace: the optimizer backend {cfg.model.backend_for('optimizer')!r} "
            "cannot read a workspace; set optimizer.reflection=digest"
        )
    return False
