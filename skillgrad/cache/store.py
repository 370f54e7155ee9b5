"""The call cache's store: canonical request keys, one checksummed JSON file per key, per-key
claims for identical concurrent requests, and the hit / miss counters (see `skillgrad.cache`)."""

from __future__ import annotations

import contextlib
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
from skillgrad.values import Usage

# The spelling of a key and an entry. Raised whenever what a key holds changes, so no entry written
# under the old meaning is ever read: 2 = the model's identity, the templates and every setting of
# `skillgrad.cache.keys` (1 keyed a local model by its file name and no template).
CACHE_VERSION = 2
ZERO_USAGE = Usage(0, 0, 0, 0.0)


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
