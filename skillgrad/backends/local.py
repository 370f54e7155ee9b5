"""The `local` backend: a GGUF model on xllamacpp (prebuilt llama.cpp), both roles.

- One loaded model per (file, context size, threads), shared by every role that uses that file:
  `LocalFactory` keeps the runtimes in a weak cache, so the model is loaded once and unloaded when
  the last chat object using it goes away.
- The model runs in a child process of its own (see `LocalRuntime`: unloading it in-process can
  deadlock the interpreter), a fresh interpreter that never imports the caller's `__main__`
  (`local_process`), so a script needs no `if __name__ == "__main__":` guard. The trainer's
  worker threads call `complete()` concurrently and the requests go to it one at a time. One
  slot: on a small CPU box extra parallel slots add no throughput and split the context.
- With a schema, decoding is constrained to the JSON schema (llama.cpp's LLGuidance), and the reply
  still goes through `structured.complete_structured`, so data is validated like every backend's.
- Usage comes from the runtime's token counts; cost is 0.0. Per-chat `stats()` reports tokens/s.

Error contract (base.py): a failed request raises `BackendError` (a context overflow names
`model.local_ctx`); a bad model file or one too large for memory raises `UserError` at creation.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import threading
import weakref
from dataclasses import dataclass, replace
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from skillgrad.backends.common import says_prompt_too_long
from skillgrad.backends.interface import CallMeter
from skillgrad.backends.local_models import (
    DEFAULT_CACHE_DIR,
    check_fits_memory,
    check_gguf,
    hub_parts,
    model_identity,
    resolve_model_value,
)
from skillgrad.backends.local_process import child_command
from skillgrad.backends.sentences import whole_sentences
from skillgrad.backends.structured import complete_structured
from skillgrad.config import Config
from skillgrad.errors import BackendError, PromptTooLong, UserError
from skillgrad.lazy import lazy_import
from skillgrad.values import Effort, Message, Reply, Role, Usage

# The runtime must be installed (ImportError now, so the registry reports it missing); only the
# model process (local_process) imports it.
lazy_import("xllamacpp")

NAME = "local"
# Small models loop ("... order 62566. The refund ... order 62566. ...") until max_tokens, which cuts
# the JSON. Decoding is constrained to a copy of the schema whose free strings and arrays are bounded
# so that the longest possible reply fits in max_tokens: every reply closes. The reply is still
# validated against the caller's own schema.
MAX_DECODED_STRING_CHARS = 240
MIN_DECODED_STRING_CHARS = 16
MAX_DECODED_ARRAY_ITEMS = 8
_CHARS_PER_TOKEN = 2.5  # conservative: small models' free text tokenizes poorly
_TOKENS_PER_FIELD = 10  # key, quotes, separators and indentation around one string value
_REPEAT_PENALTY = 1.1  # discourages those loops in free text; the grammar keeps the JSON shape


def _is_free_string(node: dict[str, Any]) -> bool:
    plain = node.get("type") == "string" and not any(k in node for k in ("enum", "const", "pattern"))
    return plain and "format" not in node


def _bound(schema: Any, max_chars: int) -> Any:
    if isinstance(schema, list):
        return [_bound(s, max_chars) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _bound(v, max_chars) for k, v in schema.items()}
    if _is_free_string(out):
        out["maxLength"] = min(int(out.get("maxLength", max_chars)), max_chars)
    if out.get("type") == "array":
        out["maxItems"] = min(int(out.get("maxItems", MAX_DECODED_ARRAY_ITEMS)), MAX_DECODED_ARRAY_ITEMS)
    return out


def _string_slots(schema: Any) -> int:
    """How many free strings a reply to an already-bounded schema can hold at most."""
    if isinstance(schema, list):
        return sum(_string_slots(s) for s in schema)
    if not isinstance(schema, dict):
        return 0
    if _is_free_string(schema):
        return 1
    if "anyOf" in schema:  # one branch is generated, so the longest branch bounds the reply
        return max((_string_slots(s) for s in schema["anyOf"]), default=0)
    inner = sum(_string_slots(v) for k, v in schema.items() if k != "items")
    if schema.get("type") == "array" and "items" in schema:
        inner += int(schema.get("maxItems", MAX_DECODED_ARRAY_ITEMS)) * _string_slots(schema["items"])
    return inner


def bounded_schema(schema: dict[str, Any], max_tokens: int) -> dict[str, Any]:
    """A copy of `schema` whose arrays hold at most MAX_DECODED_ARRAY_ITEMS and whose free strings
    are short enough that a reply with every string full still fits in `max_tokens`."""
    shaped: dict[str, Any] = _bound(schema, MAX_DECODED_STRING_CHARS)
    slots = max(1, _string_slots(shaped))
    budget = (max_tokens - _TOKENS_PER_FIELD * slots - 16) * _CHARS_PER_TOKEN / slots
    chars = max(MIN_DECODED_STRING_CHARS, min(MAX_DECODED_STRING_CHARS, int(budget)))
    bounded: dict[str, Any] = _bound(shaped, chars)
    return bounded


@dataclass(frozen=True)
class Stats:
    """Token counts and runtime-measured milliseconds of prompt processing and generation."""

    calls: int = 0
    prompt_tokens: int = 0
    prompt_ms: float = 0.0
    generated_tokens: int = 0
    generated_ms: float = 0.0

    def __add__(self, other: Stats) -> Stats:
        return Stats(
            self.calls + other.calls,
            self.prompt_tokens + other.prompt_tokens,
            self.prompt_ms + other.prompt_ms,
            self.generated_tokens + other.generated_tokens,
            self.generated_ms + other.generated_ms,
        )

    @property
    def prompt_tokens_per_s(self) -> float:
        return 1000.0 * self.prompt_tokens / self.prompt_ms if self.prompt_ms else 0.0

    @property
    def generation_tokens_per_s(self) -> float:
        return 1000.0 * self.generated_tokens / self.generated_ms if self.generated_ms else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "prompt_tokens": self.prompt_tokens,
            "prompt_ms": round(self.prompt_ms, 1),
            "generated_tokens": self.generated_tokens,
            "generated_ms": round(self.generated_ms, 1),
            "prompt_tokens_per_s": round(self.prompt_tokens_per_s, 1),
            "generation_tokens_per_s": round(self.generation_tokens_per_s, 1),
        }


def _error_message(error: Any) -> str:
    if isinstance(error, dict):
        return str(error.get("message") or error)
    return str(error)


class LocalRuntime:
    """One loaded GGUF model, served by a child process of its own. Thread safe: requests are
    sent one at a time over a socket (the model has one slot anyway).

    Why a process: xllamacpp's `Server` destructor joins its worker thread while holding the GIL
    and can wait for ever (seen on a busy machine), freezing the whole interpreter, timeouts
    included. The child never runs that destructor: when the runtime is closed or garbage collected
    its socket closes and the child leaves with `os._exit`, and a child that does not leave in time
    is killed. A crash inside llama.cpp ends the child, not the run: the call raises BackendError."""

    def __init__(self, path: Path, *, ctx: int, threads: int) -> None:
        self.path = path
        self.ctx = ctx
        self.threads = threads
        self._lock = threading.Lock()
        ours, theirs = socket.socketpair()
        try:
            command = child_command(theirs.fileno(), path, ctx, threads)
            self._process = subprocess.Popen(command, pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL)
        except OSError as exc:
            ours.close()
            raise BackendError(f"{NAME}: cannot start the model process ({exc})") from None
        finally:
            theirs.close()
        self._conn = Connection(ours.detach())
        self._finalizer = weakref.finalize(self, _shutdown, self._conn, self._process)
        hello = self._receive()
        if "load_error" in hello:
            self.close()
            raise UserError(
                f"model.local_model {str(path)!r}: the runtime could not load it ({hello['load_error']})"
            )

    def close(self) -> None:
        """Unload the model now (otherwise when the runtime is garbage collected)."""
        self._finalizer()

    def _receive(self) -> dict[str, Any]:
        try:
            message: dict[str, Any] = self._conn.recv()
        except (EOFError, OSError):
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._process.wait(5)
            raise BackendError(
                f"{NAME}: the model process ended unexpectedly (exit {self._process.returncode})"
            ) from None
        return message

    def chat(self, request: dict[str, Any]) -> tuple[str, Usage, Stats]:
        """One chat completion. Raises BackendError for a refused or failed request."""
        with self._lock:
            try:
                self._conn.send(request)
            except (OSError, ValueError):
                raise BackendError(f"{NAME}: the model process is not running") from None
            reply = self._receive()
        if "refused" in reply:
            raise BackendError(f"{NAME}: request refused by the runtime: {reply['refused']}")
        result = reply.get("result")
        if not isinstance(result, dict) or "error" in result:
            message = _error_message(result.get("error") if isinstance(result, dict) else result)
            if says_prompt_too_long(message):
                raise PromptTooLong(f"{NAME}: {message}; raise model.local_ctx or shorten the prompt")
            raise BackendError(f"{NAME}: {message}")
        text = str(result["choices"][0]["message"].get("content") or "")
        used = result.get("usage", {})
        usage = Usage(int(used.get("prompt_tokens", 0)), int(used.get("completion_tokens", 0)), 1, 0.0)
        t = result.get("timings", {})
        stats = Stats(
            1,
            int(t.get("prompt_n", 0)),
            float(t.get("prompt_ms", 0.0)),
            int(t.get("predicted_n", 0)),
            float(t.get("predicted_ms", 0.0)),
        )
        return text, usage, stats


def _shutdown(conn: Connection, process: subprocess.Popen[bytes]) -> None:
    conn.close()  # the child sees EOF and leaves
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(5)


class LocalChat:
    """ChatModel over a shared LocalRuntime. `stats()` covers this chat object's calls only."""

    name = NAME

    def __init__(
        self,
        runtime: LocalRuntime,
        *,
        role: Role,
        max_tokens: int,
        temperature: float,
        json_retries: int,
    ) -> None:
        self.runtime = runtime
        self.role = role
        self.model = runtime.path.name
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.json_retries = json_retries
        self.meter: CallMeter | None = None  # MeteredModel: re-asks reserved through the run's budget
        self._stats = Stats()
        self._lock = threading.Lock()

    def stats(self) -> Stats:
        with self._lock:
            return replace(self._stats)

    def _call(self, messages: list[Message], schema: dict[str, Any] | None) -> tuple[str, Usage]:
        request: dict[str, Any] = {
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
        }
        bounded = None if schema is None else bounded_schema(schema, self.max_tokens)
        if bounded is not None:
            request["json_schema"] = bounded
            request["repeat_penalty"] = _REPEAT_PENALTY
        text, usage, stats = self.runtime.chat(request)
        if bounded is not None:  # a string the bound closed ends at a whole sentence (or its edit goes)
            text = whole_sentences(text, bounded)
        with self._lock:
            self._stats = self._stats + stats
        return text, usage

    def complete(
        self,
        messages: list[Message],
        *,
        schema: dict[str, Any] | None = None,
        effort: Effort | None = None,
        stage: str,
    ) -> Reply:
        """`effort` is ignored: the local models have no reasoning-effort setting."""
        return complete_structured(
            lambda convo: self._call(convo, schema),
            messages,
            schema,
            backend=NAME,
            stage=stage,
            retries=self.json_retries,
            meter=self.meter,
        )


class LocalFactory:
    """Builds LocalChat objects; runtimes are shared per (file, ctx, threads) while in use."""

    def __init__(self, cache_dir: Path = DEFAULT_CACHE_DIR) -> None:
        self.cache_dir = cache_dir
        self._runtimes: weakref.WeakValueDictionary[tuple[str, int, int], LocalRuntime] = (
            weakref.WeakValueDictionary()
        )
        self._lock = threading.Lock()

    def runtime(self, path: Path, *, ctx: int, threads: int) -> LocalRuntime:
        key = (str(path.resolve()), ctx, threads)
        with self._lock:
            found = self._runtimes.get(key)
            if found is not None:
                return found
            check_fits_memory(path)
            runtime = LocalRuntime(path, ctx=ctx, threads=threads)
            self._runtimes[key] = runtime
            return runtime

    def model_path(self, cfg: Config, role: Role) -> Path:
        value, key = _role_value(cfg, role)
        return resolve_model_value(value, cfg, self.cache_dir, key=key)

    def create_chat(self, cfg: Config, role: Role) -> LocalChat:
        path = self.model_path(cfg, role)
        runtime = self.runtime(path, ctx=cfg.model.local_ctx, threads=cfg.model.local_threads)
        return LocalChat(
            runtime,
            role=role,
            max_tokens=cfg.model.max_output_tokens_for(role),
            temperature=cfg.model.temperature,
            json_retries=cfg.model.json_retries,
        )


def _role_value(cfg: Config, role: Role) -> tuple[str | None, str]:
    """The model value a local role uses and the config key it came from."""
    own = cfg.model.model_for(role)
    return (own, f"model.{role}_model") if own else (cfg.model.local_model, "model.local_model")


def availability(cfg: Config) -> tuple[bool, str]:
    """xllamacpp imported (else the registry reports it); a path-form model must be a GGUF file.
    No network: the default model and hub ids are fetched on first use."""
    roles: tuple[Role, ...] = ("optimizer", "target")
    for role in roles:
        if cfg.model.backend_for(role) != NAME:
            continue
        value, key = _role_value(cfg, role)
        try:
            if value and hub_parts(value, key=key) is None:
                check_gguf(cfg.resolve_path(value), value, key=key)
        except UserError as exc:
            return False, str(exc)
    return True, ""


def identity(cfg: Config, role: Role) -> dict[str, Any]:
    """The model a role loads (`local_models.model_identity`): two `model.gguf` never share an answer."""
    value, key = _role_value(cfg, role)
    return {**model_identity(cfg, value, key), "ctx": cfg.model.local_ctx, "threads": cfg.model.local_threads}


def new_run_state() -> LocalFactory:
    """One factory per run: both roles get the same loaded model when they use the same file."""
    return LocalFactory()


def create_chat(cfg: Config, role: Role, factory: LocalFactory | None = None) -> LocalChat:
    return (factory or LocalFactory()).create_chat(cfg, role)
