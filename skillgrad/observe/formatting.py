"""The words every observer of a run uses for its events (the terminal, a CI log, train.log):
one line per event, and the scores, token counts, costs and usage inside it.

Usage semantics (as the trainer emits them): `step_end.usage` and `run_end.usage` are the run's
totals so far by role, `{role: Usage-json}`; `step_end.step_usage` is what that step alone cost,
in the same shape.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from skillgrad.loop.records import StepEnd
from skillgrad.values import Usage


def shown_path(path: Path) -> Path:
    """A run folder as the user would type it: relative to the current folder when inside it (the
    API makes run folders absolute, so that a call's code may change folder)."""
    cwd = Path.cwd()
    return path.relative_to(cwd) if path.is_absolute() and path.is_relative_to(cwd) else path


def fmt_score(value: Any) -> str:
    return "-" if value is None else f"{float(value):.3f}"


def fmt_tokens(n: int) -> str:
    if n >= 1_000_000:
        return f"{n / 1_000_000:.2f}M"
    return f"{n / 1000:.1f}k" if n >= 1000 else str(n)


def fmt_cost(value: float | None) -> str:
    return "$?" if value is None else f"${value:.4f}"


def usage_by_role(raw: Any) -> dict[str, Usage]:
    """An event's `{role: Usage-json}` -> `{role: Usage}` (anything else: no usage)."""
    if not isinstance(raw, dict):
        return {}
    return {role: Usage.from_json(u) for role, u in raw.items() if isinstance(u, dict)}


def fmt_usage(usage: dict[str, Usage]) -> str:
    parts = [
        f"{role} {fmt_tokens(u.total_tokens)} tok {u.calls} calls {fmt_cost(u.cost_usd)}"
        for role, u in sorted(usage.items())
    ]
    return "; ".join(parts) if parts else "no usage"


def _where(fields: dict[str, Any]) -> str:
    step, epoch = fields.get("step"), fields.get("epoch")
    if step is None:
        return ""
    return f"step {step}" + (f" (epoch {epoch})" if epoch is not None else "") + " "


def describe(kind: str, fields: dict[str, Any]) -> str:
    """One human-readable line for one event (no timestamp)."""
    f = fields
    if kind == "run_start":
        return (
            f"run start: {f.get('epochs')} epochs x {f.get('steps_per_epoch')} steps "
            f"({f.get('total_steps')} steps); optimizer={f.get('optimizer_backend')} "
            f"target={f.get('target_backend')}; out={f.get('out')}"
        )
    if kind == "stage_start":
        return f"{_where(f)}{f.get('stage')}: started, {f.get('total')} to do"
    if kind == "task_done":
        task = "" if f.get("task_id") is None else f" task {f['task_id']}"
        score = "" if f.get("score") is None else f" score {fmt_score(f['score'])}"
        return f"{_where(f)}{f.get('stage')}: {f.get('done')}/{f.get('total')}{task}{score}"
    if kind == "stage_end":
        mean = f.get("mean_score")
        tail = "" if mean is None else f", mean score {fmt_score(mean)}"
        return f"{_where(f)}{f.get('stage')}: done{tail}"
    if kind == "step_end":
        end = StepEnd.from_json(f)
        return (
            f"{_where(f)}{end.action.upper()}: val {fmt_score(end.val_score)} "
            f"vs current {fmt_score(end.current_score)}, best {fmt_score(end.best_score)}, "
            f"{end.edits_applied} edits applied; "
            f"step cost: {fmt_usage(usage_by_role(end.step_usage))}; "
            f"run total: {fmt_usage(usage_by_role(end.usage))}"
        )
    if kind == "run_end":
        return (
            f"run end ({f.get('stopped')}): best {fmt_score(f.get('best_score'))}, "
            f"baseline {fmt_score(f.get('baseline_score'))}; "
            f"run total: {fmt_usage(usage_by_role(f.get('usage')))}"
        )
    if kind == "message":
        return str(f.get("text", ""))
    extra = " ".join(f"{k}={v}" for k, v in f.items() if k != "time")
    return f"{kind}: {extra}"


def stamp(fields: dict[str, Any]) -> str:
    return f"[{float(fields.get('time', 0.0)):8.1f}s]"
