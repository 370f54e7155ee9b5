"""Content-addressed call cache on disk, and the two role wrappers that use it.

Key: sha256 of the canonical JSON of the request (sorted keys, no whitespace, UTF-8):
- chat:  backend, model, messages, schema, effort, sampling params, salt;
- agent: backend, model, agent settings, skill text, task content (id, question, context, answers,
  meta), a digest of the workspace as prepared before the run, salt.
The `stage` label is not part of a chat key: the same request is the same call wherever it is made.
`salt` is for deliberate resampling (a `rollout_id`): equal salts replay, different salts re-ask.

Value: one JSON file per key under `root/ab/cd/<key>.json` holding the key, a sha256 of the
canonical payload, and the payload. An entry that is unreadable, truncated, for another key or
whose checksum does not match is ignored (a miss) and removed; it never raises.

Usage of cache hits (the counting contract, see also `skillgrad.budget`; `on_paid` reports each
call that did reach the model the moment it returns, for the run's `PaidJournal`):
- A hit returns `CachedReply` / `CachedAgentResult` (subclasses of `Reply` / `AgentResult`) whose
  `usage` is ZERO (nothing was paid) and whose `saved` is the stored usage of the original call
  (None on every reply that did reach the model). Code that sums `usage` therefore counts exactly
  the paid calls, and the loop reads `saved` without knowing the cache.
- Each wrapper also keeps thread-safe `stats` (hits, misses, saved usage, uncacheable).
- Failures are never cached: an exception from `ChatModel.complete` propagates, and an
  `AgentResult` with `is_error=True` is returned unstored, so a crashed task is retried on resume.

Workspaces: agentic benchmarks score the files an agent left behind, so a cached agent result is
only valid with them. `CachedAgent(snapshot_workspace=True)` (the default) stores the workspace's
regular files (up to `max_workspace_bytes`, judged from their sizes before any read; a larger
workspace is simply not cached), each passed through `redact_file` (the run's secret redaction: an
agent may have written `env` into a file), and restores them on a hit. Pass False for benchmarks
scored from the answer alone to save disk.

Writes are atomic (temp + rename) without fsync: a SIGKILL cannot lose page-cache data, and an
entry torn by a power loss fails its checksum and is re-asked. Identical requests issued
concurrently are serialised per key (`CallCache.claim`), so the second one is a hit, not a payment.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import enum
import hashlib
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from skillgrad.atomic import write_text_atomic
from skillgrad.backends.base import Agent, ChatModel
from skillgrad.snapshot import restore_tree, safe_relative_path, snapshot_tree, tree_digest
from skillgrad.values import AgentResult, Effort, Message, Reply, Task, TraceStep, Usage

CACHE_VERSION = 1
ZERO_USAGE = Usage(0, 0, 0, 0.0)
DEFAULT_MAX_WORKSPACE_BYTES = 8 * 1024 * 1024


def _json_default(obj: Any) -> Any:
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, set | frozenset):
        return sorted(obj, key=repr)
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, BaseModel):
        return obj.model_dump(mode="json")
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.asdict(obj)
    # Anything else has no stable spelling: the request is uncacheable (never a wrong hit).
    raise TypeError(f"cannot canonicalise {type(obj).__name__}")


def canonical_json(obj: Any) -> str:
    """One spelling per value: sorted keys, no whitespace. Raises TypeError/ValueError if none."""
    return json.dumps(
        obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False, default=_json_default
    )


def _digest(text: str) -> str:
    # surrogatepass: any str has one byte spelling, so no request or entry is ever refused for one
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def request_key(request: dict[str, Any]) -> str:
    return _digest(canonical_json({"cache_version": CACHE_VERSION, "request": request}))


def _checksum(payload: dict[str, Any]) -> str:
    return _digest(canonical_json(payload))


@dataclass
class _Claim:
    lock: threading.Lock = field(default_factory=threading.Lock)
    users: int = 0


class CallCache:
    """Key -> JSON payload on disk. Thread-safe; `enabled=False` (`--no-cache`) makes every
    lookup a miss and every store a no-op. `redact`, when given, is applied to a payload before it
    is written (the cache may live inside the run folder, which must hold no secrets)."""

    def __init__(
        self, root: Path, enabled: bool = True, *, redact: Callable[[Any], Any] | None = None
    ) -> None:
        self.root = Path(root)
        self.enabled = enabled
        self._redact = redact
        self._mutex = threading.Lock()
        self._claims: dict[str, _Claim] = {}
        self.corrupt = 0  # entries found damaged and ignored (guarded by _mutex)

    def path_for(self, key: str) -> Path:
        return self.root / key[:2] / key[2:4] / f"{key}.json"

    @contextlib.contextmanager
    def claim(self, key: str) -> Iterator[None]:
        """Hold while looking up, computing and storing `key`: identical concurrent requests wait
        for the first one instead of paying twice; different keys never wait on each other."""
        with self._mutex:
            claim = self._claims.setdefault(key, _Claim())
            claim.users += 1
        try:
            with claim.lock:
                yield
        finally:
            with self._mutex:
                claim.users -= 1
                if claim.users == 0:
                    del self._claims[key]

    def _discard(self, path: Path) -> None:
        with self._mutex:
            self.corrupt += 1
        with contextlib.suppress(OSError):
            path.unlink()

    def get(self, key: str) -> dict[str, Any] | None:
        if not self.enabled:
            return None
        path = self.path_for(key)
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError, ValueError):
            self._discard(path)
            return None
        try:
            payload = entry["payload"]
            valid = (
                entry["version"] == CACHE_VERSION
                and entry["key"] == key
                and isinstance(payload, dict)
                and entry["sha256"] == _checksum(payload)
            )
        except (KeyError, TypeError, ValueError):
            valid = False
        if not valid:
            self._discard(path)
            return None
        result: dict[str, Any] = payload
        return result

    def put(self, key: str, payload: dict[str, Any]) -> bool:
        """Store `payload`; False (nothing stored) if it cannot be spelled as JSON or written."""
        if not self.enabled:
            return False
        if self._redact is not None:
            payload = self._redact(payload)
        try:
            entry = {"version": CACHE_VERSION, "key": key, "sha256": _checksum(payload), "payload": payload}
            # ASCII on disk: every string, even one holding a lone surrogate, round-trips exactly.
            text = json.dumps(
                entry, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
            )
        except (TypeError, ValueError):
            return False
        try:
            write_text_atomic(self.path_for(key), text, fsync=False)
        except OSError:  # a full disk loses this entry, never the paid result it would hold
            return False
        return True


class CacheStats:
    """Thread-safe counters of one wrapper (shared by its `with_salt` copies)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        self.uncacheable = 0  # requests that could not be keyed or results too large to store
        self.saved = ZERO_USAGE

    def hit(self, saved: Usage) -> None:
        with self._lock:
            self.hits += 1
            self.saved = self.saved + saved

    def miss(self) -> None:
        with self._lock:
            self.misses += 1

    def skip(self) -> None:
        with self._lock:
            self.uncacheable += 1

    def bypass(self, enabled: bool) -> None:
        """A call that went straight to the inner model: unkeyable, or the cache is off."""
        if enabled:
            self.skip()
        else:
            self.miss()

    def to_json(self) -> dict[str, Any]:
        with self._lock:
            return {
                "hits": self.hits,
                "misses": self.misses,
                "uncacheable": self.uncacheable,
                "saved": self.saved.to_json(),
            }


@dataclass(frozen=True)
class CachedReply(Reply):
    """A Reply served from the cache: `usage` is zero (unpaid), `saved` the original usage."""


@dataclass
class CachedAgentResult(AgentResult):
    """An AgentResult served from the cache: `usage` is zero (unpaid), `saved` the original."""


def saved_usage(obj: Reply | AgentResult) -> Usage | None:
    """The usage a cache hit avoided paying, or None when `obj` was not served from the cache."""
    return obj.saved


# ---------------------------------------------------------------------------------------------
# chat


class CachedChatModel:
    """ChatModel wrapper: identical requests are answered from the cache (see module docstring).

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


# ---------------------------------------------------------------------------------------------
# agent


class CachedAgent:
    """Agent wrapper: a task already done with the same skill, agent and prepared workspace is
    answered from the cache (see module docstring). Error results are never stored.

    `settings` names every agent option that shapes the outcome (effort, tools, max turns, ...)."""

    def __init__(
        self,
        inner: Agent,
        cache: CallCache,
        *,
        salt: str = "",
        settings: dict[str, Any] | None = None,
        snapshot_workspace: bool = True,
        max_workspace_bytes: int = DEFAULT_MAX_WORKSPACE_BYTES,
        redact_file: Callable[[bytes], bytes] | None = None,
        stats: CacheStats | None = None,
        on_paid: Callable[[Usage], None] | None = None,
    ) -> None:
        self.inner = inner
        self.redact_file = redact_file
        self.on_paid = on_paid  # usage of each run that reached the agent, as it returns
        self.cache = cache
        self.salt = salt
        self.settings = dict(settings or {})
        self.snapshot_workspace = snapshot_workspace
        self.max_workspace_bytes = max_workspace_bytes
        self.stats = stats or CacheStats()
        self.name = inner.name
        self.model = inner.model

    def with_salt(self, salt: str) -> CachedAgent:
        """The same agent, cache and counters under another salt, for deliberate resampling."""
        twin = copy.copy(self)
        twin.salt = salt
        return twin

    def _key(self, task: Task, skill: str, workspace: Path) -> str | None:
        try:
            request = {
                "kind": "agent",
                "backend": self.name,
                "model": self.model,
                "settings": self.settings,
                "skill": skill,
                "task": task.to_json(),
                "workspace": tree_digest(workspace),
                "snapshot_workspace": self.snapshot_workspace,
                "salt": self.salt,
            }
            return request_key(request)
        except (TypeError, ValueError, OSError):
            return None

    def run(self, task: Task, skill: str, workspace: Path) -> AgentResult:
        key = self._key(task, skill, workspace) if self.cache.enabled else None
        if key is None:
            self.stats.bypass(self.cache.enabled)
            return self._paid(self.inner.run(task, skill, workspace))
        with self.cache.claim(key):
            hit = self._lookup(key, workspace)
            if hit is not None:
                return hit
            result = self._paid(self.inner.run(task, skill, workspace))
            self.stats.miss()
            if not result.is_error and not self._store(key, result, workspace):
                self.stats.skip()
            return result

    def _paid(self, result: AgentResult) -> AgentResult:
        if self.on_paid is not None:
            self.on_paid(result.usage)
        return result

    def _store(self, key: str, result: AgentResult, workspace: Path) -> bool:
        files = None
        if self.snapshot_workspace:
            try:
                files = snapshot_tree(workspace, self.max_workspace_bytes, self.redact_file)
            except OSError:
                return False
            if files is None:  # too large to keep: leave uncached rather than replay without files
                return False
        payload = {
            "answer": result.answer,
            "trace": [step.to_json() for step in result.trace],
            "usage": result.usage.to_json(),
            "raw": result.raw,
            "has_workspace": result.workspace is not None,
            "files": files,
        }
        return self.cache.put(key, payload)

    def _lookup(self, key: str, workspace: Path) -> AgentResult | None:
        payload = self.cache.get(key)
        if payload is None:
            return None
        try:
            files = payload["files"]
            if self.snapshot_workspace and not (
                isinstance(files, dict)
                and all(isinstance(v, str) and safe_relative_path(k) for k, v in files.items())
            ):
                return None
            hit = CachedAgentResult(
                answer=str(payload["answer"]),
                trace=[TraceStep.from_json(step) for step in payload["trace"]],
                usage=ZERO_USAGE,
                raw=list(payload["raw"]),
                workspace=workspace if payload["has_workspace"] else None,
                saved=Usage.from_json(payload["usage"]),
            )
        except (KeyError, TypeError, ValueError):
            return None
        if self.snapshot_workspace:
            try:
                restore_tree(workspace, files)
            except (OSError, ValueError) as exc:
                # The workspace is now half-restored: running the agent in it would be wrong, so
                # this task fails (unstored) and is retried from a fresh workspace on resume.
                return AgentResult(answer="", is_error=True, error=f"cache restore failed: {exc}")
        self.stats.hit(hit.saved or ZERO_USAGE)
        return hit
