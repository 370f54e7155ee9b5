"""A chat model that reads a folder before it answers: the optimizer of `optimizer.reflection:
workspace` (see `skillgrad.evidence`). Claude Code and Codex implement it (`claude_reader`,
`codex_reader`); the retry, deadline and re-ask loop they share is `investigate` below.

Error contract of `ReadingChatModel.investigate` (beside `ChatModel.complete`'s, which it keeps):
- the folder is read-only for the model: no tool that writes, runs commands outside a read-only
  sandbox or reaches the network is offered; a call the harness refuses is a tool error the model
  sees (and the session goes on), never an exception;
- transient failures (a crash, 429 / 5xx, a cut stream) are retried with backoff, within the
  deadline, in skillgrad's one loop (`backends.retry`: each session after a call's first reserved
  through the model's `meter`);
- a bound that fires (`ReadingBounds.turns`, `ReadingBounds.timeout_s`) ends the call at once with
  `ReadingBoundError`, which names the config key and carries what the call paid and opened; it
  is never retried;
- with a schema, `reply.data` is schema-valid: a bad reply is re-asked in a new session in the same
  folder (`model.json_retries`), then `StructuredOutputError`;
- refused credentials or quota raise `FatalBackendError`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from skillgrad.backends.interface import CallMeter
from skillgrad.backends.retry import AttemptFailed, with_retries
from skillgrad.backends.structured import complete_structured
from skillgrad.errors import BackendError, BudgetExceeded, StructuredOutputError
from skillgrad.values import Effort, Message, Reply, Usage

OUTPUT_CHARS = 2000  # of each tool result, kept for the reflection record
MAX_BACKOFF_S = 30.0


@dataclass(frozen=True)
class ReadingBounds:
    turns: int  # model turns that may call tools (Codex: tool calls), `optimizer.reflection_turns`
    timeout_s: float  # wall time of the whole call, re-asks included, `optimizer.reflection_timeout_s`


@dataclass(frozen=True)
class ToolUse:
    """One tool call of the reading model, as the harness reported it."""

    name: str
    input: dict[str, Any]
    output: str = ""  # the result, cut to OUTPUT_CHARS
    output_chars: int = 0  # the result's whole length
    is_error: bool = False  # refused, or failed

    @classmethod
    def of(cls, name: str, tool_input: dict[str, Any], output: str, is_error: bool) -> ToolUse:
        return cls(name, tool_input, output[:OUTPUT_CHARS], len(output), is_error)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "input": self.input,
            "output": self.output,
            "output_chars": self.output_chars,
            "is_error": self.is_error,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ToolUse:
        tool_input = data.get("input")
        return cls(
            str(data.get("name", "")),
            tool_input if isinstance(tool_input, dict) else {},
            str(data.get("output", "")),
            int(data.get("output_chars", 0)),
            bool(data.get("is_error", False)),
        )


@dataclass(frozen=True)
class Investigation:
    """A reply and how it was reached: every tool call, the model turns and sessions, wall time."""

    reply: Reply
    tool_uses: tuple[ToolUse, ...] = ()
    turns: int = 0
    sessions: int = 0
    wall_s: float = 0.0


class ReadingBoundError(BackendError):
    """A bound of the call fired (turns or wall time); `spent` is what the call paid and opened
    (its usage is `paid`, as for any BackendError)."""

    def __init__(self, message: str, spent: Investigation) -> None:
        super().__init__(message, spent.reply.usage)
        self.spent = spent


@runtime_checkable
class ReadingChatModel(Protocol):
    """A ChatModel that can also answer after reading `folder` with read-only tools."""

    name: str
    model: str
    reading_tools: str  # how it reads, as the analyst's guide tells it (e.g. "Read, Grep and Glob")

    def complete(
        self,
        messages: list[Message],
        *,
        schema: dict[str, Any] | None = None,
        effort: Effort | None = None,
        stage: str,
    ) -> Reply: ...

    def investigate(
        self,
        messages: list[Message],
        *,
        folder: Path,
        bounds: ReadingBounds,
        schema: dict[str, Any] | None = None,
        effort: Effort | None = None,
        stage: str,
    ) -> Investigation: ...


def can_read_folders(chat: object) -> bool:
    """Whether `chat` answers `investigate`; a wrapper (the call cache) says so for what it wraps."""
    flag = getattr(chat, "reads_folders", None)
    return bool(flag) if flag is not None else isinstance(chat, ReadingChatModel)


@dataclass
class SessionOutcome:
    """One harness session in the folder, as its backend read it."""

    answer: str | None  # None: it failed in a way worth running again (`failure` says how)
    usage: Usage
    failure: str = ""
    tool_uses: list[ToolUse] = field(default_factory=list)
    turns: int = 0
    bound: str | None = None  # set when a bound ended it: what fired and which key raises it


# (the conversation so far, seconds left) -> one session's outcome
SessionRunner = Callable[[list[Message], float], SessionOutcome]


@dataclass
class _Tally:
    usage: Usage = field(default_factory=Usage)
    uses: list[ToolUse] = field(default_factory=list)
    turns: int = 0
    sessions: int = 0

    def add(self, outcome: SessionOutcome) -> None:
        self.usage = self.usage + outcome.usage
        self.uses += outcome.tool_uses
        self.turns += outcome.turns
        self.sessions += 1

    def spent(self, started: float, reply: Reply | None = None) -> Investigation:
        reply = reply or Reply("", usage=self.usage)
        wall = time.monotonic() - started
        return Investigation(reply, tuple(self.uses), self.turns, self.sessions, wall)


def investigate(
    run: SessionRunner,
    messages: list[Message],
    schema: dict[str, Any] | None,
    bounds: ReadingBounds,
    *,
    backend: str,
    stage: str,
    retries: int,
    json_retries: int,
    backoff_s: float = 1.0,
    meter: CallMeter | None = None,
) -> Investigation:
    """Sessions until a reply parses (see the module's error contract), all within the deadline."""
    started = time.monotonic()
    tally = _Tally()

    def out_of_time() -> ReadingBoundError:
        limit = f"optimizer.reflection_timeout_s={bounds.timeout_s:g}s"
        return ReadingBoundError(
            f"{backend}: stage '{stage}' ran past {limit} while reading its workspace; raise {limit}",
            tally.spent(started),
        )

    def session(convo: list[Message]) -> tuple[str, Usage]:
        left = bounds.timeout_s - (time.monotonic() - started)
        if left <= 0:
            raise out_of_time()
        outcome = run(convo, left)
        tally.add(outcome)
        if outcome.bound:
            raise ReadingBoundError(f"{backend}: stage '{stage}' {outcome.bound}", tally.spent(started))
        if outcome.answer is not None:
            return outcome.answer, Usage()  # what every session paid is the tally's (below)

        def failed(attempts: int, _attempts_paid: Usage) -> BackendError:
            why = outcome.failure[:300]
            return BackendError(
                f"{backend}: stage '{stage}' failed after {attempts} attempts: {why}", tally.usage
            )

        raise AttemptFailed(Usage(), True, failed)

    def call(convo: list[Message]) -> tuple[str, Usage]:
        return with_retries(
            lambda: session(convo),
            retries=retries,
            meter=meter,
            backoff=lambda n: min(backoff_s * 2 ** (n - 1), MAX_BACKOFF_S),
        )

    try:
        reply = complete_structured(
            call, messages, schema, backend=backend, stage=stage, retries=json_retries, meter=meter
        )
    except (StructuredOutputError, BudgetExceeded) as exc:  # every session so far was paid
        exc.paid = tally.usage
        raise
    return tally.spent(started, Reply(reply.text, reply.data, tally.usage))
