"""Continue a run folder: the same config, the last completed step, the ledger so far.

What makes a resume pay nothing twice is the call cache (every finished model call and rollout is
on disk); this module restores the trainer's position and refuses to mix two different runs.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from skillgrad.budget import Ledger, PaidJournal
from skillgrad.config import Config, config_from_data
from skillgrad.errors import UserError
from skillgrad.loop.state import TrainState
from skillgrad.run_folder import RunDir, RunFiles

REDACTED_SECRET = "**********"  # how pydantic writes a SecretStr into config.json
# Sections a resume may change: spending caps, experiment tracking, the cache location, and where
# rollouts run (results do not depend on the executor).
MUTABLE_SECTIONS = ("budget", "tracking", "cache", "ray")
MUTABLE_KEYS = ("train.executor",)
# How a run may end and still have work left: a budget stop continues with a raised budget, an
# error once its cause is fixed. Any other stop (completed, no_headroom, no_failures) is final.
UNFINISHED_STOPS = ("budget", "error")
_LOG_LINE = re.compile(r"^\S+ \S+\s+([\d.]+)s (\S+)")  # see progress.LogFileObserver


def _drop_redacted(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _drop_redacted(v) for k, v in node.items() if v != REDACTED_SECRET}
    return node


def _stored(out: Path) -> dict[str, Any]:
    path = out / RunFiles.CONFIG
    if not path.is_file():
        raise UserError(f"{out}: not a skillgrad run folder (no config.json); check the --resume path")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError):
        raise UserError(f"{path}: unreadable config.json; this run folder cannot be resumed") from None
    return _drop_redacted(data)  # type: ignore[no-any-return]


def stored_config(out: Path, overrides: list[str], **roles: str | None) -> Config:
    """The run's own config (secrets come back from the environment, as they were never stored)."""
    return config_from_data(_stored(out), str(out / RunFiles.CONFIG), overrides, base_dir=out, **roles)


def _flatten(node: Any, prefix: str = "") -> dict[str, Any]:
    if not isinstance(node, dict):
        return {prefix: node}
    out: dict[str, Any] = {}
    for key, value in node.items():
        out.update(_flatten(value, f"{prefix}.{key}" if prefix else key))
    return out


def check_same_config(out: Path, cfg: Config) -> None:
    """Refuse to resume with a config that would make a different run."""
    stored = _flatten(_stored(out))
    current = _flatten(_drop_redacted(cfg.portable().to_json()))
    changed = sorted(
        key
        for key in set(stored) | set(current)
        if stored.get(key) != current.get(key)
        and key.split(".")[0] not in MUTABLE_SECTIONS
        and key not in MUTABLE_KEYS
    )
    if changed:
        shown = ", ".join(f"{k} ({stored.get(k)!r} -> {current.get(k)!r})" for k in changed[:3])
        raise UserError(
            f"{out}: cannot resume with a different config: {shown}; resume without --config/--set, "
            f"or start a new run with another --out"
        )


def load_checkpoint(
    out: Path, cfg: Config, journal: PaidJournal | None = None
) -> tuple[TrainState | None, Ledger]:
    """The state after the last completed step (None: the baseline never finished) and the
    ledger, with the journal's calls paid since that checkpoint added (see skillgrad.budget);
    history.jsonl is cut back to that step, its torn tail repaired."""
    run = RunDir(out)
    data = run.read_state()
    if data is None:
        ledger = Ledger(cfg.budget, journal)
        ledger.recover(0)
        return None, ledger
    ledger = Ledger.from_json(data.pop("ledger", {}), cfg.budget, journal)
    state = TrainState.from_json(data)
    run.keep_history_to(state.step)
    # A kill while best_skill/ was being swapped can leave it missing: skills/ is the record.
    run.write_best_skill(run.read_skill(state.best_version))
    return state, ledger


def finished_summary(out: Path) -> dict[str, Any] | None:
    """The run's summary when the run is over (nothing is left to resume), else None."""
    path = out / RunFiles.SUMMARY
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return None  # no summary (killed), or torn: resume re-does only what is missing
    if not isinstance(summary, dict) or summary.get("stopped") in UNFINISHED_STOPS:
        return None
    return summary


def earlier_sessions(out: Path) -> tuple[float, int]:
    """(wall seconds, number) of the processes that already worked on this run, from train.log:
    each one starts with a `run_start` line at 0 s, and its last line says how long it ran."""
    path = out / RunFiles.LOG
    if not path.is_file():
        return 0.0, 0
    walls: list[float] = []
    with path.open(encoding="utf-8", errors="replace") as fh:
        for line in fh:
            match = _LOG_LINE.match(line)
            if match is None:
                continue
            if match[2] == "run_start" or not walls:
                walls.append(0.0)
            walls[-1] = max(walls[-1], float(match[1]))
    return sum(walls), len(walls)
