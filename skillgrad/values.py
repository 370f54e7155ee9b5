"""The value types every layer exchanges: tasks and scores, messages and replies, agent results,
trace steps, usage, and the rollout record that joins them.

They depend on nothing in the package but `skillgrad.text` (a leaf), so any module may import
them without an import cycle. The protocols that produce or consume them stay beside their seams:
`ChatModel` / `Agent` in `skillgrad.backends.interface`, `Benchmark` in `skillgrad.benchmarks.contract`
(which re-export these values for the authors of a backend or a benchmark).

Every value that carries outside text (a data file, a model reply, an agent's session) passes its
strings through `clean_text` / `clean_json` on construction, once, so nothing downstream can fail
on a lone surrogate.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from skillgrad.text import clean_json, clean_text

Role = Literal["optimizer", "target"]
Effort = Literal["low", "medium", "high"]
Split = Literal["train", "val", "test"]
SPLITS: tuple[Split, ...] = ("train", "val", "test")
StepKind = Literal["text", "tool_call", "tool_result", "user"]
STEP_KINDS: tuple[StepKind, ...] = ("text", "tool_call", "tool_result", "user")


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
class Task:
    """One scored task. `question` is the instruction; `context` is long material (never truncated:
    agent targets get it as a file). `answers` are the accepted answers shown in feedback."""

    id: str
    question: str
    context: str | None = None
    answers: tuple[str, ...] = ()
    meta: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)

    def __post_init__(self) -> None:
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
    """A scored answer: `value` a finite number in [0, 1]; `passed` a bool, never true of a value
    of 0 (benchmarks.contract.checked_score). `scorer_error` says why the scorer, not the answer,
    failed the task (it raised, or returned something outside this contract); None otherwise."""

    value: float  # in [0, 1]
    passed: bool
    feedback: str  # tells the analyst what was expected and what went wrong
    scorer_error: str | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"value": self.value, "passed": self.passed, "feedback": self.feedback}
        if self.scorer_error is not None:
            data["scorer_error"] = self.scorer_error
        return data


@dataclass(frozen=True)
class Message:
    role: Literal["system", "user", "assistant"]
    content: str


@dataclass(frozen=True)
class Reply:
    """A chat completion. `data` is the parsed schema-valid object when a schema was given.
    `saved` is set only on a reply the call cache answered: the usage of the original call, which
    this one did not pay (its `usage` is zero)."""

    text: str
    data: dict[str, Any] | None = None
    usage: Usage = field(default_factory=Usage)
    saved: Usage | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "text", clean_text(self.text))
        object.__setattr__(self, "data", clean_json(self.data))


@dataclass(frozen=True)
class TraceStep:
    """One step of an agent's session.

    kind: `text` (the agent wrote), `tool_call`, `tool_result`, or `user` (what the user or a hook
    said after the first prompt). tool: the tool's name; for `user` steps the source (`follow-up`,
    `interrupt`, `hook`, `command`, `rejection`, `compact`, `notification`); for `text` steps None,
    or who wrote it instead of the agent: `hook` (a hook failed without blocking) or `session` (the
    parser's note that closes an unfinished session). agent: the subagent that took the step (None
    for the main agent). ref: the tool-use id that pairs a call with its result.
    """

    kind: StepKind
    text: str
    tool: str | None = None
    is_error: bool = False
    agent: str | None = None
    ref: str | None = None

    def __post_init__(self) -> None:
        # Every string a step carries comes from an agent, a tool or a file.
        for name in ("text", "tool", "agent", "ref"):
            value = getattr(self, name)
            if isinstance(value, str):
                object.__setattr__(self, name, clean_text(value))
            elif value is not None:
                object.__setattr__(self, name, clean_text(str(value)))

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "kind": self.kind,
            "text": self.text,
            "tool": self.tool,
            "is_error": self.is_error,
        }
        if self.agent is not None:
            data["agent"] = self.agent
        if self.ref is not None:
            data["ref"] = self.ref
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TraceStep:
        kind = data.get("kind")
        return cls(
            kind if kind in STEP_KINDS else "text",
            clean_text(str(data.get("text", ""))),
            data.get("tool"),
            bool(data.get("is_error", False)),
            data.get("agent"),
            data.get("ref"),
        )


@dataclass
class AgentResult:
    """What the target did on one task. `trace` is empty for plain chat targets. `saved` is set
    only on a result the call cache answered (see `Reply.saved`)."""

    answer: str
    trace: list[TraceStep] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    is_error: bool = False
    error: str | None = None
    raw: list[dict[str, Any]] = field(default_factory=list)  # raw transcript messages (JSONL-able)
    workspace: Path | None = None  # where an agent harness worked; agentic scorers read it
    saved: Usage | None = None

    def __post_init__(self) -> None:
        self.answer = clean_text(self.answer)
        self.error = clean_text(self.error) if self.error else self.error
        self.raw = clean_json(self.raw)  # (each TraceStep cleans itself)

    @property
    def cost(self) -> Usage:
        """What the run cost, whether paid now or answered from the call cache."""
        return self.saved or self.usage


@dataclass
class Rollout:
    """One task done and scored with one skill."""

    task: Task
    result: AgentResult
    score: Score

    def to_json(self) -> dict[str, Any]:
        return {
            **self.score.to_json(),
            "answer": self.result.answer,
            "expected": list(self.task.answers),
            "is_error": self.result.is_error,
            "error": self.result.error,
            "usage": self.result.cost.to_json(),
        }
