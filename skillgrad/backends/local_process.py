"""The local model's own process: loads one GGUF model on xllamacpp and answers chat requests
sent over a socket (`local.LocalRuntime` starts it and is its only client).

It is started as a fresh interpreter (`python -c` importing this module, see `child_command`),
never through `multiprocessing`: multiprocessing's spawn re-imports the caller's `__main__`, so a
script calling `skillgrad.train` without an `if __name__ == "__main__":` guard would start its
own training again inside the model process. This module imports nothing of the caller's and
nothing of skillgrad's beyond itself.

Protocol (multiprocessing's `Connection`: pickled objects over the socket): the process first
sends `{"ready": True}` or `{"load_error": text}`, then answers each request dict with
`{"result": <the runtime's reply>}` or `{"refused": text}`. It leaves by `os._exit` when the socket
closes, never through xllamacpp's destructor (see `local.LocalRuntime`). Ctrl-C (the terminal's
SIGINT to the whole process group) ends it at once, mid-reply, with no traceback: the run it
serves is being interrupted, and the calls still in flight fail at once instead of finishing.
"""

from __future__ import annotations

import os
import secrets
import signal
import sys
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    import xllamacpp

_PROMPT_CACHE_MIB = 256  # llama.cpp's host prompt cache (default 8 GiB) kept small
_PACKAGE_ROOT = Path(__file__).resolve().parents[2]  # the folder holding the skillgrad package
_BOOT = (
    "import sys; sys.path.insert(0, sys.argv[1]); "
    "from skillgrad.backends.local_process import main; main(sys.argv[2:])"
)


def child_command(fd: int, path: Path, ctx: int, threads: int) -> list[str]:
    """The command line of the model process: this interpreter, importing this very skillgrad
    (`-P`: not the current folder's), serving on the inherited socket `fd`."""
    args = [str(fd), str(path), str(ctx), str(threads)]
    return [sys.executable, "-P", "-c", _BOOT, str(_PACKAGE_ROOT), *args]


def _params(path: Path, ctx: int, threads: int) -> Any:
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = str(path)
    params.n_ctx = ctx
    params.n_parallel = 1
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.warmup = False
    params.verbosity = -1
    params.cache_ram_mib = _PROMPT_CACHE_MIB
    # The embedded server also listens on 127.0.0.1; we only call it in-process, so lock it.
    params.api_keys = [secrets.token_hex(16)]
    params.ui = False
    params.endpoint_slots = False
    return params


def _load(path: Path, ctx: int, threads: int) -> xllamacpp.Server:
    import xllamacpp

    return xllamacpp.Server(_params(path, ctx, threads))


def serve(conn: Connection, path: str, ctx: int, threads: int) -> NoReturn:
    """Load, then answer requests until the socket closes; leave by `os._exit`."""
    try:
        server = _load(Path(path), ctx, threads)
    except Exception as exc:  # the runtime reports a bad file as a generic error
        conn.send({"load_error": str(exc)})
        os._exit(0)
    conn.send({"ready": True})
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):
            os._exit(0)
        try:
            conn.send({"result": server.handle_chat_completions(request)})
        except RuntimeError as exc:
            conn.send({"refused": str(exc)})
        except OSError:  # the parent went away mid-reply
            os._exit(0)


def main(argv: list[str]) -> NoReturn:
    """`FD PATH CTX THREADS`, as `child_command` passes them."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # not Python's handler, which waits for llama.cpp
    fd, path, ctx, threads = argv
    serve(Connection(int(fd)), path, int(ctx), int(threads))
