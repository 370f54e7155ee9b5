"""The optimizer role's cache wrapper: `CachedChatModel` answers a request it has seen from the
store (see `skillgrad.cache` for the key and the counting contract). A reflection in a workspace
(`investigate`) is keyed on the folder's content too, and its tool calls are stored with it, so a
replay shows what the analyst opened without paying for it again."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillgrad.backends.interface import ChatModel
from skillgrad.backends.reading import (
    Investigation,
    ReadingBounds,
    ReadingChatModel,
    ToolUse,
)
from skillgrad.cache.store import ZERO_USAGE, CacheStats, CallCache, request_key
from skillgrad.errors import BackendError, BudgetExceeded, StructuredOutputError
from skillgrad.snapshot import tree_digest
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
        self.reads_folders = isinstance(inner, ReadingChatModel)  # see backends.reading
        self.reading_tools = str(getattr(inner, "reading_tools", ""))

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
            reply = self._paid(stage, self._ask(messages, schema, effort, stage))
            payload = {"text": reply.text, "data": reply.data, "usage": reply.usage.to_json()}
            if not self.cache.put(key, payload):
                self.stats.skip()
            self.stats.miss()
            return reply

    def investigate(
        self,
        messages: list[Message],
        *,
        folder: Path,
        bounds: ReadingBounds,
        schema: dict[str, Any] | None = None,
        effort: Effort | None = None,
        stage: str,
    ) -> Investigation:
        """`ReadingChatModel.investigate`, answered from the cache when the same request met the
        same folder content (and the same turn bound) before. A bound error is paid, never stored."""
        inner = self.inner
        if not isinstance(inner, ReadingChatModel):
            raise TypeError(f"{self.name} cannot read a workspace")
        key = self._folder_key(messages, folder, bounds, schema, effort) if self.cache.enabled else None
        if key is None:
            self.stats.bypass(self.cache.enabled)
            return self._investigate(inner, messages, folder, bounds, schema, effort, stage)
        with self.cache.claim(key):
            hit = _investigation_from(self.cache.get(key))
            if hit is not None:
                self.stats.hit(hit.reply.saved or ZERO_USAGE)
                return hit
            found = self._investigate(inner, messages, folder, bounds, schema, effort, stage)
            reply = found.reply
            payload = {
                "text": reply.text,
                "data": reply.data,
                "usage": reply.usage.to_json(),
                "tool_uses": [use.to_json() for use in found.tool_uses],
                "turns": found.turns,
                "sessions": found.sessions,
                "wall_s": round(found.wall_s, 3),
            }
            if not self.cache.put(key, payload):
                self.stats.skip()
            self.stats.miss()
            return found

    def _folder_key(
        self,
        messages: list[Message],
        folder: Path,
        bounds: ReadingBounds,
        schema: dict[str, Any] | None,
        effort: Effort | None,
    ) -> str | None:
        chat_key = self._key(messages, schema, effort)
        try:
            digest = tree_digest(folder)
        except OSError:
            return None
        if chat_key is None or not digest:
            return None
        return request_key({"kind": "investigate", "chat": chat_key, "folder": digest, "turns": bounds.turns})

    def _investigate(
        self,
        inner: ReadingChatModel,
        messages: list[Message],
        folder: Path,
        bounds: ReadingBounds,
        schema: dict[str, Any] | None,
        effort: Effort | None,
        stage: str,
    ) -> Investigation:
        try:
            found = inner.investigate(
                messages, folder=folder, bounds=bounds, schema=schema, effort=effort, stage=stage
            )
        except (BackendError, StructuredOutputError, BudgetExceeded) as failed:  # a bound error too
            self._journal(stage, failed.paid)
            raise
        self._paid(stage, found.reply)
        return found

    def _ask(
        self, messages: list[Message], schema: dict[str, Any] | None, effort: Effort | None, stage: str
    ) -> Reply:
        """The model's reply; a failed call's attempts are journaled as paid all the same."""
        try:
            return self.inner.complete(messages, schema=schema, effort=effort, stage=stage)
        except (BackendError, StructuredOutputError, BudgetExceeded) as failed:
            self._journal(stage, failed.paid)
            raise

    def _journal(self, stage: str, usage: Usage | None) -> None:
        if self.on_paid is not None and usage is not None:
            self.on_paid(stage, usage)

    def _paid(self, stage: str, reply: Reply) -> Reply:
        self._journal(stage, reply.usage)
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


def _investigation_from(payload: dict[str, Any] | None) -> Investigation | None:
    reply = _reply_from(payload)
    if payload is None or reply is None:
        return None
    try:
        uses = tuple(ToolUse.from_json(use) for use in payload["tool_uses"])
        turns, sessions, wall = int(payload["turns"]), int(payload["sessions"]), float(payload["wall_s"])
    except (KeyError, TypeError, ValueError):
        return None
    return Investigation(reply, uses, turns, sessions, wall)
