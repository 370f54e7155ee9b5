"""A wall-clock deadline for each HTTP attempt of the SDK-based chat backends.

httpx's timeouts bound each network operation (connect, one read, one write), not a request: a
server that trickles one byte a second, or never ends its body, holds a call for ever while every
single read finishes in time. `DeadlineTransport` wraps httpx's transport so each attempt ends
`deadline_s` after it started, in both phases:
- headers: the attempt runs in a helper thread; the caller stops waiting at the deadline (the
  helper closes whatever arrives later);
- body: every chunk checks the clock, so a slow or endless body is cut at the deadline.
The SDKs see an `httpx.ReadTimeout`, which they report like any timeout; skillgrad's retry loop
(`backends.retry`) retries it within `model.max_retries`. `NEVER_SENT` are the failures of an
attempt that never reached the server (nothing to bill).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx2 as httpx  # the HTTP client the openai and anthropic SDKs are built on

# The SDKs' own defaults for their shared client (openai and anthropic use the same numbers).
DEFAULT_LIMITS = httpx.Limits(max_connections=1000, max_keepalive_connections=100)
NEVER_SENT = (httpx.ConnectError, httpx.ConnectTimeout)


class _DeadlineStream(httpx.SyncByteStream):
    def __init__(self, inner: httpx.SyncByteStream, deadline: float, budget_s: float) -> None:
        self._inner = inner
        self._deadline = deadline
        self._budget_s = budget_s

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._inner:
            if time.monotonic() > self._deadline:
                raise httpx.ReadTimeout(f"the response took longer than {self._budget_s:g}s in all")
            yield chunk

    def close(self) -> None:
        self._inner.close()


class DeadlineTransport(httpx.BaseTransport):
    """An httpx transport whose every request ends within `deadline_s` of wall-clock time."""

    def __init__(self, deadline_s: float, inner: httpx.BaseTransport | None = None) -> None:
        self.deadline_s = deadline_s
        self._inner = inner or httpx.HTTPTransport(limits=DEFAULT_LIMITS)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        deadline = time.monotonic() + self.deadline_s
        box: dict[str, Any] = {}
        abandoned = threading.Event()

        def attempt() -> None:
            try:
                response = self._inner.handle_request(request)
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting caller
                box["error"] = exc
                return
            box["response"] = response
            if abandoned.is_set():  # the caller gave up: free the connection
                with contextlib.suppress(Exception):
                    response.close()

        helper = threading.Thread(target=attempt, name="skillgrad-http", daemon=True)
        helper.start()
        helper.join(self.deadline_s)
        if helper.is_alive():
            abandoned.set()
            if "response" in box:  # arrived between the join and the flag
                with contextlib.suppress(Exception):
                    box["response"].close()
            raise httpx.ReadTimeout(f"no response headers within {self.deadline_s:g}s", request=request)
        if "error" in box:
            raise box["error"]
        response: httpx.Response = box["response"]
        assert isinstance(response.stream, httpx.SyncByteStream)
        response.stream = _DeadlineStream(response.stream, deadline, self.deadline_s)
        return response

    def close(self) -> None:
        self._inner.close()
