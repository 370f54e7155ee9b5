"""The analyst's view of a whole step: its misses counted by kind, and contrasts.

A minibatch of six shows six answers; the rule behind "expected X, got Y" shows in what the misses
of the whole step have in common (five of eight failed answers wrap the expected span in a
sentence, 11 words where 2 were expected). `misses_section` counts the step's answers by `kinds.miss_of`;
`pick_contrasts` pairs a failed task of the prompt with a passed task of the step that expects
an answer of the same shape, so the analyst sees what passing looks like beside the miss.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from skillgrad.loop.kinds import CORRECT, Miss, miss_of, task_shape, words
from skillgrad.templates import render
from skillgrad.values import Rollout

PROMPTS = "skillgrad.loop"
SHOWN_CHARS = 160  # a question or answer quoted in a contrast (the task blocks show them whole)


def _mean_words(texts: list[str]) -> float:
    return sum(len(words(t)) for t in texts) / len(texts) if texts else 0.0


def _refs(indexes: list[int]) -> str:
    return f"task {indexes[0]}" if len(indexes) == 1 else "tasks " + ", ".join(map(str, indexes))


def misses_section(batch: list[Rollout], shown: list[Rollout]) -> str:
    """The step's answers counted by kind (most common miss first), with answer lengths; which
    of the prompt's tasks (1-based) each kind holds. "" when nothing failed or nothing is known."""
    kinds = [(r, miss_of(r)) for r in batch]
    misses = Counter(m.kind for _, m in kinds if m.kind != CORRECT)
    if not misses:
        return ""
    number = {id(r): i for i, r in enumerate(shown, 1)}
    lines = []
    for kind, count in [*misses.most_common(), (CORRECT, len(batch) - misses.total())]:
        if not count:
            continue
        members = [r for r, m in kinds if m.kind == kind]
        given = _mean_words([r.result.answer for r in members])
        expected = _mean_words([r.task.answers[0] for r in members if r.task.answers])
        lengths = f"answers {given:.1f} words long on average"
        if any(r.task.answers for r in members):
            lengths += f", expected answers {expected:.1f}"
        here = sorted(number[id(r)] for r in members if id(r) in number)
        where = f"; {_refs(here)} above" if here else ""
        label = f"{count} failed: {kind}" if kind != CORRECT else f"{count} passed"
        lines.append(f"- {label} ({lengths}){where}")
    return render(PROMPTS, "analyst_census", total=len(batch), shown=len(shown), lines="\n".join(lines))


@dataclass(frozen=True)
class Contrast:
    """A failed task of the prompt beside a passed task of the step expecting the same shape."""

    shape: str
    passed: Rollout
    failed: Rollout
    miss: Miss


def pick_contrasts(shown: list[Rollout], batch: list[Rollout], limit: int) -> list[Contrast]:
    """Up to `limit` contrasts. Failed tasks of the step's most common kinds of miss come first,
    the lowest score first within a kind; each takes a passed task expecting an answer of the
    same shape, one of the prompt's own before another of the step, and a passed task is used
    again only when every other of its shape has been."""
    if limit <= 0:
        return []
    counts = Counter(miss_of(r).kind for r in batch)
    failed = [r for r in shown if not r.score.passed and r.task.answers]
    failed.sort(key=lambda r: (-counts[miss_of(r).kind], r.score.value))
    shown_ids = {id(r) for r in shown}
    passed = [r for r in batch if r.score.passed and r.task.answers]
    passed.sort(key=lambda r: id(r) not in shown_ids)  # stable: the prompt's own first
    used: Counter[int] = Counter()
    out: list[Contrast] = []
    for miss in failed:
        kind = task_shape(miss.task.answers)
        partners = [p for p in passed if task_shape(p.task.answers) == kind]
        if not partners:
            continue
        partner = min(partners, key=lambda p: used[id(p)])  # min keeps the first of the least used
        used[id(partner)] += 1
        out.append(Contrast(kind or "", partner, miss, miss_of(miss)))
        if len(out) == limit:
            break
    return out


def _quote(text: str) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= SHOWN_CHARS else flat[: SHOWN_CHARS - 3] + "...")


def _side(rollout: Rollout, number: dict[int, int]) -> str:
    where = f"task {number[id(rollout)]}" if id(rollout) in number else "a task of this step not shown above"
    return (
        f"{where}: {_quote(rollout.task.question)} answered {_quote(rollout.result.answer)}, "
        f"expected {_quote(rollout.task.answers[0])}"
    )


def contrasts_section(contrasts: list[Contrast], shown: list[Rollout]) -> str:
    """The contrasts as the analyst reads them; "" when there are none."""
    if not contrasts:
        return ""
    number = {id(r): i for i, r in enumerate(shown, 1)}
    pairs = "\n\n".join(
        render(
            PROMPTS,
            "analyst_contrast",
            shape=c.shape,
            passed=_side(c.passed, number),
            failed=_side(c.failed, number),
            miss=c.miss.detail,
        ).strip()
        for c in contrasts
    )
    return render(PROMPTS, "analyst_contrasts", pairs=pairs)
