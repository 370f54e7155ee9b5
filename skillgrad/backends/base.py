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

from pathlib import Path
from typing import Any, Protocol, runtime_checkable

# The value types the protocols exchange, re-exported for backend authors (defined in values).
from skillgrad.values import AgentResult, Effort, Message, Reply, Role, Task, Usage

__all__ = [
    "Agent",
    "AgentResult",
    "ChatModel",
    "Effort",
    "Message",
    "Reply",
    "ResamplingAgent",
    "Role",
    "Usage",
]


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


class Agent(Protocol):
    """The target role: does one task with the skill installed. See module docstring for errors."""

    name: str
    model: str

    def run(self, task: Task, skill: str, workspace: Path) -> AgentResult: ...


@runtime_checkable
class ResamplingAgent(Agent, Protocol):
    """An Agent that can hand out a twin whose runs are distinct calls (the call cache keys them
    apart by `salt`), for the repeats of a task."""

    salt: str

    def with_salt(self, salt: str) -> ResamplingAgent: ...
