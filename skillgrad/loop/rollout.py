"""Run tasks concurrently (bounded) with one skill and score them -> Rollout records.

Results come back in task order whatever the completion order, so a seeded run is reproducible.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from pathlib import Path

from skillgrad.backends.interface import Agent
from skillgrad.benchmarks.contract import AgenticBenchmark, Benchmark, checked_score, scorer_failed
from skillgrad.errors import BudgetExceeded, FatalBackendError
from skillgrad.loop.accounting import Reservation
from skillgrad.values import AgentResult, Rollout, Score, Task

__all__ = ["Rollout", "mean_score", "run_rollouts", "score_safely"]


def mean_score(rollouts: list[Rollout]) -> float:
    return sum(r.score.value for r in rollouts) / len(rollouts) if rollouts else 0.0


def score_safely(benchmark: Benchmark, task: Task, result: AgentResult) -> Score:
    """A crashed agent scores 0 with feedback. A scorer that raises, or returns anything outside
    the Score contract, fails the task with `scorer_error` saying why (checked_score): it never
    kills the run and never counts as a pass. What stops every task (the budget, a refused key
    of a judge) is raised."""
    if result.is_error:
        return Score(0.0, False, f"the agent failed: {result.error or 'unknown error'}")
    scorer = f"the scorer of benchmark {benchmark.name!r}"
    try:
        score = benchmark.score(task, result)
    except (BudgetExceeded, FatalBackendError):
        raise
    except Exception as exc:  # scorer bugs are reported on the task, not raised
        return scorer_failed(scorer, f"raised {type(exc).__name__}: {str(exc)[:300]}")
    return checked_score(score, scorer)


def run_rollouts(
    agent_for: Callable[[int], Agent],
    benchmark: Benchmark,
    tasks: list[Task],
    skill: str,
    *,
    workspace_for: Callable[[int, Task], Path],
    on_done: Callable[[int, Rollout], None],
    reserve: Callable[[], AbstractContextManager[Reservation]],
    concurrency: int,
    slots: threading.Semaphore | None = None,
    refused: list[FatalBackendError] | None = None,
) -> list[Rollout]:
    """Run every task (`agent_for(index)` runs the index-th: repeats of a task use resampling
    agents); `on_done(index, rollout)` persists each as it finishes (crash-safe). Each run is a
    unit of work of `reserve()` (`Accounting.reserved`): it raises BudgetStop when no further
    paid call may start, and the run's usage is recorded, or its reservation released, whatever
    happens. `slots`, shared by stages that run side by side, bounds their calls in flight
    together; `refused`, shared the same way, holds the FatalBackendError after which no task of
    any of them starts."""

    # Set by the first refusal (shared by stages that run side by side): no further task starts.
    refused = refused if refused is not None else []

    def run(index: int, task: Task) -> tuple[AgentResult, Path]:
        with slots if slots is not None else contextlib.nullcontext():
            if refused:  # checked once a slot is ours: a refusal may have come while we waited
                raise refused[0]
            with reserve() as unit:
                workspace = workspace_for(index, task)
                if isinstance(benchmark, AgenticBenchmark):
                    benchmark.prepare(task, workspace)
                try:
                    result = agent_for(index).run(task, skill, workspace)
                except FatalBackendError as exc:
                    refused.append(exc)
                    raise  # refused key / no credit: every task would fail, the run stops (errors.py)
                except BudgetExceeded:
                    raise  # a retry the cap refused: the stage stops
                except Exception as exc:  # Agent must not raise; a buggy backend still must not kill the run
                    result = AgentResult(answer="", is_error=True, error=f"{type(exc).__name__}: {exc}")
                unit.record(result.usage, result.saved)  # paid, whatever its scoring does
        return result, workspace

    def one(index: int, task: Task) -> Rollout:
        result, workspace = run(index, task)
        if result.workspace is None:
            result.workspace = workspace
        rollout = Rollout(task, result, score_safely(benchmark, task, result))
        on_done(index, rollout)
        return rollout

    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        futures = [pool.submit(one, i, t) for i, t in enumerate(tasks)]
        try:
            return [f.result() for f in futures]
        except (FatalBackendError, BudgetExceeded):
            pool.shutdown(wait=True, cancel_futures=True)  # tasks not started yet never start
            raise
