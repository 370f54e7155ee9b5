"""Time from spawning a process to the first request a local server reads from it, and the floor
of that time for any Python program on the openai SDK.

`FirstRequest` is a scripted server on 127.0.0.1 that notes when it reads its first POST and
answers every request 400, so a run fails at once and only its start-up is measured. The
floor (`sdk_floor`) spawns a bare script that imports the openai SDK, builds a client and sends
one chat completion: what a process must spend before its first call whatever it does around it
(the interpreter, the SDK's import, the client and its first request), measured with the same
interpreter and the same server as the command it is set beside.
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

BARE_SDK = """
import openai
client = openai.OpenAI(base_url="http://127.0.0.1:{port}/v1", api_key="sk-bench", max_retries=0)
try:
    client.chat.completions.create(model="m", messages=[{{"role": "user", "content": "hi"}}])
except openai.APIStatusError:
    pass
"""


class FirstRequest:
    def __init__(self) -> None:
        self.at: float | None = None
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        httpd.daemon_threads = True
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        self.httpd = httpd

    @property
    def port(self) -> int:
        return int(self.httpd.server_address[1])

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
                pass

            def do_POST(self) -> None:  # noqa: N802 - stdlib naming
                if owner.at is None:
                    owner.at = time.perf_counter()
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.send_response(400)  # the caller fails fast: only its start-up is measured
                self.send_header("Content-Length", "0")
                self.end_headers()

        return Handler

    def time(
        self, command: Sequence[str], env: Mapping[str, str], cwd: Path | None = None
    ) -> tuple[float, float]:
        """(seconds from the spawn to the first request read, seconds the whole process took).
        Run it in a folder of its own (`cwd`): `python -m` puts the working directory first on
        sys.path, so a checkout there would shadow the one the command is meant to run."""
        self.at = None
        started = time.perf_counter()
        subprocess.run(list(command), env=dict(env), cwd=cwd, capture_output=True, timeout=300, check=False)
        ended = time.perf_counter()
        if self.at is None:
            raise SystemExit(f"{' '.join(command[:4])}: made no request")
        return self.at - started, ended - started

    def sdk_floor(self, python: str, env: Mapping[str, str], cwd: Path | None = None) -> float:
        """Seconds from the spawn of a bare openai-SDK script to its first request."""
        return self.time([python, "-c", BARE_SDK.format(port=self.port)], env, cwd)[0]

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
