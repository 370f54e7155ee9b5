"""A scripted fake of the Anthropic Messages API on 127.0.0.1, for the real Claude Code CLI and SDK.

Usage:

    def handler(req: FakeRequest) -> FakeReply:
        if not req.tool_results():
            return tool_use("Bash", {"command": "echo hi"})
        return text("done")

    with FakeAnthropic(handler) as api:
        env = {"ANTHROPIC_BASE_URL": api.base_url, ...}
        ...
    api.requests  # every recorded FakeRequest

Serves POST /v1/messages (any query string, e.g. `?beta=true`) as streaming SSE when the body says
`"stream": true`, else as one JSON message. Everything in the request it does not need (thinking,
context_management, output_config, metadata, cache_control, tools, a `role: "system"` message) is
accepted and ignored; the handler sees the whole parsed body. A reply can inject an HTTP error
status (429 / 500 ...) or a stream cut after its first content block.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from tests.fakes.local_http import JsonHandler, LocalHTTPServer

_ids = itertools.count(1)


@dataclass
class FakeReply:
    """One scripted model turn. `content` holds Messages-API blocks (text / tool_use)."""

    content: list[dict[str, Any]] = field(default_factory=list)
    stop_reason: str | None = None  # default: tool_use when a tool_use block is present, else end_turn
    input_tokens: int = 10
    output_tokens: int = 5
    status: int = 200  # != 200: answer with this HTTP error instead
    cut_stream: bool = False  # streaming only: drop the connection after the first content block

    def final_stop_reason(self) -> str:
        if self.stop_reason:
            return self.stop_reason
        return "tool_use" if any(b.get("type") == "tool_use" for b in self.content) else "end_turn"


def text(value: str, **kw: Any) -> FakeReply:
    return FakeReply([{"type": "text", "text": value}], **kw)


def tool_use(name: str, tool_input: dict[str, Any], *, say: str | None = None, **kw: Any) -> FakeReply:
    """A tool call, optionally preceded by a text block."""
    block = {"type": "tool_use", "id": f"toolu_fake_{next(_ids):04d}", "name": name, "input": tool_input}
    blocks = ([{"type": "text", "text": say}] if say else []) + [block]
    return FakeReply(blocks, **kw)


def http_error(status: int) -> FakeReply:
    return FakeReply(status=status)


def _block_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"
        )
    return ""


@dataclass
class FakeRequest:
    """A recorded request with helpers for handlers that branch on the conversation so far."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream"))

    @property
    def messages(self) -> list[dict[str, Any]]:
        msgs = self.body.get("messages") or []
        return [m for m in msgs if isinstance(m, dict)]

    def system_text(self) -> str:
        """The top-level system prompt plus any `role: "system"` messages (the CLI sends both)."""
        parts = [_block_text(self.body.get("system"))]
        parts += [_block_text(m.get("content")) for m in self.messages if m.get("role") == "system"]
        return "\n".join(p for p in parts if p)

    def user_text(self) -> str:
        """All user text (prompts, not tool results), joined: where task markers are found."""
        return "\n".join(_block_text(m.get("content")) for m in self.messages if m.get("role") == "user")

    def last_user_text(self) -> str:
        users = [m for m in self.messages if m.get("role") == "user"]
        return _block_text(users[-1].get("content")) if users else ""

    def tool_results(self) -> list[dict[str, Any]]:
        """Every tool_result block sent so far, oldest first: {tool_use_id, text, is_error}."""
        out = []
        for m in self.messages:
            content = m.get("content")
            if m.get("role") != "user" or not isinstance(content, list):
                continue
            for b in content:
                if isinstance(b, dict) and b.get("type") == "tool_result":
                    out.append(
                        {
                            "tool_use_id": b.get("tool_use_id"),
                            "text": _block_text(b.get("content")),
                            "is_error": bool(b.get("is_error")),
                        }
                    )
        return out

    def tool_names(self) -> list[str]:
        return [t.get("name", "") for t in self.body.get("tools") or [] if isinstance(t, dict)]

    def structured_schema(self) -> dict[str, Any] | None:
        """The JSON schema the caller asked for: Claude Code's StructuredOutput tool or output_config."""
        for tool in self.body.get("tools") or []:
            if isinstance(tool, dict) and tool.get("name") == "StructuredOutput":
                schema = tool.get("input_schema")
                return schema if isinstance(schema, dict) else {}
        fmt = (self.body.get("output_config") or {}).get("format") or self.body.get("output_format")
        if isinstance(fmt, dict) and isinstance(fmt.get("schema"), dict):
            return dict(fmt["schema"])
        return None

    def assistant_turns(self) -> int:
        return sum(1 for m in self.messages if m.get("role") == "assistant")


Handler = Callable[[FakeRequest], FakeReply]


class FakeReplyList:
    """A handler that answers with `replies` in order, repeating the last one when they run out."""

    def __init__(self, replies: list[FakeReply]) -> None:
        self._replies = list(replies)
        self._lock = threading.Lock()
        self.served = 0

    def __call__(self, req: FakeRequest) -> FakeReply:
        with self._lock:
            reply = self._replies[min(self.served, len(self._replies) - 1)]
            self.served += 1
            return reply


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def _message(model: str, reply: FakeReply, content: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": f"msg_fake_{next(_ids):06d}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": reply.input_tokens, "output_tokens": 1},
    }


def _stream_events(model: str, reply: FakeReply) -> Iterator[bytes]:
    yield _sse("message_start", {"type": "message_start", "message": _message(model, reply, [])})
    for index, block in enumerate(reply.content):
        if block.get("type") == "tool_use":
            start = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block.get("input", {}))}
        else:
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block.get("text", "")}
        yield _sse(
            "content_block_start", {"type": "content_block_start", "index": index, "content_block": start}
        )
        yield _sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
        if reply.cut_stream:
            return  # the caller sees the connection drop mid-message
        yield _sse("content_block_stop", {"type": "content_block_stop", "index": index})
    delta_event = {
        "type": "message_delta",
        "delta": {"stop_reason": reply.final_stop_reason(), "stop_sequence": None},
        "usage": {"output_tokens": reply.output_tokens},
    }
    yield _sse("message_delta", delta_event)
    yield _sse("message_stop", {"type": "message_stop"})


_ERROR_TYPES = {429: "rate_limit_error", 529: "overloaded_error", 400: "invalid_request_error"}


class _Handler(JsonHandler):
    server: _Server

    def _send_json(self, status: int, payload: dict[str, Any], extra: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("request-id", f"req_fake_{next(_ids):06d}")
        for key, value in (extra or {}).items():
            self.send_header(key, value)
        self.end_headers()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client gave up
            self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 - http.server naming
        self._send_json(404, {"type": "error", "error": {"type": "not_found_error", "message": self.path}})

    def do_HEAD(self) -> None:  # noqa: N802
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:  # noqa: N802
        body = self.read_json_object()
        if body is None:  # not JSON, or cut short by a dying client: no request to record
            error = {"type": "invalid_request_error", "message": "the body is not a JSON object (fake)"}
            self._send_json(400, {"type": "error", "error": error})
            return
        req = FakeRequest(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
        self.server.record(req)
        if not self.path.split("?")[0].rstrip("/").endswith("/v1/messages"):
            self._send_json(
                404, {"type": "error", "error": {"type": "not_found_error", "message": self.path}}
            )
            return
        try:
            reply = self.server.handler(req)
        except Exception as exc:  # a broken test handler must show up as a 500, not a hang
            self.server.handler_errors.append(repr(exc))
            reply = http_error(500)
        model = str(body.get("model") or "claude-fake")
        if reply.status != 200:
            kind = _ERROR_TYPES.get(reply.status, "api_error")
            payload = {"type": "error", "error": {"type": kind, "message": f"injected {reply.status}"}}
            self._send_json(reply.status, payload, {"retry-after-ms": "10", "retry-after": "0"})
            return
        if not req.stream:
            message = _message(model, reply, reply.content)
            message["stop_reason"] = reply.final_stop_reason()
            message["usage"] = {"input_tokens": reply.input_tokens, "output_tokens": reply.output_tokens}
            self._send_json(200, message)
            return
        self._stream(model, reply)

    def _stream(self, model: str, reply: FakeReply) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.send_header("request-id", f"req_fake_{next(_ids):06d}")
        self.end_headers()
        self.close_connection = True  # the body ends when the connection closes (no length, no chunks)
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client gave up
            for chunk in _stream_events(model, reply):
                self.wfile.write(chunk)
                self.wfile.flush()


class _Server(LocalHTTPServer):  # its listen backlog
    daemon_threads = True

    def __init__(self, handler: Handler) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.handler = handler
        self.requests: list[FakeRequest] = []
        self.handler_errors: list[str] = []
        self._lock = threading.Lock()

    def record(self, req: FakeRequest) -> None:
        with self._lock:
            self.requests.append(req)


class FakeAnthropic:
    """Context manager running the fake API in a thread; `base_url` is for ANTHROPIC_BASE_URL."""

    def __init__(self, handler: Handler) -> None:
        self._server = _Server(handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def requests(self) -> list[FakeRequest]:
        return list(self._server.requests)

    @property
    def message_requests(self) -> list[FakeRequest]:
        return [r for r in self.requests if r.path.split("?")[0].rstrip("/").endswith("/v1/messages")]

    @property
    def handler_errors(self) -> list[str]:
        """repr of every exception a handler raised (each was answered with a 500)."""
        return list(self._server.handler_errors)

    def set_handler(self, handler: Handler) -> None:
        self._server.handler = handler

    def __enter__(self) -> FakeAnthropic:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def cli_env(api: FakeAnthropic, **extra: str) -> dict[str, str]:
    """Environment for a Claude Code CLI talking only to `api` (passed via ClaudeAgentOptions.env)."""
    return {
        "ANTHROPIC_BASE_URL": api.base_url,
        "ANTHROPIC_API_KEY": "sk-ant-fake-key",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        **extra,
    }
