"""The Benchmark protocol (and the Task / Score values it exchanges, from skillgrad.values).

Error contract: `load` raises `UserError` (one line naming the file and the fix) for missing or
broken data, duplicate ids, or a split larger than the data. `score` never raises for a bad answer:
it returns a Score with value 0 and feedback saying why. `prepare` (agentic benchmarks only) writes
the files a task needs into a fresh workspace.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

# The value types a benchmark exchanges, re-exported for benchmark authors (defined in values).
from skillgrad.values import SPLITS, AgentResult, Score, Split, Task

if TYPE_CHECKING:
    from skillgrad.backends.base import ChatModel

__all__ = ["SPLITS", "AgenticBenchmark", "Benchmark", "JudgedBenchmark", "Score", "Split", "Task"]


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
