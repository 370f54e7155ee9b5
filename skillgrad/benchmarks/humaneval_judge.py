"""HumanEval's judge: the dataset's tests in one process, the model's solution in another.

Run inside the sandbox as `humaneval_judge.py judge` (standard library only). The judge execs the
task's prompt (trusted helpers such as `encode_cyclic`) and test, then calls `check(candidate)` where
`candidate` is a proxy: each call goes over a pipe to a *worker* process that holds the solution.
Values cross as tagged JSON of plain builtins, never pickles, and never objects of the solution's
classes, so nothing the solution does reaches the judge's memory or verdict:
- `sys.exit(0)`, `os._exit(0)`, an atexit hook or a crash in the solution end the WORKER: the judge
  sees the pipe close and reports it as a failure;
- a returned object whose `__eq__` always says True cannot cross (only exact builtins do);
- patching builtins or the test's helpers happens in the worker's memory, not the judge's;
- the judge makes itself undumpable, so the worker cannot read its memory or file descriptors.
The verdict, `{"passed": true|false, "kind": ..., "detail": ...}`, goes to the sandbox's private
report descriptor, which the worker does not inherit.
Files: `solution.py` (the model's program), `tests.py` (prompt + test), the entry point as argv[2].
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import subprocess
import sys
import traceback
from typing import Any

_MAX_LINE = 16 * 1024 * 1024
_MAX_DEPTH = 64


class CandidateError(Exception):
    """The solution raised, returned something that cannot cross, or its process ended."""


def encode(value: Any, depth: int = 0) -> Any:
    """Exact builtins only, tagged so that tuples, sets and big ints survive JSON."""
    if depth > _MAX_DEPTH:
        raise TypeError("value nested too deeply")
    kind = type(value)
    if value is None or kind is bool or kind is str:
        return value
    if kind is int:
        return {"i": str(value)}
    if kind is float:
        return {"f": repr(value)}
    if kind is complex:
        return {"c": [repr(value.real), repr(value.imag)]}
    if kind is bytes:
        return {"b": value.hex()}
    tags: dict[type, str] = {list: "l", tuple: "t", set: "s", frozenset: "fs"}
    if kind in tags:
        return {tags[kind]: [encode(v, depth + 1) for v in value]}
    if kind is dict:
        return {"d": [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in value.items()]}
    raise TypeError(f"a value of type {kind.__name__} cannot be checked (plain builtins only)")


def decode(data: Any) -> Any:
    if data is None or isinstance(data, bool | str):
        return data
    if not isinstance(data, dict) or len(data) != 1:
        raise ValueError("malformed value")
    ((tag, body),) = data.items()
    if tag == "i":
        return int(body)
    if tag == "f":
        return float(body)
    if tag == "c":
        return complex(float(body[0]), float(body[1]))
    if tag == "b":
        return bytes.fromhex(body)
    if tag in ("l", "t", "s", "fs"):
        items = [decode(v) for v in body]
        return {"l": list, "t": tuple, "s": set, "fs": frozenset}[tag](items)
    if tag == "d":
        return {decode(k): decode(v) for k, v in body}
    raise ValueError(f"unknown tag {tag!r}")


def _send(stream: Any, obj: Any) -> None:
    stream.write(json.dumps(obj).encode() + b"\n")
    stream.flush()


def _receive(stream: Any) -> Any:
    line = stream.readline(_MAX_LINE)
    if not line:
        raise EOFError
    return json.loads(line)


def worker(entry: str) -> None:
    """Load the solution, then answer calls until the judge closes the pipe."""
    rpc_in = os.fdopen(os.dup(0), "rb")
    rpc_out = os.fdopen(os.dup(1), "wb")
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(2, 1)  # whatever the solution prints goes to stderr, never into the pipe
    namespace: dict[str, Any] = {"__name__": "__main__"}
    try:
        with open("solution.py", encoding="utf-8") as handle:
            exec(compile(handle.read(), "solution.py", "exec"), namespace)
        function = namespace[entry]
    except BaseException as exc:  # noqa: BLE001 - report any failure to load, SystemExit included
        _send(rpc_out, {"load_error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()})
        return
    _send(rpc_out, {"ready": True})
    while True:
        try:
            request = _receive(rpc_in)
        except EOFError:
            return
        try:
            result = function(*decode(request["args"]), **decode(request["kwargs"]))
            reply = {"ok": encode(result)}
        except BaseException as exc:  # noqa: BLE001 - the judge decides what an exception means
            reply = {"raised": f"{type(exc).__name__}: {exc}"}
        _send(rpc_out, reply)


class Candidate:
    """The proxy the tests call: arguments out, a plain value (or the solution's error) back."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.calls = 0

    def _exchange(self, request: Any) -> Any:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            _send(self.proc.stdin, request)
            return _receive(self.proc.stdout)
        except (EOFError, BrokenPipeError, OSError):
            code = self.proc.wait()
            raise CandidateError(f"the solution's process ended during a call ({_exit_text(code)})") from None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        reply = self._exchange({"args": encode(list(args)), "kwargs": encode(kwargs)})
        if "raised" in reply:
            raise CandidateError(f"the solution raised {reply['raised']}")
        return decode(reply["ok"])


def _exit_text(code: int) -> str:
    if code >= 0:
        return f"exit status {code}"
    try:
        return f"killed by signal {signal.Signals(-code).name}"
    except ValueError:
        return f"killed by signal {-code}"


def _undumpable() -> None:
    """No process of the same user may ptrace this one or open its /proc files (PR_SET_DUMPABLE)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)


def judge(entry: str) -> dict[str, Any]:
    _undumpable()
    proc = subprocess.Popen(
        [sys.executable, "-I", os.path.abspath(__file__), "worker", entry],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=None,  # the solution's prints and tracebacks: feedback only
    )
    candidate = Candidate(proc)
    try:
        hello = _receive(proc.stdout)
    except (EOFError, ValueError):
        code = proc.wait()
        kind = "crash" if code < 0 else "exit"
        return {
            "passed": False,
            "kind": kind,
            "detail": f"the solution ended before any test ({_exit_text(code)})",
        }
    if "load_error" in hello:
        sys.stderr.write(hello.get("trace", ""))
        return {"passed": False, "kind": "load", "detail": hello["load_error"]}
    namespace: dict[str, Any] = {"__name__": "__main__"}
    try:
        with open("tests.py", encoding="utf-8") as handle:
            exec(compile(handle.read(), "tests.py", "exec"), namespace)
        namespace[entry] = candidate  # a test may name the function instead of `candidate`
        namespace["check"](candidate)
    except AssertionError:
        traceback.print_exc()
        return {"passed": False, "kind": "assertion", "detail": "a unit test failed (wrong result)"}
    except CandidateError as exc:
        kind = "memory" if "MemoryError" in str(exc) else "crash" if "signal" in str(exc) else "error"
        return {"passed": False, "kind": kind, "detail": str(exc)}
    except Exception as exc:  # the test itself raised on the solution's value
        traceback.print_exc()
        return {"passed": False, "kind": "error", "detail": f"{type(exc).__name__}: {exc}"}
    finally:
        if proc.stdin:
            proc.stdin.close()
    if candidate.calls == 0:
        return {"passed": False, "kind": "error", "detail": "the tests never called the solution"}
    return {"passed": True, "kind": "passed", "detail": f"all unit tests passed ({candidate.calls} calls)"}


if __name__ == "__main__":
    role, entry_point = sys.argv[1], sys.argv[2]
    if role == "worker":
        worker(entry_point)
    else:
        report_fd = int(os.environ.pop("SKILLGRAD_REPORT_FD"))
        os.set_inheritable(report_fd, False)  # the worker must not get it
        verdict = judge(entry_point)
        os.write(report_fd, json.dumps(verdict).encode())
        os._exit(0 if verdict["passed"] else 1)
