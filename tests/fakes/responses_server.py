"""A scripted fake of the OpenAI Responses API (`POST /v1/responses`, streamed as SSE), for the
Codex CLI tests. The pinned Codex CLI speaks only the Responses wire API to custom providers.

Usage::

    from tests.fakes.responses_server import ScriptedResponses, Reply, message, shell

    def handler(request: ResponsesRequest) -> Reply | Status:
        if not request.tool_outputs:
            return Reply([shell("cat task.md")])
        return Reply([message("Paris")], usage=(40, 2))

    with ScriptedResponses(handler) as server:
        ...  # point the CLI at server.base_url ("http://127.0.0.1:PORT/v1")
        assert server.requests[0].developer_text

A handler gets a `ResponsesRequest` (the parsed JSON body, with shortcuts for the developer and
user texts, the tool outputs sent back so far and the requested JSON schema) and returns a `Reply`
(output items streamed as `response.output_item.done` events, then `response.completed` with the
usage), a `Status` (an HTTP error with an OpenAI-style body) or a `Hang` (never answers, for
timeouts). A handler that raises answers HTTP 400 (the CLI does not retry it) and is re-raised as
`HandlerError` when the `with` block ends. The server listens on 127.0.0.1 only, on a free port.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from types import TracebackType
from typing import Any

from tests.fakes.local_http import JsonHandler, LocalServer, script

_ids = itertools.count(1)


class HandlerError(AssertionError):
    """A scripted handler raised; the fake server answered 400 and recorded it."""


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


class ResponsesRequest(dict[str, Any]):
    """The parsed JSON body of one `POST /v1/responses`, with its headers."""

    def __init__(self, body: Mapping[str, Any], headers: Mapping[str, str] | None = None) -> None:
        super().__init__(body)
        self.headers: dict[str, str] = {k.lower(): v for k, v in (headers or {}).items()}

    @property
    def input_items(self) -> list[dict[str, Any]]:
        items = self.get("input")
        return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []

    def _texts(self, role: str) -> list[str]:
        return [_text_of(i.get("content")) for i in self.input_items if i.get("role") == role]

    @property
    def developer_text(self) -> str:
        """The `instructions` and every developer/system message, joined."""
        parts = [str(self.get("instructions") or "")] + self._texts("developer") + self._texts("system")
        return "\n".join(p for p in parts if p)

    @property
    def user_texts(self) -> list[str]:
        return self._texts("user")

    @property
    def prompt(self) -> str:
        """The last user message (the CLI's first user message is its environment context)."""
        texts = self.user_texts
        return texts[-1] if texts else ""

    @property
    def tool_outputs(self) -> list[str]:
        """Outputs of the tool calls so far (function and custom tools), in order."""
        kinds = ("function_call_output", "custom_tool_call_output")
        return [_text_of(i.get("output")) for i in self.input_items if i.get("type") in kinds]

    @property
    def tool_names(self) -> list[str]:
        return [str(t.get("name") or t.get("type")) for t in self.get("tools") or [] if isinstance(t, dict)]

    @property
    def json_schema(self) -> dict[str, Any] | None:
        fmt = (self.get("text") or {}).get("format") or {}
        return fmt.get("schema") if fmt.get("type") == "json_schema" else None


# ---------------------------------------------------------------------------------------------
# replies


@dataclass(frozen=True)
class Reply:
    """One model response: output items, then `response.completed` with (input, output) tokens."""

    items: list[dict[str, Any]]
    usage: tuple[int, int] = (20, 5)
    delay_s: float = 0.0


@dataclass(frozen=True)
class Status:
    code: int
    message: str = "fake error"
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Hang:
    """Hold the connection open without answering for `seconds` (the CLI's own timeout or ours)."""

    seconds: float = 60.0


Response = Reply | Status | Hang
Handler = Callable[[ResponsesRequest], Response]


def message(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": f"msg_{next(_ids)}",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def shell(cmd: str) -> dict[str, Any]:
    """A call of the CLI's `exec_command` tool."""
    n = next(_ids)
    return {
        "type": "function_call",
        "id": f"fc_{n}",
        "call_id": f"call_{n}",
        "name": "exec_command",
        "arguments": json.dumps({"cmd": cmd}),
        "status": "completed",
    }


def apply_patch(patch: str) -> dict[str, Any]:
    """A call of the CLI's freeform `apply_patch` tool (the CLI reports it as a file change)."""
    n = next(_ids)
    return {
        "type": "custom_tool_call",
        "id": f"ctc_{n}",
        "call_id": f"call_{n}",
        "name": "apply_patch",
        "input": patch,
        "status": "completed",
    }


def add_file(path: str, text: str) -> dict[str, Any]:
    lines = "".join(f"+{line}\n" for line in text.splitlines())
    return apply_patch(f"*** Begin Patch\n*** Add File: {path}\n{lines}*** End Patch\n")


def reasoning(text: str) -> dict[str, Any]:
    return {
        "type": "reasoning",
        "id": f"rs_{next(_ids)}",
        "summary": [{"type": "summary_text", "text": text}],
        "content": None,
        "encrypted_content": None,
    }


def web_search(query: str) -> dict[str, Any]:
    return {
        "type": "web_search_call",
        "id": f"ws_{next(_ids)}",
        "status": "completed",
        "action": {"type": "search", "query": query},
    }


def sequence(*responses: Response, repeat_last: bool = True) -> Handler:
    """Answer with `responses` in order (thread-safe), then repeat the last (or HTTP 500)."""
    take = script(responses, repeat_last=repeat_last)

    def handler(request: ResponsesRequest) -> Response:
        item = take()
        return (
            Status(500, f"fake script exhausted after {len(responses)} responses") if item is None else item
        )

    return handler


def sse_body(reply: Reply) -> bytes:
    rid = f"resp_{next(_ids)}"
    tokens_in, tokens_out = reply.usage
    events: list[dict[str, Any]] = [{"type": "response.created", "response": {"id": rid}}]
    events += [{"type": "response.output_item.done", "item": item} for item in reply.items]
    usage = {
        "input_tokens": tokens_in,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": tokens_out,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": tokens_in + tokens_out,
    }
    events.append({"type": "response.completed", "response": {"id": rid, "usage": usage}})
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


# ---------------------------------------------------------------------------------------------
# server


class ScriptedResponses:
    """`with ScriptedResponses(handler) as server:`; `requests` lists every request received."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self._lock = threading.Lock()
        self._requests: list[ResponsesRequest] = []
        self._errors: list[str] = []
        self._stop = threading.Event()
        self._server: LocalServer | None = None

    def __enter__(self) -> ScriptedResponses:
        self._server = LocalServer(_request_handler(self), "fake-responses")
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()  # releases any Hang
        if self._server is not None:
            self._server.stop()
        if self._errors and exc is None:
            raise HandlerError("the fake Responses handler raised:\n" + "\n".join(self._errors))

    @property
    def base_url(self) -> str:
        assert self._server is not None, "the fake Responses server is not running"
        return f"http://127.0.0.1:{self._server.port}/v1"

    @property
    def requests(self) -> list[ResponsesRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def errors(self) -> list[str]:
        with self._lock:
            return list(self._errors)

    def _respond(self, request: ResponsesRequest) -> Response:
        with self._lock:
            self._requests.append(request)
        try:
            return self.handler(request)
        except Exception:
            with self._lock:
                self._errors.append(traceback.format_exc())
            return Status(400, "fake handler raised")

    def wait_stopped(self, seconds: float) -> None:
        self._stop.wait(seconds)


def _request_handler(server: ScriptedResponses) -> type[BaseHTTPRequestHandler]:
    class _Handler(JsonHandler):
        def _error(self, status: Status) -> None:
            body = {"error": {"message": status.message, "type": "fake_error", "param": None, "code": None}}
            self.send_body(status.code, "application/json", json.dumps(body).encode(), status.headers)

        def do_GET(self) -> None:  # noqa: N802 - stdlib naming
            self._error(Status(404, f"no route GET {self.path} (fake)"))

        def do_POST(self) -> None:  # noqa: N802 - stdlib naming
            body = self.read_json_object()
            if self.route() != "/v1/responses":
                self._error(Status(404, f"no route POST {self.path} (fake)"))
                return
            if body is None:
                self._error(Status(400, "the request body is not a JSON object (fake)"))
                return
            response = server._respond(ResponsesRequest(body, dict(self.headers.items())))
            if isinstance(response, Hang):
                server.wait_stopped(response.seconds)
                self._error(Status(504, "fake hang ended"))
            elif isinstance(response, Status):
                self._error(response)
            else:
                if response.delay_s:
                    time.sleep(response.delay_s)
                self.send_body(200, "text/event-stream", sse_body(response), {})

    return _Handler
