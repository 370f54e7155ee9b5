"""Build the run's components from a config: benchmark, roles, run folder, events, ledger.

Everything that can fail on user input (config, data, skill file, backend availability) is
resolved here BEFORE the run folder is created, so bad input never leaves a half-written run.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

from skillgrad.backends.registry import make_agent, make_chat, spec_for
from skillgrad.benchmarks.base import SPLITS, Benchmark
from skillgrad.benchmarks.registry import load_benchmark
from skillgrad.budget import Ledger
from skillgrad.config import Config
from skillgrad.errors import UserError
from skillgrad.loop.events import Events, Observer
from skillgrad.loop.trainer import Roles
from skillgrad.redact import Redactor
from skillgrad.runs import RunDir


def read_skill(path: Path) -> str:
    if not path.is_file():
        raise UserError(f"{path}: skill file not found; check skill.init / --skill")
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: skill file is not UTF-8 (byte {exc.start}); save it as UTF-8") from None


def initial_skill(cfg: Config) -> str:
    return read_skill(cfg.resolve_path(cfg.skill.init)) if cfg.skill.init else ""


def checked_benchmark(cfg: Config, splits: tuple[str, ...]) -> Benchmark:
    """Load the benchmark and every needed split now, so data errors surface before any work."""
    benchmark = load_benchmark(cfg)
    for split in splits:
        if split not in SPLITS:
            raise UserError(f"--split {split!r}: allowed values: {', '.join(SPLITS)}")
        if not benchmark.load(split):  # type: ignore[arg-type]
            raise UserError(
                f"benchmark '{cfg.benchmark.name}': the {split} split is empty; "
                f"set benchmark.{split}_size to at least 1"
            )
    return benchmark


def build_roles(cfg: Config, *, optimizer: bool = True) -> Roles:
    target_spec = spec_for(cfg.model.backend_for("target"))
    return Roles(
        optimizer=make_chat(cfg, "optimizer") if optimizer else None,
        agent=make_agent(cfg),
        harness=target_spec.harness,
    )


def default_out(cfg: Config, kind: str) -> Path:
    import time

    return Path("runs") / f"{time.strftime('%Y%m%d-%H%M%S')}-{kind}-{cfg.benchmark.name.replace(':', '_')}"


@dataclass
class Session:
    run: RunDir
    events: Events
    ledger: Ledger
    redactor: Redactor


def open_session(cfg: Config, out: Path, *, resume: bool = False) -> Session:
    redactor = Redactor.from_config(cfg, os.environ)
    run = RunDir(out, redactor.redact)
    run.create(allow_existing=resume)
    observers: list[Observer] = []
    try:
        from skillgrad.progress import make_observers

        observers = list(make_observers(out, sys.stdout))
    except ImportError:
        pass
    return Session(run, Events(observers), Ledger(cfg.budget), redactor)
