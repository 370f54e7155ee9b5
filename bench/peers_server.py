"""Two GGUF models behind one OpenAI-compatible address on 127.0.0.1, for bench/vs_peers.py.

Each model is served by xllamacpp's own HTTP server (llama.cpp's `llama-server`, one slot) in a child
process of its own, on a port of its own; `Router` listens on one more port and forwards each
`POST .../chat/completions` to the model its body names (`"model": "target"` or `"optimizer"`, the
role names the bench gives every system). xllamacpp's parameters also carry llama.cpp's own
router-mode keys (`models_dir`, `models_preset`); the bench does not use them: a router of its own
is where each request is capped and counted the same way for every system.

The router is also where calls and tokens are counted, the same way for every system: one
`Call` per completion (role, prompt and completion tokens from the server's `usage`, the user
message), so that target calls on test items can be told from those of the search afterwards.
A request's output budget is capped per role (`caps`), as a provider caps its output: every
system's requests are cut at the same length. Sampling defaults (temperature 0) are the
server's, for a system that sends none (SkillOpt sends no temperature).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import multiprocessing
import os
import select
import socket
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

ROLES = ("target", "optimizer")


@dataclass(frozen=True)
class Call:
    role: str
    prompt_tokens: int
    completion_tokens: int
    user: str  # the last user message: which item a target call was about


@dataclass
class CallLog:
    """Every completion the router forwarded, in order; thread safe."""

    calls: list[Call] = field(default_factory=list)
    abandoned: int = 0  # requests whose client left before the reply (a client timeout)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, call: Call) -> None:
        with self._lock:
            self.calls.append(call)

    def mark(self) -> int:
        with self._lock:
            return len(self.calls)

    def since(self, mark: int) -> list[Call]:
        with self._lock:
            return list(self.calls[mark:])


def usage(
    calls: Iterable[Call], test_questions: Iterable[str] = (), search_questions: Iterable[str] = ()
) -> dict[str, int]:
    """Calls and tokens by role; target calls about a test item are counted apart (`test_calls`),
    the others are the search's (`target_calls`). A call is about the longest of the items'
    questions its user message holds: a test question may be part of a train or val one (dyck
    sequences: test "Input: { < <" inside train "Input: { < < [ ]"), and a call about that train
    item is the search's. A question both a test and a search item ask is the search's."""
    tests = {q for q in test_questions if q} - set(search_questions)
    questions = sorted(tests | {q for q in search_questions if q}, key=len, reverse=True)
    out = {"target_calls": 0, "optimizer_calls": 0, "test_calls": 0, "target_tokens": 0}
    out |= {"optimizer_tokens": 0, "test_tokens": 0}
    for call in calls:
        tokens = call.prompt_tokens + call.completion_tokens
        kind = call.role
        if call.role == "target" and next((q for q in questions if q in call.user), None) in tests:
            kind = "test"
        out[f"{kind}_calls"] += 1
        out[f"{kind}_tokens"] += tokens
    return out


def capped(body: dict[str, Any], cap: int) -> dict[str, Any]:
    """The request with its output budget at most `cap` tokens (either field the client used)."""
    out = dict(body)
    asked = [int(v) for k in ("max_tokens", "max_completion_tokens") if isinstance(v := out.get(k), int)]
    out.pop("max_completion_tokens", None)
    out["max_tokens"] = min([cap, *asked])
    return out


def last_user(body: Mapping[str, Any]) -> str:
    for message in reversed(body.get("messages") or []):
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):  # content parts
                return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
            return str(content or "")
    return ""


def _params(path: str, ctx: int, threads: int) -> Any:
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = path
    params.n_ctx = ctx
    params.n_parallel = 1
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.warmup = False
    params.verbosity = -1
    params.cache_ram_mib = 256
    params.sampling.temp = 0.0  # the default for a request that names no temperature
    params.hostnames = ["127.0.0.1"]
    params.port = 0
    params.ui = False
    params.endpoint_slots = False
    return params


def _serve(conn: Connection, path: str, ctx: int, threads: int) -> None:
    """The model process: load, report the address, stay until the pipe closes; leave by
    `os._exit` (xllamacpp's destructor can hang the interpreter, see skillgrad.backends.local)."""
    import xllamacpp

    try:
        server = xllamacpp.Server(_params(path, ctx, threads))
        conn.send({"address": server.listening_address})
    except Exception as exc:  # the runtime reports a bad file as a generic error
        conn.send({"error": str(exc)})
        os._exit(0)
    with contextlib.suppress(EOFError, OSError):
        conn.recv()
    os._exit(0)


class ModelProcess:
    """One GGUF served over HTTP by a child process; `port` is where it listens."""

    def __init__(self, path: Path, *, ctx: int, threads: int) -> None:
        spawn = multiprocessing.get_context("spawn")
        self._conn, child = spawn.Pipe()
        self._process = spawn.Process(target=_serve, args=(child, str(path), ctx, threads), daemon=True)
        self._process.start()
        child.close()
        try:
            hello = self._conn.recv() if self._conn.poll(600) else {"error": "no answer in 600 s"}
        except (EOFError, OSError):
            hello = {"error": f"the model process ended (exit {self._process.exitcode})"}
        if "error" in hello:
            self.close()
            raise SystemExit(f"{path}: the model could not be served ({hello['error']})")
        address = hello["address"]
        self.port = int(address["port"]) if isinstance(address, dict) else int(str(address).rsplit(":", 1)[1])

    def close(self) -> None:
        self._conn.close()
        self._process.join(10)
        if self._process.is_alive():
            self._process.kill()
            self._process.join(5)


class Router(ThreadingHTTPServer):
    """One address for both roles: forwards by the body's `model`, counts every call in `log`."""

    daemon_threads = True
    request_queue_size = 256

    def __init__(self, upstreams: Mapping[str, int], caps: Mapping[str, int], timeout_s: float) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.upstreams = dict(upstreams)
        self.caps = dict(caps)
        self.timeout_s = timeout_s
        self.log = CallLog()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def forward(self, body: dict[str, Any], client_gone: Callable[[], bool]) -> tuple[int, bytes] | None:
        """The upstream's reply, or None when the client left first: then the upstream connection
        is shut, so that llama.cpp's server, which watches its connections while it generates, can
        drop the task (a client that timed out and retries must not queue behind its own
        abandoned request on a one-slot server)."""
        role = str(body.get("model", ""))
        if role not in self.upstreams:
            known = ", ".join(self.upstreams)
            return 404, _error(f"model {role!r} is not served here; use one of: {known}")
        conn = http.client.HTTPConnection("127.0.0.1", self.upstreams[role], timeout=self.timeout_s)
        payload = json.dumps(capped(body, self.caps[role])).encode("utf-8")
        done: dict[str, tuple[int, bytes]] = {}

        def call() -> None:
            try:
                conn.request("POST", "/v1/chat/completions", payload, {"Content-Type": "application/json"})
                reply = conn.getresponse()
                done["reply"] = (reply.status, reply.read())
            except OSError as exc:
                done["reply"] = (502, _error(f"model {role!r}: {exc}"))

        worker = threading.Thread(target=call, daemon=True)
        worker.start()
        while worker.is_alive():
            worker.join(0.5)
            if worker.is_alive() and client_gone():
                with contextlib.suppress(OSError):
                    if conn.sock is not None:
                        conn.sock.shutdown(socket.SHUT_RDWR)
                worker.join(5)
                conn.close()
                self.log.abandoned += 1
                return None
        conn.close()
        status, data = done["reply"]
        if status == 200:
            used = json.loads(data).get("usage") or {}
            prompt, completion = int(used.get("prompt_tokens", 0)), int(used.get("completion_tokens", 0))
            self.log.add(Call(role, prompt, completion, last_user(body)))
        return status, data


def peer_closed(sock: socket.socket) -> bool:
    """Whether the client closed its end (readable with nothing to read: EOF)."""
    readable, _, _ = select.select([sock], [], [], 0)
    if not readable:
        return False
    try:
        return sock.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True


def _error(message: str) -> bytes:
    return json.dumps({"error": {"message": message, "type": "invalid_request_error"}}).encode("utf-8")


class _Handler(BaseHTTPRequestHandler):
    server: Router
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        return

    def _send(self, status: int, data: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 - the base class's name
        models = [{"id": role, "object": "model", "owned_by": "bench"} for role in self.server.upstreams]
        self._send(200, json.dumps({"object": "list", "data": models}).encode("utf-8"))

    def do_POST(self) -> None:  # noqa: N802 - the base class's name
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw)
        except json.JSONDecodeError:
            body = None
        if not isinstance(body, dict) or not self.path.endswith("/chat/completions"):
            self._send(400, _error("expected a JSON chat completion request at /v1/chat/completions"))
            return
        reply = self.server.forward(body, lambda: peer_closed(self.connection))
        if reply is not None:
            self._send(*reply)


class Served:
    """The models (by role: both, or the target alone for bench/headroom.py) and their router; a
    context manager that tears all of it down. Roles given the same file share one model process
    (one server, one slot: the bench's calls are sequential)."""

    def __init__(
        self, models: Mapping[str, Path], caps: Mapping[str, int], *, ctx: int, threads: int
    ) -> None:
        self._models: dict[str, ModelProcess] = {}  # by file: one process for roles of one model
        ports: dict[str, int] = {}
        try:
            for role in (r for r in ROLES if r in models):
                path = str(Path(models[role]).resolve())
                if path not in self._models:
                    self._models[path] = ModelProcess(models[role], ctx=ctx, threads=threads)
                ports[role] = self._models[path].port
        except BaseException:
            self.close()
            raise
        self.router = Router(ports, caps, timeout_s=1800)
        self._thread = threading.Thread(target=self.router.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        if hasattr(self, "router"):
            self.router.shutdown()
            self.router.server_close()
        for model in self._models.values():
            model.close()

    def __enter__(self) -> Served:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
