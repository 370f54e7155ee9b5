"""A chat model on an agent harness's CLI (Claude Code, Codex) used without tools: one CLI
session per request, retried with backoff while the failure is transient, through the one
structured-output path (`structured.complete_structured`) every backend shares.

A subclass runs one session (`_attempt`) and says whether its answer is final; the backoff and
the error after the last attempt are here, the loop is skillgrad's one (`backends.retry`): each
session after a call's first is reserved through the run's `meter` before it starts.
"""

from __future__ import annotations

from typing import Any, ClassVar

from skillgrad.backends.interface import CallMeter
from skillgrad.backends.retry import AttemptFailed, with_retries
from skillgrad.backends.structured import complete_structured
from skillgrad.config import Config
from skillgrad.errors import BackendError
from skillgrad.values import Effort, Message, Reply, Role, Usage

MAX_BACKOFF_S = 30.0


class CliChat:
    """The optimizer role (and a chat model in general) on a harness CLI, without tools."""

    name: ClassVar[str]
    default_model: ClassVar[str]
    retry_backoff_s = 1.0  # first pause between transport retries; doubles, capped at MAX_BACKOFF_S

    def __init__(self, cfg: Config, role: Role) -> None:
        self.cfg = cfg
        self.role = role
        self.model = cfg.model.model_for(role) or self.default_model
        self.meter: CallMeter | None = None  # MeteredModel: the run's budget, set by the registry

    def _backoff(self, attempt: int) -> float:
        return min(self.retry_backoff_s * 2 ** (attempt - 1), MAX_BACKOFF_S)

    def _attempt(
        self, messages: list[Message], schema: dict[str, Any] | None, effort: Effort | None
    ) -> tuple[str | None, Usage, str]:
        """One session: (its answer, or None when it failed in a way worth retrying; its usage;
        the failure's reason)."""
        raise NotImplementedError

    def _call(
        self, messages: list[Message], schema: dict[str, Any] | None, effort: Effort | None, stage: str
    ) -> tuple[str, Usage]:
        """One answer (transport-retried with backoff) as text; structured output as JSON text."""

        def attempt() -> tuple[str, Usage]:
            answer, used, reason = self._attempt(messages, schema, effort)
            if answer is not None:
                return answer, used

            def failed(attempts: int, paid: Usage) -> BackendError:
                return BackendError(
                    f"{self.name}: stage '{stage}' failed after {attempts} attempts: {reason[:300]}", paid
                )

            raise AttemptFailed(used, True, failed)

        return with_retries(
            attempt, retries=self.cfg.model.max_retries, meter=self.meter, backoff=self._backoff
        )

    def complete(
        self,
        messages: list[Message],
        *,
        schema: dict[str, Any] | None = None,
        effort: Effort | None = None,
        stage: str,
    ) -> Reply:
        return complete_structured(
            lambda convo: self._call(convo, schema, effort, stage),
            messages,
            schema,
            backend=self.name,
            stage=stage,
            retries=self.cfg.model.json_retries,
            meter=self.meter,
        )
