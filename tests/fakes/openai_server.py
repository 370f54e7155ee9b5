"""A scripted fake of the OpenAI Chat Completions API, for backend and end-to-end tests.

Usage::

    from tests.fakes.openai_server import ScriptedOpenAI, Request, Text, Status, sequence

    def handler(request: Request) -> Response:
        if "OPTIMIZER" in request.system:          # route on the system prompt
            return json_reply({"edits": []})
        return Text("Paris", usage=(12, 1))

    with ScriptedOpenAI(handler) as server:
        cfg.model.base_url = server.base_url      # "http://127.0.0.1:PORT/v1"
        ...
        assert len(server.requests) == 2

A handler receives a `Request`: the parsed JSON body as a dict (`request["messages"]`,
`request.get("response_format")`, `request["model"]`), plus `request.path`, `request.headers`
and shortcuts `request.system` / `request.user` (text of the first system / last user message).
It returns a `Text` (a normal completion), a `Status` (an OpenAI-style HTTP error) or a `Raw`
(any body, e.g. malformed JSON). `sequence(...)` scripts replies in order.

End-to-end tests of `skillgrad` as a subprocess start this server in-process (it serves from a
background thread of the pytest process) and pass `server.base_url` to the subprocess, e.g. with
`--set model.base_url=...`; no separate server process is needed.

Every response carries `retry-after-ms: 1` so retries of 429/5xx are instant. A delayed reply
(`delay_s`) is not sent once the client hung up (it timed out): `server.abandoned` counts those,
`server.max_open` is the most requests a client had open at once (received, neither answered nor
hung up), `server.answered` the replies sent, by status code.
The server listens on 127.0.0.1 only, on a free port. A handler that raises answers HTTP 500 with
`x-should-retry: false` (so the SDK does not retry it), and the exception is re-raised as
`HandlerError` when the `with` block ends (see `ScriptedOpenAI.errors`).
"""

from __future__ import annotations

import itertools
import json
import select
import socket
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from types import TracebackType
from typing import Any

from tests.fakes.local_http import JsonHandler, LocalServer, script

FAST_RETRY_HEADERS: dict[str, str] = {"retry-after-ms": "1"}
_ids = itertools.count(1)


class Request(dict[str, Any]):
    """The parsed JSON body of one request, with its path and headers as attributes."""

    def __init__(self, body: Mapping[str, Any], path: str = "", headers: Mapping[str, str] | None = None):
        super().__init__(body)
        self.path = path
        self.headers: dict[str, str] = {k.lower(): v for k, v in (headers or {}).items()}

    @property
    def messages(self) -> list[dict[str, Any]]:
        messages = self.get("messages")
        return messages if isinstance(messages, list) else []

    def _texts(self, role: str) -> list[str]:
        return [_content_text(m.get("content")) for m in self.messages if m.get("role") == role]

    @property
    def system(self) -> str:
        """Text of the first system (or developer) message; "" when there is none."""
        texts = self._texts("system") or self._texts("developer")
        return texts[0] if texts else ""

    @property
    def user(self) -> str:
        """Text of the last user message; "" when there is none."""
        texts = self._texts("user")
        return texts[-1] if texts else ""

    @property
    def response_format(self) -> dict[str, Any] | None:
        value = self.get("response_format")
        return value if isinstance(value, dict) else None


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


@dataclass(frozen=True)
class Text:
    """A successful completion whose assistant message is `content`.

    `usage` is (prompt_tokens, completion_tokens); None estimates both at ~4 characters a token.
    """

    content: str
    usage: tuple[int, int] | None = None
    finish_reason: str = "stop"
    delay_s: float = 0.0
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Status:
    """An HTTP error with an OpenAI-style `{"error": {...}}` body."""

    code: int
    message: str = ""
    type: str = "fake_error"
    delay_s: float = 0.0
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Raw:
    """Any body as-is (malformed JSON, HTML error pages, ...)."""

    body: str | bytes
    code: int = 200
    content_type: str = "application/json"
    delay_s: float = 0.0
    headers: Mapping[str, str] = field(default_factory=dict)


Response = Text | Status | Raw
Handler = Callable[[Request], Response]


class HandlerError(AssertionError):
    """A scripted handler raised; the fake server answered 500 and recorded it."""


# ---------------------------------------------------------------------------------------------
# helper constructors


def text(content: str, prompt_tokens: int | None = None, completion_tokens: int | None = None) -> Text:
    usage = None if prompt_tokens is None else (prompt_tokens, completion_tokens or 0)
    return Text(content, usage=usage)


def json_reply(obj: Any, usage: tuple[int, int] | None = None) -> Text:
    """A completion whose content is `obj` serialized as JSON."""
    return Text(json.dumps(obj), usage=usage)


def rate_limited(message: str = "Rate limit reached (fake)") -> Status:
    return Status(429, message, type="rate_limit_error")


def server_error(code: int = 500, message: str = "The server had an error (fake)") -> Status:
    return Status(code, message, type="server_error")


def unauthorized(message: str = "Incorrect API key provided (fake)") -> Status:
    return Status(401, message, type="invalid_request_error")


def bad_request(message: str, param: str | None = None) -> Status:
    return Status(400, message if param is None else f"{message} (param: {param})", "invalid_request_error")


def malformed(body: str = '{"choices": [ this is not json') -> Raw:
    return Raw(body)


def sequence(*responses: Response | Handler, repeat_last: bool = True) -> Handler:
    """A handler answering with `responses` in order (thread-safe); each item may be a handler.

    After the last one, it repeats the last (default) or answers HTTP 500 "script exhausted".
    """
    take = script(responses, repeat_last=repeat_last)

    def handler(request: Request) -> Response:
        item = take()
        if item is None:
            return Status(500, f"fake script exhausted after {len(responses)} responses")
        return item if isinstance(item, Text | Status | Raw) else item(request)

    return handler


# ---------------------------------------------------------------------------------------------
# wire format


def completion_body(request: Request, reply: Text) -> dict[str, Any]:
    """A `chat.completion` object for `reply`, echoing the requested model."""
    if reply.usage is not None:
        prompt_tokens, completion_tokens = reply.usage
    else:
        prompt_chars = sum(len(_content_text(m.get("content"))) for m in request.messages)
        prompt_tokens, completion_tokens = prompt_chars // 4 + 1, len(reply.content) // 4 + 1
    return {
        "id": f"chatcmpl-fake-{next(_ids)}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": str(request.get("model", "fake-model")),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": reply.content, "refusal": None},
                "logprobs": None,
                "finish_reason": reply.finish_reason,
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def error_body(status: Status) -> dict[str, Any]:
    message = status.message or f"fake HTTP {status.code}"
    return {"error": {"message": message, "type": status.type, "param": None, "code": None}}


def encode(request: Request, response: Response) -> tuple[int, str, bytes]:
    """(HTTP status, content type, body bytes) of a scripted response."""
    if isinstance(response, Text):
        return 200, "application/json", json.dumps(completion_body(request, response)).encode()
    if isinstance(response, Status):
        return response.code, "application/json", json.dumps(error_body(response)).encode()
    body = response.body.encode() if isinstance(response.body, str) else response.body
    return response.code, response.content_type, body


# ---------------------------------------------------------------------------------------------
# server


class ScriptedOpenAI:
    """The fake server: `with ScriptedOpenAI(handler) as server: ... server.base_url ...`.

    `handler` may be replaced at any time (`server.handler = ...`). `requests` is a snapshot of
    every chat-completions request received so far, in arrival order.
    """

    def __init__(self, handler: Handler, *, raise_handler_errors: bool = True) -> None:
        self.handler = handler
        self.raise_handler_errors = raise_handler_errors
        self._lock = threading.Lock()
        self._requests: list[Request] = []
        self._errors: list[str] = []
        self._server: LocalServer | None = None
        self._open = 0
        self.max_open = 0  # the most requests open at once (see the module docstring)
        self.abandoned = 0  # delayed replies never sent: the client had hung up
        self.answered: dict[int, int] = {}  # HTTP status -> replies sent

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> ScriptedOpenAI:
        self._server = LocalServer(_make_request_handler(self), "fake-openai")
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
        self._server = None

    def __enter__(self) -> ScriptedOpenAI:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
        if not (self.raise_handler_errors and self._errors):
            return
        detail = "the fake OpenAI handler raised:\n" + "\n".join(self._errors)
        if exc is None:
            raise HandlerError(detail)
        exc.add_note(detail)  # the test already failed; say why the server answered 500

    # -- observation ---------------------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the fake OpenAI server is not running")
        return self._server.port

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def requests(self) -> list[Request]:
        with self._lock:
            return list(self._requests)

    @property
    def errors(self) -> list[str]:
        """Tracebacks of handler exceptions (each answered with HTTP 500)."""
        with self._lock:
            return list(self._errors)

    def clear(self) -> None:
        with self._lock:
            self._requests.clear()
            self._errors.clear()

    def __iter__(self) -> Iterator[Request]:
        return iter(self.requests)

    # -- dispatch (called from server threads) ---------------------------------------------------

    def _record(self, request: Request) -> None:
        with self._lock:
            self._requests.append(request)
            self._open += 1
            self.max_open = max(self.max_open, self._open)

    def _closed(self, status: int | None) -> None:
        """One open request ended: answered with `status`, or (None) abandoned by its client."""
        with self._lock:
            self._open -= 1
            if status is None:
                self.abandoned += 1
            else:
                self.answered[status] = self.answered.get(status, 0) + 1

    def _respond(self, request: Request) -> Response:
        if request.get("stream"):
            return bad_request("stream=true is not supported by the fake server", "stream")
        try:
            return self.handler(request)
        except Exception:
            with self._lock:
                self._errors.append(traceback.format_exc())
            return Status(500, "fake handler raised", headers={"x-should-retry": "false"})


def _make_request_handler(server: ScriptedOpenAI) -> type[BaseHTTPRequestHandler]:
    class _Handler(JsonHandler):
        def _send(self, code: int, content_type: str, body: bytes, headers: Mapping[str, str]) -> None:
            self.send_body(code, content_type, body, {**FAST_RETRY_HEADERS, **headers})

        def _not_found(self) -> None:
            body = json.dumps(error_body(Status(404, f"no route {self.command} {self.path} (fake)")))
            self._send(404, "application/json", body.encode(), {})

        def do_GET(self) -> None:  # noqa: N802 - stdlib naming
            if self.path.rstrip("/") == "/v1/models":
                model = {"id": "fake-model", "object": "model", "owned_by": "fake"}
                data = {"object": "list", "data": [model]}
                self._send(200, "application/json", json.dumps(data).encode(), {})
            else:
                self._not_found()

        def do_POST(self) -> None:  # noqa: N802 - stdlib naming
            body = self.read_json_object()
            if self.route() != "/v1/chat/completions":
                self._not_found()
                return
            if body is None:
                reply = bad_request("the request body is not a JSON object (fake)")
                self._send(*encode(Request({}), reply), reply.headers)
                return
            request = Request(body, self.path, dict(self.headers.items()))
            server._record(request)
            response = server._respond(request)
            if response.delay_s and self._client_hangs_up_within(response.delay_s):
                server._closed(None)
                self.close_connection = True
                return
            status, content_type, payload = encode(request, response)
            server._closed(status)
            self._send(status, content_type, payload, response.headers)

        def _client_hangs_up_within(self, delay_s: float) -> bool:
            """Wait `delay_s`; True as soon as the client closes its end (it timed out)."""
            deadline = time.monotonic() + delay_s
            while (left := deadline - time.monotonic()) > 0:
                readable, _, _ = select.select([self.connection], [], [], min(left, 0.05))
                if readable:
                    try:
                        if self.connection.recv(1, socket.MSG_PEEK) == b"":
                            return True
                    except OSError:
                        return True
                    time.sleep(min(left, 0.01))  # bytes of a next request (none are pipelined)
            return False

    return _Handler
