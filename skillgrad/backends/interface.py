"""The two role protocols every backend implements, and the value types they exchange.

Error contract (both protocols):
- `ChatModel.complete` retries transient failures (429, 5xx, timeouts, cut streams) itself with
  backoff, in skillgrad's one loop (`backends.retry`; an SDK's own retries are off), at most
  `model.max_retries` times. With a `schema` it returns `Reply.data` as a schema-valid object,
  re-asking the model a bounded number of times; then it raises `StructuredOutputError` naming
  backend and stage. Other permanent failures raise `BackendError`: `PromptTooLong` where the
  server refused the prompt as past the model's context window. `Reply.usage` sums every
  attempt (an unanswered one counts as a call of unknown cost: the provider may bill it), and a
  failed call carries its attempts' usage as the error's `paid`. A model with a `meter`
  (`MeteredModel`) reserves each attempt after a call's first through it (`CallMeter.renew`),
  which raises `BudgetExceeded` when the budget has no room.
- `Agent.run` never raises for one task's failure (a crash, timeout, refusal or bad reply of the
  harness): it returns an `AgentResult` with `is_error=True` and `error` set, so the task scores 0
  and the run goes on. It raises only for programming errors.

A backend module implements `ChatBackend` (a chat model) or `HarnessBackend` (an agent harness);
its `BackendSpec` line in `skillgrad.backend_specs` says which, and the registry checks it on load.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

# The value types the protocols exchange, re-exported for backend authors (defined in values).
from skillgrad.values import AgentResult, Effort, Message, Reply, Role, Task, Usage

if TYPE_CHECKING:
    from skillgrad.config import Config

__all__ = [
    "Agent",
    "AgentResult",
    "CallMeter",
    "ChatBackend",
    "ChatModel",
    "Effort",
    "HarnessBackend",
    "Message",
    "MeteredModel",
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


class CallMeter(Protocol):
    """The run's budget as a chat model's own loops see it (`skillgrad.budget.Ledger`)."""

    def renew(self) -> None:
        """Reserve one more attempt of the call in progress on this thread (a retry, a re-ask),
        before it is sent; raises `BudgetExceeded` when the budget has no room for it."""
        ...


@runtime_checkable
class MeteredModel(Protocol):
    """A chat model whose retries and re-asks reserve each attempt through `meter` (None: not
    metered, as on a Ray worker: the call's usage still sums its attempts). The run sets it
    when it builds the model (`backends.registry.Backends`)."""

    meter: CallMeter | None


@runtime_checkable
class Agent(Protocol):
    """The target role: does one task with the skill installed (`skillgrad.Agent`; a caller may
    hand one in: `skillgrad.train(agent=...)`).

    `run(task, skill, workspace)` does `task` with `skill` (the skill's text: a SKILL.md, or a
    package's canonical text) and returns an `AgentResult`: its `answer` (what the benchmark
    scores), its trace steps and usage where it has them. `workspace` is a fresh folder of its own
    (an AgenticBenchmark prepared it); what it leaves there is kept and scored. `name` and `model`
    name it in the run folder and the progress lines.

    Errors: it never raises for one task's failure (a crash, a timeout, a refusal, a bad reply):
    it returns `AgentResult(answer="", is_error=True, error=...)`, the task is run again up to
    `train.rollout_retries` times and then counts as failed (a val run as missing), and the run
    goes on. Anything else it raises is taken the same way, except `FatalBackendError` (a key or
    quota refused: no task can succeed), which stops the run. An object handed in may also name a
    `cache_identity` (a string naming everything that shapes its answers): only then are its runs
    kept in the call cache."""

    name: str
    model: str

    def run(self, task: Task, skill: str, workspace: Path) -> AgentResult: ...


@runtime_checkable
class ResamplingAgent(Agent, Protocol):
    """An Agent that can hand out a twin whose runs are distinct calls (the call cache keys them
    apart by `salt`), for the repeats of a task."""

    salt: str

    def with_salt(self, salt: str) -> ResamplingAgent: ...


@runtime_checkable
class ChatBackend(Protocol):
    """A backend module serving chat models (the optimizer role; a target through `ChatAgent`).

    Error contract: `availability` never raises and makes no network call; it returns (False,
    reason) when the backend cannot work here (no CLI, no credentials, a bad model file). A missing
    vendor package is the module's own ImportError, which the registry turns into a pip hint, so a
    vendor SDK is imported lazily or at the module's top, never elsewhere. `new_run_state()`
    returns one object per run (None when the backend keeps none), handed to each factory call of
    that run, so both roles can share what is expensive (a loaded model) without global state.
    The factories raise `UserError` for settings the user can fix.

    Optional: `identity(cfg, role) -> dict` says what identifies the model that answers beyond
    its name (a model file by path, size and mtime; a CLI by its version), for the call cache's
    key; it never raises and makes no network call (`skillgrad.backends.identity`)."""

    def availability(self, cfg: Config) -> tuple[bool, str]: ...

    def new_run_state(self) -> Any: ...

    def create_chat(self, cfg: Config, role: Role, state: Any = None) -> ChatModel: ...


@runtime_checkable
class HarnessBackend(ChatBackend, Protocol):
    """A backend module that is also an agent harness: it runs a task in a workspace with tools
    and returns its session as trace steps (see `Agent`)."""

    def create_agent(self, cfg: Config, state: Any = None) -> Agent: ...
