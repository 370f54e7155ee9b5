"""The HTTP plumbing the scripted servers share: a ThreadingHTTPServer on 127.0.0.1 (a free port)
served from a daemon thread, a quiet request handler that reads a JSON body and sends one, and a
thread-safe script of replies."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar

T = TypeVar("T")


class LocalHTTPServer(ThreadingHTTPServer):
    # socketserver's default listen backlog (5) drops connections when many calls start at once.
    request_queue_size = 256


class LocalServer:
    """`handler_class` served on 127.0.0.1 until `stop()`."""

    def __init__(self, handler_class: type[BaseHTTPRequestHandler], name: str) -> None:
        self.httpd = LocalHTTPServer(("127.0.0.1", 0), handler_class)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, name=name, daemon=True
        )
        self.thread.start()

    @property
    def port(self) -> int:
        return int(self.httpd.server_address[1])

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


class JsonHandler(BaseHTTPRequestHandler):
    """Silent, HTTP/1.1, with helpers to route, read a JSON object and send a body."""

    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes: with Nagle's algorithm the body would wait for the
    # client's delayed ACK (~40 ms per reply on a kept-alive connection).
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass

    def route(self) -> str:
        return self.path.split("?", 1)[0].rstrip("/")

    def read_json_object(self) -> dict[str, Any] | None:
        """The request body as a JSON object; None when it is not one, or when it is cut short (a
        client killed mid-request leaves fewer bytes than its Content-Length, maybe none)."""
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if len(raw) < length:
            return None
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            return None
        return body if isinstance(body, dict) else None

    def send_body(self, code: int, content_type: str, body: bytes, headers: Mapping[str, str]) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)


def script(items: Sequence[T], *, repeat_last: bool) -> Callable[[], T | None]:
    """Each call the next of `items` (thread-safe); after the last, the last again, or None when
    `repeat_last` is false (or there are none)."""
    lock = threading.Lock()
    index = 0

    def take() -> T | None:
        nonlocal index
        with lock:
            i = index
            index += 1
        if i < len(items):
            return items[i]
        return items[-1] if repeat_last and items else None

    return take
