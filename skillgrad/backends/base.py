"""The two role protocols every backend implements, and the value types they exchange.

Error contract (both protocols):
- `ChatModel.complete` retries transient failures (429, 5xx, timeouts, cut streams) itself with
  backoff. With a `schema` it returns `Reply.data` as a schema-valid object, re-asking the model a
  bounded number of times; then it raises `StructuredOutputError` naming backend and stage.
  Other permanent failures raise `BackendError`.
- `Agent.run` never raises for one task's failure (a crash, timeout, refusal or bad reply of the
  harness): it returns an `AgentResult` with `is_error=True` and `error` set, so the task scores 0
  and the run goes on. It raises only for programming errors.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from skillgrad.text import clean_json, clean_text

if TYPE_CHECKING:
    from skillgrad.benchmarks.base import Task
    from skillgrad.traces.steps import TraceStep

Role = Literal["optimizer", "target"]
Effort = Literal["low", "medium", "high"]


@dataclass(frozen=True)
class Usage:
    """Token and cost accounting of one or more calls. `cost_usd=None` means unknown."""

    input_tokens: int = 0
    output_tokens: int = 0
    calls: int = 0
    cost_usd: float | None = 0.0

    def __add__(self, other: Usage) -> Usage:
        cost = None if self.cost_usd is None or other.cost_usd is None else self.cost_usd + other.cost_usd
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.calls + other.calls,
            cost,
        )

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def to_json(self) -> dict[str, Any]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "calls": self.calls,
            "cost_usd": self.cost_usd,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Usage:
        return cls(
            int(data.get("input_tokens", 0)),
            int(data.get("output_tokens", 0)),
            int(data.get("calls", 0)),
            data.get("cost_usd", 0.0),
        )


@dataclass(frozen=True)
class Message:
    role: Literal["system", "user", "assistant"]
    content: str


@dataclass(frozen=True)
class Reply:
    """A chat completion. `data` is the parsed schema-valid object when a schema was given."""

    text: str
    data: dict[str, Any] | None = None
    usage: Usage = field(default_factory=Usage)

    def __post_init__(self) -> None:
        # A reply is outside text: lone surrogates go here, once (see skillgrad.text).
        object.__setattr__(self, "text", clean_text(self.text))
        object.__setattr__(self, "data", clean_json(self.data))


class ChatModel(Protocol):
    """The optimizer role (and a chat target, via `ChatAgent`)."""

    name: str  # backend name, e.g. "openai_chat"
    model: str  # model id as sent to the provider

    def complete(
        self,
        messages: list[Message],
        *,
        schema: dict[str, Any] | None = None,
        effort: Effort | None = None,
        stage: str,
    ) -> Reply: ...


@dataclass
class AgentResult:
    """What the target did on one task. `trace` is empty for plain chat targets."""

    answer: str
    trace: list[TraceStep] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    is_error: bool = False
    error: str | None = None
    raw: list[dict[str, Any]] = field(default_factory=list)  # raw transcript messages (JSONL-able)
    workspace: Path | None = None  # where an agent harness worked; agentic scorers read it

    def __post_init__(self) -> None:
        # Everything here came from the agent: lone surrogates go here, once (see skillgrad.text).
        self.answer = clean_text(self.answer)
        self.error = clean_text(self.error) if self.error else self.error
        self.trace = [_clean_step(step) for step in self.trace]
        self.raw = clean_json(self.raw)


def _clean_step(step: TraceStep) -> TraceStep:
    text, tool = clean_text(step.text), clean_text(step.tool) if step.tool else step.tool
    return step if (text, tool) == (step.text, step.tool) else dataclasses.replace(step, text=text, tool=tool)


class Agent(Protocol):
    """The target role: does one task with the skill installed. See module docstring for errors."""

    name: str
    model: str

    def run(self, task: Task, skill: str, workspace: Path) -> AgentResult: ...
