"""The Benchmark protocol and the Task / Score values.

Error contract: `load` raises `UserError` (one line naming the file and the fix) for missing or
broken data, duplicate ids, or a split larger than the data. `score` never raises for a bad answer:
it returns a Score with value 0 and feedback saying why. `prepare` (agentic benchmarks only) writes
the files a task needs into a fresh workspace.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from skillgrad.text import clean_json, clean_text

if TYPE_CHECKING:
    from skillgrad.backends.base import AgentResult, ChatModel

Split = Literal["train", "val", "test"]
SPLITS: tuple[Split, ...] = ("train", "val", "test")


@dataclass(frozen=True)
class Task:
    """One scored task. `question` is the instruction; `context` is long material (never truncated:
    agent targets get it as a file). `answers` are the accepted answers shown in feedback."""

    id: str
    question: str
    context: str | None = None
    answers: tuple[str, ...] = ()
    meta: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)

    def __post_init__(self) -> None:
        # Tasks come from data files: lone surrogates go here, once (see skillgrad.text).
        object.__setattr__(self, "id", clean_text(self.id))
        object.__setattr__(self, "question", clean_text(self.question))
        object.__setattr__(self, "context", clean_text(self.context) if self.context else self.context)
        object.__setattr__(self, "answers", tuple(clean_text(a) for a in self.answers))
        object.__setattr__(self, "meta", clean_json(self.meta))

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "question": self.question,
            "context": self.context,
            "answers": list(self.answers),
            "meta": self.meta,
        }


@dataclass(frozen=True)
class Score:
    value: float  # in [0, 1]
    passed: bool
    feedback: str  # tells the analyst what was expected and what went wrong

    def to_json(self) -> dict[str, Any]:
        return {"value": self.value, "passed": self.passed, "feedback": self.feedback}


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
