"""Continue a run folder: the same config, the last completed step, the ledger so far.

A resume redoes only the unfinished step; what it asks again is answered by the call cache when
the request is one the run already paid for (the cache's salt and switch are frozen with the rest
of the config, so the same requests are the same calls). This module restores the trainer's
position and refuses to mix two different runs.

Everything a resume reads is checked before anything in the folder changes (`check_resumable`):
config.json, state.json and its ledger, history.jsonl, the paid journal, every rollout set's
index and the skill versions the state names, each against its typed model and against each
other. A damaged file is one `UserError` naming it, what is wrong and what to do.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, NonNegativeInt, ValidationError

from skillgrad.backend_specs import spec_for
from skillgrad.budget import Ledger, LedgerFileError, PaidJournal, ledger_record
from skillgrad.config import Config, config_from_data
from skillgrad.errors import UserError, describe_validation
from skillgrad.loop.search.pool import read_state
from skillgrad.loop.state import StateError, TrainState
from skillgrad.run_folder import RunDir, RunFiles, read_task_index, version_name

REDACTED_SECRET = "**********"  # how pydantic writes a SecretStr into config.json
# What a resume may change: spending caps, experiment tracking, where rollouts run (results do not
# depend on the executor) and where the call cache lives (a moved cache pays its misses again but
# asks the same requests). Everything else changes results and is frozen: cache.salt (a new salt
# resamples every call) and cache.enabled (`--no-cache` too: a resume without the cache repays).
MUTABLE_SECTIONS = ("budget", "tracking", "ray")
MUTABLE_KEYS = ("train.executor", "cache.dir")
_HINTS = {"cache.enabled": " (--no-cache turns it off)"}
# How a run may end and still have work left: a budget stop continues with a raised budget, an
# error once its cause is fixed. Any other stop (completed, no_headroom, no_failures,
# no_new_evidence) is final.
UNFINISHED_STOPS = ("budget", "error")
_LOG_LINE = re.compile(r"^\S+ \S+\s+([\d.]+)s (\S+)")  # see progress.LogFileObserver


def _drop_redacted(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _drop_redacted(v) for k, v in node.items() if v != REDACTED_SECRET}
    return node


def _raw_config(out: Path) -> dict[str, Any]:
    path = out / RunFiles.CONFIG
    if not path.is_file():
        raise UserError(f"{out}: not a skillgrad run folder (no config.json); check the --resume path")
    data = _json_file(path)
    if not isinstance(data, dict):
        raise _damaged(path, f"expected a JSON object, got {type(data).__name__}")
    return data


def _stored(out: Path) -> dict[str, Any]:
    return _drop_redacted(_raw_config(out))  # type: ignore[no-any-return]


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


def adopt_sizes(out: Path, cfg: Config) -> None:
    """A resume that gives no split size keeps the run's own (settled from its data when it began,
    and recorded in its config.json), so the same data is split the same way."""
    b = cfg.benchmark
    if any(size is not None for size in (b.train_size, b.val_size, b.test_size)):
        return
    stored = _stored(out).get("benchmark")
    if isinstance(stored, dict):
        sizes = [stored.get(key) for key in ("train_size", "val_size", "test_size")]
        if all(isinstance(size, int) for size in sizes):
            b.train_size, b.val_size, b.test_size = sizes


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
        shown = ", ".join(
            f"{k} ({stored.get(k)!r} -> {current.get(k)!r}){_HINTS.get(k, '')}" for k in changed[:3]
        )
        raise UserError(
            f"{out}: cannot resume with a different config: {shown}; resume without --config/--set "
            f"(and with --no-cache only if the run had it), or start a new run with another --out"
        )


def check_objects(out: Path, given: Mapping[str, str], notify: Callable[[str], None]) -> None:
    """Refuse to resume a run trained with strategies handed in as Python objects (objects.json,
    by label: loop/custom_strategies.py) without the same ones, or with objects it was not trained with. The
    folder records an object's class, not its settings: that the same settings are handed in
    again is the caller's to keep, and `notify` says so."""
    path = out / RunFiles.OBJECTS
    recorded = _json_file(path) if path.is_file() else {}
    if not (isinstance(recorded, dict) and all(isinstance(v, str) for v in recorded.values())):
        raise _damaged(path, "expected an object of argument -> label")
    if recorded == dict(given):
        if given:
            names = ", ".join(f"{k}={v}" for k, v in sorted(given.items()))
            notify(f"{out}: resuming with {names}: the run folder names each class, not its settings")
        return
    arg = sorted(k for k in {*recorded, *given} if recorded.get(k) != given.get(k))[0]
    was, now = recorded.get(arg), given.get(arg)
    if now is None:
        how = (
            f"it trained with {arg}={was}, which its config cannot name; resume it from Python: "
            f"skillgrad.train(..., {arg}=<the same object>, resume=True)"
        )
    elif was is None:
        how = f"it did not train with {arg}= an object ({now} given); resume it without {arg}="
    else:
        how = f"it trained with {arg}={was}, not {now}; hand in the same {arg}"
    raise UserError(f"{out}: cannot resume: {how}")


# ---------------------------------------------------------------------------------------------
# what resume reads, checked before anything changes

_FIX = "start a new run with another --out (the call cache replays the calls this run already paid for)"


def _damaged(path: Path, what: str) -> UserError:
    return UserError(f"{path}: {what}; the run folder is damaged: {_FIX}")


def _json_file(path: Path) -> Any:
    try:
        return json.loads(path.read_bytes().decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise _damaged(path, f"not valid UTF-8 JSON ({reason})") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot be read ({exc.strerror}); check its permissions") from None


class _HistoryRow(BaseModel):
    """What resume needs of a history.jsonl line (the report reads the rest)."""

    model_config = ConfigDict(extra="allow")
    step: NonNegativeInt


@dataclass(frozen=True)
class Checkpoint:
    state: TrainState
    ledger: dict[str, Any]  # as state.json holds it (validated)


def _history_steps(out: Path) -> list[int]:
    path = out / RunFiles.HISTORY
    rows = RunDir(out).read_history(repair=False)
    steps = []
    for number, row in enumerate(rows, 1):
        try:
            steps.append(_HistoryRow.model_validate(row).step)
        except ValidationError as exc:
            raise _damaged(path, f"line {number}: {describe_validation(exc)}") from None
    return steps


def _checkpoint(out: Path, steps: list[int]) -> Checkpoint | None:
    path = out / RunFiles.STATE
    if not path.exists():
        if steps:
            raise _damaged(path, f"missing, but history.jsonl records {len(steps)} step(s)")
        return None  # the baseline never finished: the run starts over
    data = _json_file(path)
    try:
        ledger = data.pop("ledger", {}) if isinstance(data, dict) else {}
        ledger_record(ledger)
        state = read_state(data)
    except (StateError, LedgerFileError) as exc:
        raise _damaged(path, str(exc)) from None
    if state.step and state.step not in steps:
        last = f"its last step is {max(steps)}" if steps else "it records no step"
        raise _damaged(path, f"step {state.step} is not in history.jsonl ({last})")
    for field, version in (("version", state.version), ("best_version", state.best_version)):
        skill = out / RunFiles.SKILLS / version_name(version)
        if not (skill.with_suffix(".md").is_file() or skill.is_dir()):
            raise _damaged(path, f"{field} {version} names {skill}(.md), which is missing")
    return Checkpoint(state, ledger)


def _check_journal(out: Path, checkpoint: Checkpoint | None) -> None:
    path = out / RunFiles.PAID
    try:
        lines = PaidJournal(path).check()
    except LedgerFileError as exc:
        raise _damaged(path, str(exc)) from None
    mark = checkpoint.ledger.get("journal_mark") if checkpoint else None
    if isinstance(mark, int) and mark > lines:
        raise _damaged(
            out / RunFiles.STATE, f"ledger.journal_mark {mark} is past the {lines} lines of {path}"
        )


def _check_task_indexes(out: Path) -> None:
    for root in (out / RunFiles.STEPS, out / RunFiles.TEST):
        for index in sorted(root.rglob(f"*{RunFiles.TASK_INDEX}")) if root.is_dir() else []:
            try:
                read_task_index(index)
            except ValueError as exc:
                raise _damaged(index, f"not a list of task folders ({exc})") from None


def check_resumable(out: Path) -> Checkpoint | None:
    """Every file a resume reads, validated and checked against the others; changes nothing.
    The checkpoint (None: the baseline never finished), or UserError naming the damaged file."""
    steps = _history_steps(out)
    checkpoint = _checkpoint(out, steps)
    _check_journal(out, checkpoint)
    _check_task_indexes(out)
    return checkpoint


def check_part(out: Path) -> TrainState | None:
    """A part's run folder inside a run's (optimizer.target: both: its `description/`): its history,
    state and rollout-set indexes checked as a run's are (its ledger and paid journal are the
    run's). Its state (None: its baseline never finished), or UserError naming the damaged file."""
    if not out.is_dir():
        return None
    checkpoint = _checkpoint(out, _history_steps(out))
    _check_task_indexes(out)
    return checkpoint.state if checkpoint else None


def check_credentials(out: Path, cfg: Config, environ: Mapping[str, str]) -> None:
    """A key the run's config file gave is never stored in the run folder. A harness resumed
    without it would fail every task ("Not logged in") or run on the CLI's own login; a chat
    backend without a key refuses to start, or its server answers the first call with a 401 (one
    line either way). UserError saying what to pass, for a harness role."""
    model = _raw_config(out).get("model")
    model = model if isinstance(model, dict) else {}
    for role in ("optimizer", "target"):
        spec = spec_for(cfg.model.backend_for(role))
        given = next((k for k in (f"{role}_api_key", "api_key") if model.get(k) is not None), None)
        key_env = spec.key_env
        if not spec.harness or not key_env or given is None or model[given] != REDACTED_SECRET:
            continue
        if not cfg.model.api_key_for(role) and not environ.get(key_env):
            raise UserError(
                f"{out}: the run's config file gave model.{given} ({role} role), which is never stored in "
                f"the run folder; to resume, export {key_env}, or pass that file again (with the run's "
                f"other flags): skillgrad train --resume {out} --config FILE"
            )


def load_checkpoint(
    out: Path, cfg: Config, journal: PaidJournal | None = None
) -> tuple[TrainState | None, Ledger]:
    """The state after the last completed step (None: the baseline never finished) and the
    ledger, with the journal's calls paid since that checkpoint added (see skillgrad.budget);
    history.jsonl is cut back to that step, its torn tail repaired. Everything read is checked
    first (`check_resumable`), so a damaged folder is refused before this changes anything."""
    checkpoint = check_resumable(out)
    run = RunDir(out)
    if checkpoint is None:
        ledger = Ledger(cfg.budget, journal)
        ledger.recover(0)
        return None, ledger
    ledger = Ledger.from_json(checkpoint.ledger, cfg.budget, journal)
    state = checkpoint.state
    run.keep_history_to(state.step)
    # A kill while best_skill/ was being swapped can leave it missing: skills/ is the record.
    run.write_best_skill(run.read_skill(state.best_version))
    return state, ledger


class _TestScores(BaseModel):
    model_config = ConfigDict(extra="allow")
    baseline: float
    best: float


class _FinishedSummary(BaseModel):
    """What the line printed for a finished run reads from its summary.json."""

    model_config = ConfigDict(extra="allow")
    stopped: str
    baseline_val_score: float
    best_val_score: float
    accepted: NonNegativeInt
    rejected: NonNegativeInt
    skipped: NonNegativeInt = 0
    test: _TestScores | None = None


def finished_summary(out: Path) -> dict[str, Any] | None:
    """The run's summary when the run is over (nothing is left to resume), else None."""
    path = out / RunFiles.SUMMARY
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return None  # no summary (killed), or torn: resume re-does only what is missing
    if not isinstance(summary, dict) or summary.get("stopped") in UNFINISHED_STOPS:
        return None
    try:
        _FinishedSummary.model_validate(summary)
    except ValidationError as exc:
        raise _damaged(path, f"a finished run's summary with {describe_validation(exc)}") from None
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
