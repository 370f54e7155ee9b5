"""The report's activation section (optimizer.target: description | both): each query's trigger rate
before and after, the confusion table (precision, recall, F1), and the description's diff.

Read from the run folder only: the trigger runs of the initial and the best description on the
test split (every repeat, `test/vNNNN` and `test/vNNNN-rK`), else their validation (the baseline's
and the accepting step's). A `both` run keeps its description part in `description/`. A run that
was interrupted, or trains the body only, has no such section (None)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from skillgrad.activation.description import own_description
from skillgrad.activation.metrics import Confusion
from skillgrad.activation.triggers import SHOULD
from skillgrad.errors import UserError
from skillgrad.report.data import RolloutSet, Run, TaskRollout, load_run
from skillgrad.report.diff import SkillDiff, skill_diff

PART = "description"  # where a `both` run keeps its description part
_REPEAT = re.compile(r"^(?P<base>.+?)(?:-r\d+)?$")


@dataclass
class QueryRow:
    query: str
    should: bool
    before: float | None  # trigger rate over the runs that did not fail
    after: float | None
    runs: str  # "loaded / runs" before and after, errors noted

    @property
    def changed(self) -> bool:
        return self.before is not None and self.after is not None and abs(self.after - self.before) > 1e-9


@dataclass
class ActivationView:
    source: str  # which runs the figures come from
    before_label: str
    after_label: str
    rows: list[QueryRow] = field(default_factory=list)
    before: Confusion | None = None
    after: Confusion | None = None
    diff: SkillDiff | None = None


@dataclass
class _Rates:
    loaded: int = 0
    runs: int = 0
    errors: int = 0

    def rate(self) -> float | None:
        return self.loaded / self.runs if self.runs else None

    def text(self) -> str:
        errors = f" ({self.errors} failed)" if self.errors else ""
        return f"{self.loaded}/{self.runs}{errors}"


def _should(task: TaskRollout) -> bool:
    return SHOULD in task.expected


def _rates(sets: list[RolloutSet]) -> dict[str, tuple[TaskRollout, _Rates]]:
    out: dict[str, tuple[TaskRollout, _Rates]] = {}
    for rs in sets:
        for task in rs.tasks:
            _, rates = out.setdefault(task.task_id, (task, _Rates()))
            if task.is_error or task.passed is None:
                rates.errors += 1
                continue
            rates.runs += 1
            rates.loaded += int(task.passed == _should(task))
    return out


def _confusion(rates: dict[str, tuple[TaskRollout, _Rates]]) -> Confusion | None:
    tp = fp = fn = tn = 0.0
    for task, r in rates.values():
        rate = r.rate()
        if rate is None:
            continue
        if _should(task):
            tp, fn = tp + rate, fn + 1 - rate
        else:
            fp, tn = fp + rate, tn + 1 - rate
    return Confusion(tp, fp, fn, tn) if rates else None


def _base(name: str) -> str:
    match = _REPEAT.match(name)
    return match.group("base") if match else name


def _sets(part: Run, version: str) -> tuple[str, list[RolloutSet]]:
    """(what they are, the sets) of `version`'s trigger runs: its test, else its validation."""
    tests = [rs for rs in part.rollout_sets if rs.split == "test" and _base(rs.version or "") == version]
    if tests:
        return "test", tests
    step = (
        0
        if version == "v0000"
        else next((int(h.get("step", 0)) for h in part.history if h.get("version") == version), None)
    )
    vals = [rs for rs in part.rollout_sets if rs.step == step and _base(rs.split) == "val"]
    return "val", vals


def _part(run: Run) -> Run | None:
    target = (run.config.get("optimizer") or {}).get("target")
    if target == "description":
        return run
    if target != "both":
        return None
    try:
        return load_run(run.path / PART)
    except UserError:
        return None


def _best_version(part: Run) -> str:
    kept = [h.get("version") for h in part.history if h.get("action") == "accepted" and h.get("version")]
    best = part.summary.get("best_version")
    return str(best) if isinstance(best, str) else str(kept[-1]) if kept else "v0000"


def activation_view(run: Run) -> ActivationView | None:
    part = _part(run)
    if part is None or "v0000" not in part.skills:
        return None
    best = _best_version(part)
    source, before_sets = _sets(part, "v0000")
    after_source, after_sets = _sets(part, best) if best != "v0000" else (source, [])
    before, after = _rates(before_sets), _rates(after_sets)
    rows = []
    for task_id in dict.fromkeys([*before, *after]):
        task = (before.get(task_id) or after[task_id])[0]
        b, a = before.get(task_id, (task, _Rates()))[1], after.get(task_id, (task, _Rates()))[1]
        runs = b.text() + (f" → {a.text()}" if after_sets else "")
        rows.append(QueryRow(task.question, _should(task), b.rate(), a.rate() if after_sets else None, runs))
    rows.sort(key=lambda r: (not r.should, r.query))
    initial = own_description(part.skills["v0000"]) or ""
    final = own_description(part.skills.get(best, part.skills["v0000"])) or ""
    shown = source if source == after_source else f"{source} (before), {after_source} (after)"
    return ActivationView(
        source=shown,
        before_label="v0000",
        after_label=best,
        rows=rows,
        before=_confusion(before),
        after=_confusion(after) if after_sets else None,
        diff=skill_diff(f"description: v0000 → {best}", "v0000", initial, best, final),
    )
