"""Train rollouts started ahead of their step (overlap), kept only when still the right ones.

A step's train rollouts depend on one thing: the skill it starts with. While step s validates
its candidate, step s+1's rollouts run with that candidate; if the gate rejects it, they were
run with the wrong skill and are redone with the incumbent. `take` hands out only rollouts run
with exactly the skill the sequential order would use, so decisions and skills stay identical.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from skillgrad.values import Rollout


@dataclass
class _Started:
    skill: str
    future: Future[list[Rollout]]


class PrefetchedRollouts:
    """Step number -> train rollouts in flight (or done) with the skill they were started with."""

    def __init__(self, pool: ThreadPoolExecutor) -> None:
        self._pool = pool
        self._started: dict[int, _Started] = {}

    def start(self, step: int, skill: str, run: Callable[[], list[Rollout]]) -> None:
        """Run `run` in the background for `step` unless the step has rollouts started already."""
        if step not in self._started:
            self._started[step] = _Started(skill, self._pool.submit(run))

    def peek(self, step: int, skill: str) -> list[Rollout] | None:
        """The step's rollouts if they were started with `skill` (waits; they stay for `take`)."""
        started = self._started.get(step)
        return started.future.result() if started is not None and started.skill == skill else None

    def take(self, step: int, skill: str) -> tuple[list[Rollout] | None, bool]:
        """(rollouts, discarded): the step's rollouts if they were run with `skill` (waits for
        them; re-raises their error); None when none were started or they used another skill
        (then waits for them to end first, so a redo never races their writes)."""
        started = self._started.pop(step, None)
        if started is None:
            return None, False
        rollouts = started.future.result()
        if started.skill == skill:
            return rollouts, False
        return None, True

    def drain(self) -> None:
        """Wait for everything still in flight (errors dropped: nobody will use those results)."""
        for started in self._started.values():
            started.future.exception()  # waits for it to end
        self._started.clear()
