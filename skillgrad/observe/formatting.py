"""The words every observer of a run uses for its events (the terminal, a CI log, train.log):
one line per event, and the scores, token counts, costs, durations and usage inside it. Which of
those lines a log prints is `observe.lines`'s.

Usage semantics (as the trainer emits them): `step_end.usage` and `run_end.usage` are the run's
totals so far by role, `{role: Usage-json}`; `step_end.step_usage` is what that step alone cost,
in the same shape.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from skillgrad.loop.step_records import StepEnd
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


def fmt_seconds(value: float) -> str:
    """12.3s, 2m05s, 1h02m."""
    seconds = max(0.0, float(value))
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(round(seconds)), 60)
    return f"{minutes}m{secs:02d}s" if minutes < 60 else f"{minutes // 60}h{minutes % 60:02d}m"


# stages whose events carry no step of their own meaning (the baseline is "step 0", a final test
# pass and `skillgrad eval` run after or outside the steps): named without it
_STEPLESS = ("baseline", "test", "eval")


def stage_name(fields: dict[str, Any]) -> str:
    """A stage as the progress names it: `step 2 validate`, `baseline`, `test v0003 (best)`,
    `step 2 reflect (re-ask)`."""
    stage = str(fields.get("stage"))
    label = fields.get("label")
    if label:
        stage = f"{stage} {label}" if stage.split()[-1] == "test" else f"{stage} ({label})"
    step = fields.get("step")
    if step is None or str(fields.get("stage")).split()[-1] in _STEPLESS:
        return stage
    return f"step {step} {stage}"


def _unit(fields: dict[str, Any]) -> str:
    return "analyst calls" if str(fields.get("stage")).split()[-1] == "reflect" else "tasks"


def _eta(fields: dict[str, Any]) -> str:
    """`12.3s, about 20s left`: the stage's time so far and, from its own pace, what is left."""
    elapsed, done, total = fields.get("elapsed"), fields.get("done"), fields.get("total")
    if not isinstance(elapsed, int | float):
        return ""
    text = f"; {fmt_seconds(elapsed)}"
    if isinstance(done, int) and isinstance(total, int) and 0 < done < total:
        text += f", about {fmt_seconds(elapsed / done * (total - done))} left"
    return text


def _stage_end(f: dict[str, Any]) -> str:
    done, total = f.get("done"), f.get("total")
    counts = f"{done}/{total} {_unit(f)}" if done is not None and total is not None else ""
    took = f"in {fmt_seconds(f['seconds'])}" if isinstance(f.get("seconds"), int | float) else ""
    tail = [" ".join(part for part in (counts, took) if part)] if counts or took else []
    if f.get("failed"):
        tail.append(f"{f['failed']} failed")
    if f.get("mean_score") is not None:
        tail.append(f"mean score {fmt_score(f['mean_score'])}")
    if isinstance(f.get("edits"), int):
        tail.append(f"{f['edits']} edit(s) proposed")
    return ", ".join([f"{stage_name(f)}: done", *tail])


def _verdict(end: StepEnd) -> str:
    """What a step decided and why, in words."""
    current, best = fmt_score(end.current_score), fmt_score(end.best_score)
    if end.action == "skipped":
        return f"SKIPPED: {end.skip_reason or 'no candidate to validate'}"
    if end.raced_out is not None:
        r = end.raced_out
        return (
            f"REJECTED: raced out after {r.items}/{r.of} val items ({fmt_score(r.score)} on those; "
            f"at most {fmt_score(r.bound)} on all {r.of}, which cannot pass against current {current}), "
            f"best {best}"
        )
    made = f" {end.version}" if end.action == "accepted" and end.version else ""
    missing = f" ({end.missing} val run(s) whose agent failed left out)" if end.missing else ""
    held = "; held: those failed runs decide it, so its edits stay allowed" if end.held else ""
    val = f"val {fmt_score(end.val_score)}{missing} vs current {current}{held}"
    return f"{end.action.upper()}{made}: {val}, best {best}"


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
        return f"{stage_name(f)}: started, {f.get('total')} {_unit(f)}"
    if kind == "task_done":
        word = "" if _unit(f) == "analyst calls" else "task "  # a reflection is named by its minibatch
        task = "" if f.get("task_id") is None else f" {word}{f['task_id']}"
        score = "" if f.get("score") is None else f" score {fmt_score(f['score'])}"
        return f"{stage_name(f)}: {f.get('done')}/{f.get('total')}{task}{score}{_eta(f)}"
    if kind == "stage_end":
        return _stage_end(f)
    if kind == "step_end":
        end = StepEnd.from_json(f)
        epoch = f" (epoch {end.epoch})" if end.epoch is not None else ""
        applied = "" if end.action == "skipped" else f"; {end.edits_applied} edits applied"
        return (
            f"step {end.step}{epoch} {_verdict(end)}{applied}; "
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
