"""The Benchmark protocol (and the Task / Score values it exchanges, from skillgrad.values).

Error contract: `load` raises `UserError` (one line naming the file and the fix) for missing or
broken data, duplicate ids, or a split larger than the data. `score` never raises for a bad answer:
it returns a Score with value 0 and feedback saying why. `prepare` (agentic benchmarks only) writes
the files a task needs into a fresh workspace.

What `score` returns is checked (`checked_score`): anything but a Score with a finite value in
[0, 1], a bool `passed` and no pass of a value of 0 fails its task with `Score.scorer_error` saying
why, so a scorer's bug can never count as a pass.
"""

from __future__ import annotations

import math
import numbers
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

# The value types a benchmark exchanges, re-exported for benchmark authors (defined in values).
from skillgrad.values import SPLITS, AgentResult, Score, Split, Task

if TYPE_CHECKING:
    from skillgrad.backends.interface import ChatModel

__all__ = [
    "SPLITS",
    "AgenticBenchmark",
    "Benchmark",
    "JudgedBenchmark",
    "Score",
    "Split",
    "Task",
    "checked_score",
    "scorer_failed",
]


def scorer_failed(scorer: str, why: str) -> Score:
    """The score of a task whose scorer failed (`why`: what it raised or returned): 0, not passed."""
    return Score(0.0, False, f"{scorer} {why}; the task counts as failed", scorer_error=f"{scorer} {why}")


def _is_bool(value: object) -> bool:
    """A bool, numpy's included."""
    return isinstance(value, bool) or (type(value).__name__ in ("bool_", "bool") and hasattr(value, "dtype"))


def _broken(score: Score) -> str | None:
    """What about `score` breaks the Score contract, or None."""
    value, passed = score.value, score.passed
    if not isinstance(value, numbers.Real):
        return f"returned a value of type {type(value).__name__}, not a number"
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        return f"returned the value {float(value)!r}, outside [0, 1]"
    if not _is_bool(passed):
        return f"returned passed={passed!r} ({type(passed).__name__}), not a bool"
    if passed and value == 0:
        return "returned passed=True with the value 0"
    return None


def checked_score(score: object, scorer: str = "the scorer") -> Score:
    """`score` when it keeps the Score contract (its numbers as plain float and bool), else a
    failed score whose `scorer_error` says what was wrong; `scorer` names it in the message."""
    if not isinstance(score, Score):
        return scorer_failed(scorer, f"returned {type(score).__name__}, not a Score")
    broken = _broken(score)
    if broken is not None:
        return scorer_failed(scorer, broken)
    feedback = score.feedback if isinstance(score.feedback, str) else str(score.feedback)
    return Score(float(score.value), bool(score.passed), feedback, score.scorer_error)


class Benchmark(Protocol):
    name: str

    def load(self, split: Split) -> list[Task]: ...

    def score(self, task: Task, result: AgentResult) -> Score: ...


@runtime_checkable
class AgenticBenchmark(Benchmark, Protocol):
    """A benchmark whose tasks need files in the agent's workspace and are scored from it."""

    def prepare(self, task: Task, workspace: Path) -> None: ...


@runtime_checkable
class JudgedBenchmark(Benchmark, Protocol):
    """A benchmark scored by a model judge. The trainer hands it the judge (the optimizer role's
    backend, cached and counted in the budget) before any scoring; `score` may then call it and
    raises only when no judge was given."""

    def use_judge(self, judge: ChatModel) -> None: ...
