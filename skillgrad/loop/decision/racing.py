"""Validation in waves (racing): run a candidate on the val items wave by wave and stop as soon
as no outcome of the items still to run could make the gate accept it.

The incumbent's per-item results are known, so the gate can bound that (`Gate.can_pass`; for the
strict gate, full marks on the rest is exact): racing rejects only candidates the full validation
would reject, only sooner, and accepts exactly the same ones (an accept always needs every item).
`full` is racing with one wave.

Which items run first, and how many: a candidate can only gain where the incumbent lost, so the
incumbent's weakest items go first (`race_order`). A wave is the shortest run of items whose
failure alone would already reject the candidate (for the strict gate: as many items as the
incumbent failed), and the validation splits only when that wave holds at most a third of what
is left (`next_wave`). A split costs every candidate that survives it one more round in a row, so
it has to be able to save at least twice the calls it runs; and the fewer items the incumbent
fails, the likelier a candidate is to fix none of them. Such a candidate is then out after those
items.

An errored run (the agent crashed, timed out or could not reach its model, after the runner's
`train.rollout_retries`) is no outcome: it is counted in `missing`, never added to the results,
so a memo of the results never holds it as a score and the next validation of the skill runs it
again. The gates compare what each side has. Racing bounds assume every run still to make
returns an outcome, so once a run is missing the validation goes on without racing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from skillgrad.loop.decision.gate import Gate, ValResults
from skillgrad.values import Rollout, Task


@dataclass(frozen=True)
class ValUnit:
    """One validation call: a task and which of its repeats this is (0-based)."""

    task: Task
    repeat: int


@dataclass
class Validation:
    results: ValResults  # every outcome known for the skill: reused ones and new ones
    calls: int  # rollouts this validation ran (0: everything was known)
    waves: int  # waves that ran at least one rollout
    raced_out: bool  # stopped early: no outcome of the remaining items could pass the gate
    # item -> the repeats (0-based) whose agent failed: no outcome, to run again next time
    missing: dict[str, list[int]] = field(default_factory=dict)

    @property
    def missing_count(self) -> int:
        return sum(len(repeats) for repeats in self.missing.values())


@dataclass(frozen=True)
class Race:
    """What racing needs: the gate, the incumbent's per-item results, and at most how many waves."""

    gate: Gate
    incumbent: ValResults
    waves: int


def race_order(tasks: list[Task], incumbent: ValResults) -> list[Task]:
    """`tasks` with the incumbent's weakest items first (its mean over repeats; stable)."""

    def mean(task: Task) -> float:
        scores = incumbent.get(task.id) or [0.0]
        return sum(scores) / len(scores)

    return sorted(tasks, key=mean)


def next_wave(
    pending: list[Task], results: ValResults, repeats: int, race: Race, waves_left: int
) -> list[Task]:
    """The first items of `pending` to run now: the shortest prefix whose failure on every repeat
    would make the gate reject the candidate, if that prefix is at most a third of `pending` and
    another wave may follow; otherwise all of `pending`. (For a monotone gate "this prefix
    failed" rejects for every longer prefix too, so the bisection finds the shortest; for any
    gate, the prefix it returns is one whose failure rejects.)"""
    limit = len(pending) // 3
    if waves_left <= 1 or limit < 1:
        return pending

    def rejects_if_failed(count: int) -> bool:
        worst = {item: list(scores) for item, scores in results.items()}
        for task in pending[:count]:
            worst[task.id] = worst[task.id] + [0.0] * (repeats - len(worst[task.id]))
        return not race.gate.can_pass(worst, race.incumbent)

    if not rejects_if_failed(limit):
        return pending
    low, high = 1, limit
    while low < high:
        middle = (low + high) // 2
        if rejects_if_failed(middle):
            high = middle
        else:
            low = middle + 1
    return pending[:low]


def validate(
    tasks: list[Task],
    repeats: int,
    known: ValResults,
    run_units: Callable[[list[ValUnit]], list[Rollout]],
    race: Race | None = None,
    before_wave: Callable[[ValResults, bool], None] | None = None,
    known_missing: Mapping[str, Sequence[int]] | None = None,
) -> Validation:
    """Every (task, repeat) without an outcome in `known` is run by `run_units` (one call per
    wave): the repeats `known_missing` names (their agent failed before: run again, as the same
    call) and those past what `known` holds. With a `race`, in its order and waves, a wave starts
    only while the candidate can still pass. `before_wave` sees the results so far, and whether
    the wave is the last, before each wave."""
    results: ValResults = {t.id: list(known.get(t.id, []))[:repeats] for t in tasks}
    todo_of = {t.id: _to_run(len(results[t.id]), (known_missing or {}).get(t.id, ()), repeats) for t in tasks}
    order = race_order(tasks, race.incumbent) if race is not None else tasks
    pending = [t for t in order if todo_of[t.id]]
    calls = ran_waves = 0
    missing: dict[str, list[int]] = {}
    while pending:
        if race is not None and missing:
            race = None  # its bounds hold only while every run returns an outcome
        if race is not None and not race.gate.can_pass(results, race.incumbent):
            return Validation(_known_only(results), calls, ran_waves, raced_out=True)
        wave = next_wave(pending, results, repeats, race, race.waves - ran_waves) if race else pending
        if before_wave is not None:
            before_wave(results, len(wave) == len(pending))
        todo = [ValUnit(t, r) for t in wave for r in todo_of[t.id]]
        for unit, rollout in zip(todo, run_units(todo), strict=True):
            if rollout.result.is_error:
                missing.setdefault(unit.task.id, []).append(unit.repeat)
            else:
                results[unit.task.id].append(rollout.score.value)
        calls += len(todo)
        ran_waves += 1
        pending = pending[len(wave) :]
    return Validation(results, calls, ran_waves, raced_out=False, missing=missing)


def _to_run(have: int, failed: Sequence[int], repeats: int) -> list[int]:
    """The repeat numbers of an item still to run: those that failed, then those never run."""
    again = sorted({r for r in failed if 0 <= r < repeats})
    return [*again, *range(have + len(again), repeats)][: max(0, repeats - have)]


def _known_only(results: ValResults) -> ValResults:
    return {item: scores for item, scores in results.items() if scores}
