"""Turns loaded runs into the values the templates render: facts, charts, diffs, task tables, usage."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from skillgrad.budget import Bucket
from skillgrad.loop.decision.judge import RacedOut
from skillgrad.report import usage as ledger
from skillgrad.report.candidate_tree import search_view
from skillgrad.report.chart import bar_chart, score_chart
from skillgrad.report.data import RolloutSet, Run, TaskRollout
from skillgrad.report.diff import SkillDiff, skill_diff
from skillgrad.report.examples import examples_view
from skillgrad.report.package_diff import one_text, version_diffs, version_sizes
from skillgrad.report.reflections import reflection_rows
from skillgrad.report.trigger_rates import activation_view


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


# ---------------------------------------------------------------------------------------------
# derived run values (summary first, then whatever the folder still tells)


def baseline_score(run: Run) -> float | None:
    value = _num(run.summary.get("baseline_val_score"))
    if value is None and (rs := run.set_for("val", step=0)) is not None:
        value = rs.mean
    return value


def best_step(run: Run) -> int:
    step = run.summary.get("best_step")
    if isinstance(step, int):
        return step
    best, at = baseline_score(run), 0
    for row in run.history:
        score = _num(row.get("val_score"))
        if row.get("action") == "accepted" and score is not None and (best is None or score > best):
            best, at = score, int(row.get("step", 0))
    return at


def best_score(run: Run) -> float | None:
    value = _num(run.summary.get("best_val_score"))
    if value is None:
        scores = [
            s
            for s in [baseline_score(run), *(_num(r.get("best_score")) for r in run.history)]
            if s is not None
        ]
        value = max(scores) if scores else None
    return value


def best_version(run: Run) -> str | None:
    version = run.summary.get("best_version")
    if isinstance(version, str):
        return version
    step = best_step(run)
    return (
        "v0000" if step == 0 else next((r.get("version") for r in run.history if r.get("step") == step), None)
    )


def test_scores(run: Run) -> tuple[float | None, float | None]:
    test = run.summary.get("test")
    if isinstance(test, dict):
        return _num(test.get("baseline")), _num(test.get("best"))
    return None, None


# ---------------------------------------------------------------------------------------------
# sections


@dataclass
class StepRow:
    step: int
    epoch: Any
    action: str
    val_score: float | None
    current_score: float | None
    best_score: float | None
    learning_rate: Any
    version: str | None
    cached: bool
    edits: list[dict[str, Any]]
    train_score: float | None
    usage: Bucket
    dropped: dict[str, int]  # proposed edits dropped before selection, by reason
    skip_reason: str | None = None  # why the candidate was not validated (a failed check)
    raced: RacedOut | None = None  # a raced-out candidate: what it has instead of a val score
    missing: int = 0  # val runs whose agent failed (left out)


def _dropped(row: dict[str, Any]) -> dict[str, int]:
    counts = row.get("dropped")
    if not isinstance(counts, dict):
        return {}
    return {str(k): v for k, v in counts.items() if isinstance(v, int) and not isinstance(v, bool) and v > 0}


def step_rows(run: Run) -> list[StepRow]:
    rows = []
    for h in run.history:
        edits = [e for e in h.get("edits") or [] if isinstance(e, dict)]
        rows.append(
            StepRow(
                int(h.get("step", 0)),
                h.get("epoch"),
                str(h.get("action", "?")),
                _num(h.get("val_score")),
                _num(h.get("current_score")),
                _num(h.get("best_score")),
                h.get("learning_rate"),
                h.get("version"),
                bool(h.get("cached")),
                edits,
                _num(h.get("train_score")),
                ledger.step_usage(h),
                _dropped(h),
                str(h["skip_reason"]) if h.get("skip_reason") else None,
                RacedOut.from_json(h.get("raced_out")),
                h["missing"] if isinstance(h.get("missing"), int) else 0,
            )
        )
    return rows


def skill_diffs(run: Run) -> list[SkillDiff]:
    """Initial -> best first, then one diff per accepted version against the version it replaced."""
    versions = sorted(run.skills)
    diffs: list[SkillDiff] = []
    initial = run.skills.get("v0000", "")
    best_v = best_version(run)
    best_text = run.best_skill if run.best_skill is not None else run.skills.get(best_v or "", None)
    if best_text is not None and run.skills:
        diffs += version_diffs(f"initial → best ({best_v})", "v0000", initial, best_v or "best", best_text)
    step_of = {r.get("version"): r.get("step") for r in run.history if r.get("version")}
    for prev, cur in zip(versions, versions[1:], strict=False):
        step = step_of.get(cur)
        title = f"step {step}: {prev} → {cur}" if step is not None else f"{prev} → {cur}"
        diffs += version_diffs(title, prev, run.skills[prev], cur, run.skills[cur])
    return diffs


@dataclass
class TaskPair:
    task_id: str
    question: str
    a: Any  # TaskRollout | None
    b: Any

    @property
    def delta(self) -> float | None:
        if self.a is None or self.b is None or self.a.score is None or self.b.score is None:
            return None
        return float(self.b.score - self.a.score)


def task_key(task: TaskRollout) -> str:
    """What a task is, whatever its id: an id only names a position in a split, so two runs with
    other seeds or data give the same id to different tasks (a task without text keeps its id)."""
    if not (task.question or task.context):
        return json.dumps(["id", task.task_id])
    return json.dumps([task.question, task.context, sorted(task.expected)], ensure_ascii=False)


def pair_tasks(a: RolloutSet | None, b: RolloutSet | None) -> list[TaskPair]:
    """The tasks of two sets paired by content; a task only one side ran is paired with None."""
    by_a = {task_key(t): t for t in a.tasks} if a else {}
    by_b = {task_key(t): t for t in b.tasks} if b else {}
    pairs = []
    for key in dict.fromkeys([*by_a, *by_b]):
        ta, tb = by_a.get(key), by_b.get(key)
        ids = list(dict.fromkeys(t.task_id for t in (ta, tb) if t is not None))
        pairs.append(TaskPair(" / ".join(ids), (ta or tb).question, ta, tb))  # type: ignore[union-attr]
    return pairs


def pairing_note(pairs: list[TaskPair]) -> str:
    """How the pairs were made, and what could not be paired."""
    both = sum(1 for p in pairs if p.a is not None and p.b is not None)
    only_a = sum(1 for p in pairs if p.b is None)
    only_b = sum(1 for p in pairs if p.a is None)
    if pairs and not both:
        return (
            f"the two runs share no task ({only_a} tasks in A, {only_b} in B: other seeds or data), "
            "so there is nothing to compare task by task; compare the scores above instead"
        )
    note = f"{both} tasks ran in both runs, paired by their content (question, context, expected answer)"
    if only_a or only_b:
        note += f"; {only_a} only in A, {only_b} only in B"
    return note


def task_comparisons(run: Run) -> list[tuple[str, str, str, list[TaskPair]]]:
    """(title, label a, label b, pairs): baseline vs best skill on val and, if run, on test."""
    out = []
    best_v, step = best_version(run), best_step(run)
    base_val, best_val = run.set_for("val", step=0), run.set_for("val", step=step)
    if base_val is not None and best_val is not None and step != 0:
        out.append(
            (
                f"validation: v0000 vs best ({best_v}, step {step})",
                "v0000",
                best_v or "best",
                pair_tasks(base_val, best_val),
            )
        )
    base_test, best_test = run.set_for("test", version="v0000"), run.set_for("test", version=best_v)
    if base_test is not None and best_test is not None and best_v != "v0000":
        out.append(
            (f"test: v0000 vs best ({best_v})", "v0000", best_v or "best", pair_tasks(base_test, best_test))
        )
    return out


def ordered_sets(run: Run) -> list[tuple[RolloutSet, bool]]:
    """Rollout sets, most telling first, each with whether it starts expanded."""
    best_v, step = best_version(run), best_step(run)

    def rank(rs: RolloutSet) -> tuple[int, int]:
        if rs.split == "test":
            return (0, 0 if rs.version == best_v else 1)
        if rs.step is None:  # eval folder
            return (0, 0)
        return (1 if rs.split == "val" else 2, rs.step or 0)

    sets = sorted(run.rollout_sets, key=rank)
    open_key = next((rs.key for rs in sets if rs.split == "test" and rs.version == best_v), None)
    open_key = open_key or next((rs.key for rs in sets if rs.split == "val" and rs.step == step), None)
    open_key = open_key or (sets[0].key if sets else None)
    return [(rs, rs.key == open_key) for rs in sets]


def facts(run: Run) -> list[tuple[str, str]]:
    if run.eval is not None and not run.summary:
        return eval_facts(run, run.eval)
    s, c = run.summary, run.config
    model = c.get("model") or {}
    total = ledger.total(run)
    return [
        ("benchmark", _benchmark(c)),
        (
            "optimizer",
            f"{s.get('optimizer_backend') or model.get('optimizer_backend') or '?'} · "
            f"{s.get('optimizer_model') or model.get('optimizer_model') or 'default'}",
        ),
        ("target", _target(s, model)),
        (
            "steps",
            f"{s.get('steps', len(run.history))} ({s.get('accepted', '?')} accepted, "
            f"{s.get('rejected', '?')} rejected, {s.get('skipped', '?')} skipped)",
        ),
        ("stopped", str(s.get("stopped", "in progress" if not s else "?")) + _reason(s)),
        ("agent errors", "{} val, {} test runs failed: left out, not zeros".format(*run.missing_runs)),
        ("wall time", _wall(s)),
        ("tokens", f"{total.total_tokens:,} ({total.calls:,} calls)"),
        ("calls · rounds", _calls_and_rounds(s, total.calls)),
        ("cost", ledger.fmt_cost(total)),
    ]


def eval_facts(run: Run, ev: dict[str, Any]) -> list[tuple[str, str]]:
    """An eval folder: one skill scored on one split by the target alone (no optimizer, no steps)."""
    total = ledger.total(run)
    mean = _num(ev.get("mean_score"))
    shown = "?" if mean is None else f"{mean:.3f}"
    errors = f", {ev['errors']} failed to run" if ev.get("errors") else ""
    return [
        (
            "eval",
            f"{ev.get('skill', '?')} on {ev.get('split', '?')}: mean "
            f"{shown}, {ev.get('passed', '?')}/{ev.get('n', '?')} passed{errors}",
        ),
        ("benchmark", _benchmark(run.config)),
        ("target", _target(ev, run.config.get("model") or {})),
        ("status", f"error: {ev['error']}" if ev.get("error") else "finished"),
        ("wall time", _wall(ev)),
        ("tokens", f"{total.total_tokens:,} ({total.calls:,} calls)"),
        ("cost", ledger.fmt_cost(total)),
    ]


def _benchmark(config: dict[str, Any]) -> str:
    bench = config.get("benchmark") or {}
    return f"{bench.get('name', '?')}" + (f" ({bench['data']})" if bench.get("data") else "")


def _target(record: dict[str, Any], model: dict[str, Any]) -> str:
    return (
        f"{record.get('target_backend') or model.get('target_backend') or '?'} · "
        f"{record.get('target_model') or model.get('target_model') or 'default'}"
    )


def _wall(record: dict[str, Any]) -> str:
    wall = _num(record.get("wall_s"))
    return "?" if wall is None else f"{wall / 60:.1f} min"


def _reason(summary: dict[str, Any]) -> str:
    reason = summary.get("stop_reason")
    return f": {reason}" if isinstance(reason, str) and reason else ""


def _calls_and_rounds(summary: dict[str, Any], calls: int) -> str:
    """Paid calls and the sequential rounds they took (a round: calls that had to wait for the
    previous ones; at a fixed latency L the run lasts at least L x rounds)."""
    rounds = summary.get("rounds")
    if not isinstance(rounds, int):
        return f"{calls:,} calls"
    per_round = f", {calls / rounds:.1f} calls per round" if rounds else ""
    return f"{calls:,} calls in {rounds:,} sequential rounds{per_round}"


# ---------------------------------------------------------------------------------------------
# page contexts


def run_context(run: Run) -> dict[str, Any]:
    base, best = baseline_score(run), best_score(run)
    test_base, test_best = test_scores(run)
    return {
        "run": run,
        "title": f"skillgrad · {run.name}",
        "facts": facts(run),
        "chart": score_chart([(run.name, base, run.history)]) if run.history or base is not None else None,
        "bars": bar_chart(
            [
                ("val · baseline", base, "base"),
                ("val · best", best, "best"),
                ("test · baseline", test_base, "base"),
                ("test · best", test_best, "best"),
            ]
        ),
        "steps": step_rows(run),
        "reflections": reflection_rows(run.path, run.warnings),
        "diffs": skill_diffs(run),
        "examples": examples_view(run, best_version(run)),  # the best skill's, by train task
        "sizes": version_sizes(run.skills, (run.config.get("skill") or {}).get("max_chars")),
        "comparisons": task_comparisons(run),
        "activation": activation_view(run),
        "sets": ordered_sets(run),
        "by_role": ledger.by_role(run),
        "by_stage": ledger.by_stage(run),
        "total": ledger.total(run),
        "config_json": json.dumps(run.config, indent=2, ensure_ascii=False),
        "search": search_view(run),  # the frontier search's tree and win table (None: greedy)
    }


def _compare_set(run: Run, split: str) -> RolloutSet | None:
    if split == "test":
        return run.set_for("test", version=best_version(run))
    return run.set_for("val", step=best_step(run))


def compare_context(a: Run, b: Run) -> dict[str, Any]:
    split = "test" if _compare_set(a, "test") and _compare_set(b, "test") else "val"
    pairs = pair_tasks(_compare_set(a, split), _compare_set(b, split))
    fa, fb = dict(facts(a)), dict(facts(b))
    scores = [
        ("val · baseline", baseline_score(a), baseline_score(b)),
        ("val · best", best_score(a), best_score(b)),
        ("test · baseline", test_scores(a)[0], test_scores(b)[0]),
        ("test · best", test_scores(a)[1], test_scores(b)[1]),
    ]
    a_best = one_text(a.best_skill or a.skills.get(best_version(a) or "", ""))
    b_best = one_text(b.best_skill or b.skills.get(best_version(b) or "", ""))
    return {
        "a": a,
        "b": b,
        "title": f"skillgrad · {a.name} vs {b.name}",
        "facts": [(k, fa.get(k, ""), fb.get(k, "")) for k in dict.fromkeys([*fa, *fb])],
        "scores": scores,
        "chart": score_chart(
            [(a.name, baseline_score(a), a.history), (b.name, baseline_score(b), b.history)]
        ),
        "bars": bar_chart(
            [
                (f"{label} · {run_label}", value, css)
                for label, va, vb in scores
                for run_label, value, css in (("A", va, "a"), ("B", vb, "b"))
            ]
        ),
        "diff": skill_diff(
            f"best skill: {a.name} → {b.name}", f"A {best_version(a)}", a_best, f"B {best_version(b)}", b_best
        ),
        "split": split,
        # runs that share no task are not set side by side (the note says why)
        "pairs": pairs if any(p.a is not None and p.b is not None for p in pairs) else [],
        "pairing": pairing_note(pairs),
    }
