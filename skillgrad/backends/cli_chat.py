"""A chat model on an agent harness's CLI (Claude Code, Codex) used without tools: one CLI
session per request, retried with backoff while the failure is transient, through the one
structured-output path (`structured.complete_structured`) every backend shares.

A subclass runs one session (`_attempt`) and says whether its answer is final; the retry loop,
the backoff and the error after the last attempt are here.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

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
        usage = Usage()
        reason = ""
        attempts = self.cfg.model.max_retries + 1
        for attempt in range(attempts):
            if attempt:
                time.sleep(min(self.retry_backoff_s * 2 ** (attempt - 1), MAX_BACKOFF_S))
            answer, used, reason = self._attempt(messages, schema, effort)
            usage = usage + used
            if answer is not None:
                return answer, usage
        raise BackendError(f"{self.name}: stage '{stage}' failed after {attempts} attempts: {reason[:300]}")

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
        )
