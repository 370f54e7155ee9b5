"""The optimizer role's cache wrapper: `CachedChatModel` answers a request it has seen from the
store (see `skillgrad.cache` for the key and the counting contract)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from skillgrad.backends.base import ChatModel
from skillgrad.cache.store import ZERO_USAGE, CacheStats, CallCache, request_key
from skillgrad.values import AgentResult, Effort, Message, Reply, Usage


@dataclass(frozen=True)
class CachedReply(Reply):
    """A Reply served from the cache: `usage` is zero (unpaid), `saved` the original usage."""


def saved_usage(obj: Reply | AgentResult) -> Usage | None:
    """The usage a cache hit avoided paying, or None when `obj` was not served from the cache."""
    return obj.saved


class CachedChatModel:
    """ChatModel wrapper: identical requests are answered from the cache (see `skillgrad.cache`).

    `sampling` names every parameter that shapes the reply besides messages/schema/effort
    (temperature, max_output_tokens, ...): it is part of the key."""

    def __init__(
        self,
        inner: ChatModel,
        cache: CallCache,
        *,
        sampling: dict[str, Any],
        salt: str = "",
        stats: CacheStats | None = None,
        on_paid: Callable[[str, Usage], None] | None = None,
    ) -> None:
        self.inner = inner
        self.cache = cache
        self.on_paid = on_paid  # (stage, usage) of each call that reached the model, as it returns
        self.sampling = dict(sampling)
        self.salt = salt
        self.stats = stats or CacheStats()
        self.name = inner.name
        self.model = inner.model

    def with_salt(self, salt: str) -> CachedChatModel:
        """The same model, cache and counters under another salt, for deliberate resampling."""
        twin = copy.copy(self)
        twin.salt = salt
        return twin

    def _key(
        self, messages: list[Message], schema: dict[str, Any] | None, effort: Effort | None
    ) -> str | None:
        request = {
            "kind": "chat",
            "backend": self.name,
            "model": self.model,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "schema": schema,
            "effort": effort,
            "sampling": self.sampling,
            "salt": self.salt,
        }
        try:
            return request_key(request)
        except (TypeError, ValueError):
            return None

    def complete(
        self,
        messages: list[Message],
        *,
        schema: dict[str, Any] | None = None,
        effort: Effort | None = None,
        stage: str,
    ) -> Reply:
        key = self._key(messages, schema, effort) if self.cache.enabled else None
        if key is None:
            self.stats.bypass(self.cache.enabled)
            return self._paid(stage, self._ask(messages, schema, effort, stage))
        with self.cache.claim(key):
            hit = _reply_from(self.cache.get(key))
            if hit is not None:
                self.stats.hit(hit.saved or ZERO_USAGE)
                return hit
            reply = self._paid(
                stage, self.inner.complete(messages, schema=schema, effort=effort, stage=stage)
            )
            payload = {"text": reply.text, "data": reply.data, "usage": reply.usage.to_json()}
            if not self.cache.put(key, payload):
                self.stats.skip()
            self.stats.miss()
            return reply

    def _ask(
        self, messages: list[Message], schema: dict[str, Any] | None, effort: Effort | None, stage: str
    ) -> Reply:
        return self.inner.complete(messages, schema=schema, effort=effort, stage=stage)

    def _paid(self, stage: str, reply: Reply) -> Reply:
        if self.on_paid is not None:
            self.on_paid(stage, reply.usage)
        return reply


def _reply_from(payload: dict[str, Any] | None) -> CachedReply | None:
    if payload is None:
        return None
    try:
        text, data = payload["text"], payload["data"]
        if not isinstance(text, str) or not (data is None or isinstance(data, dict)):
            return None
        return CachedReply(text=text, data=data, usage=ZERO_USAGE, saved=Usage.from_json(payload["usage"]))
    except (KeyError, TypeError, ValueError):
        return None
