"""Run one `codex exec --json` session as a child process: argv list (never a shell string), the
prompt on stdin, the JSONL events read as they arrive, bounded by wall time and tool calls.

The CLI has no turn limit of its own, so the tool calls it starts are counted from its events and
the session is stopped (its whole process group) when it starts one more than allowed. Whatever
happens, the events received so far are kept: a stopped session is still a trace.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

TOOL_ITEMS = frozenset(
    {"command_execution", "file_change", "mcp_tool_call", "web_search", "collab_tool_call"}
)
_STDERR_LINES = 20
_NOISE = ("WARNING: proceeding, even though we could not create PATH aliases", "Reading additional input")


@dataclass
class CodexRun:
    events: list[dict[str, Any]] = field(default_factory=list)
    failure: str | None = None  # why the session did not end on its own, or how it crashed
    hit_tool_limit: bool = False  # stopped because it started one tool call more than allowed
    stderr: str = ""
    returncode: int | None = None


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)  # the npm launcher and the native CLI alike


class _Reader:
    """Reads stdout events; stops the session at the tool-call limit."""

    def __init__(self, proc: subprocess.Popen[bytes], max_tool_calls: int | None) -> None:
        self.proc = proc
        self.max_tool_calls = max_tool_calls
        self.events: list[dict[str, Any]] = []
        self.tool_ids: set[str] = set()
        self.stopped = False

    def read(self, stream: IO[bytes]) -> None:
        for raw in stream:
            try:
                event = json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError):
                continue  # not an event (the CLI prints events only; be lenient anyway)
            if not isinstance(event, dict):
                continue
            self.events.append(event)
            item = event.get("item")
            if event.get("type") != "item.started" or not isinstance(item, dict):
                continue
            if item.get("type") in TOOL_ITEMS:
                self.tool_ids.add(str(item.get("id")))
            limit = self.max_tool_calls
            if limit is not None and len(self.tool_ids) > limit and not self.stopped:
                self.stopped = True
                _kill_group(self.proc)


def _drain(stream: IO[bytes], lines: deque[str]) -> None:
    for raw in stream:
        line = raw.decode("utf-8", "replace").rstrip()
        if line and not line.startswith(_NOISE):
            lines.append(line)


def _feed(stream: IO[bytes], prompt: str) -> None:
    try:
        stream.write(prompt.encode("utf-8"))
        stream.close()
    except (BrokenPipeError, OSError):
        pass  # the CLI died before reading: its exit status says why


def run_cli(
    argv: list[str],
    *,
    env: dict[str, str],
    cwd: Path,
    prompt: str,
    timeout_s: float,
    max_tool_calls: int | None,
) -> CodexRun:
    """Run the CLI to the end, the time limit or the tool-call limit. Never raises for the CLI."""
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=cwd,
            start_new_session=True,
        )
    except OSError as exc:
        return CodexRun(failure=f"could not start the Codex CLI {argv[0]}: {exc}")
    assert proc.stdin and proc.stdout and proc.stderr
    reader = _Reader(proc, max_tool_calls)
    stderr: deque[str] = deque(maxlen=_STDERR_LINES)
    threads = [
        threading.Thread(target=_feed, args=(proc.stdin, prompt), daemon=True),
        threading.Thread(target=reader.read, args=(proc.stdout,), daemon=True),
        threading.Thread(target=_drain, args=(proc.stderr, stderr), daemon=True),
    ]
    for thread in threads:
        thread.start()
    failure = None
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        failure = f"Codex timed out after {timeout_s:g}s"
        _kill_group(proc)
        proc.wait()
    finally:
        _kill_group(proc)  # no child of the session outlives it
    for thread in threads:
        thread.join(timeout=5)
    detail = " | ".join(stderr)
    if failure is None and reader.stopped:
        failure = f"Codex was stopped at its tool-call limit ({max_tool_calls}, model.codex_max_turns)"
    if failure is None and proc.returncode != 0:
        failure = f"Codex exited with code {proc.returncode}" + (f": {detail[-600:]}" if detail else "")
    return CodexRun(reader.events, failure, reader.stopped, detail, proc.returncode)
