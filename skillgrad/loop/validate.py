"""Validation in waves (racing): run a candidate on the val items wave by wave and stop as soon
as even full marks on every item still to run could not make the gate accept it.

The incumbent's per-item results are known, so the bound is exact (see `gate.can_still_pass`):
racing rejects exactly the candidates the full validation would reject, only sooner, and accepts
exactly the same ones (an accept always needs every item). `full` is racing with one wave.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from skillgrad.loop.gate import Gate, ValResults, can_still_pass
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


def wave_plan(tasks: list[Task], waves: int) -> list[list[Task]]:
    """`tasks` in order, cut into `waves` near-equal consecutive waves (none empty)."""
    count = max(1, min(waves, len(tasks)))
    base, extra = divmod(len(tasks), count)
    plan, start = [], 0
    for index in range(count):
        size = base + (1 if index < extra else 0)
        plan.append(tasks[start : start + size])
        start += size
    return plan


def validate(
    tasks: list[Task],
    repeats: int,
    waves: int,
    known: ValResults,
    run_units: Callable[[list[ValUnit]], list[Rollout]],
    gate: Gate | None = None,
    incumbent: ValResults | None = None,
    before_wave: Callable[[ValResults], None] | None = None,
) -> Validation:
    """Every (task, repeat) not already in `known` is run by `run_units` (one call per wave);
    with a `gate` and an `incumbent`, a wave starts only while the candidate can still pass.
    `before_wave` sees the results so far before each wave that runs."""
    results: ValResults = {t.id: list(known.get(t.id, []))[:repeats] for t in tasks}
    calls = ran_waves = 0
    for wave in wave_plan(tasks, waves):
        todo = [ValUnit(t, r) for t in wave for r in range(len(results[t.id]), repeats)]
        if not todo:
            continue
        if gate is not None and incumbent is not None and not can_still_pass(gate, results, incumbent):
            return Validation(_known_only(results), calls, ran_waves, raced_out=True)
        if before_wave is not None:
            before_wave(results)
        rollouts = run_units(todo)
        for unit, rollout in zip(todo, rollouts, strict=True):
            results[unit.task.id].append(rollout.score.value)
        calls += len(todo)
        ran_waves += 1
    return Validation(results, calls, ran_waves, raced_out=False)


def _known_only(results: ValResults) -> ValResults:
    return {item: scores for item, scores in results.items() if scores}
