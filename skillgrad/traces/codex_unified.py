"""Codex tool outputs, and unified exec: which command a `write_stdin` poll's output belongs to.

With unified exec (CLI 0.12x and later) `exec_command` may answer only "Process running with session
ID N"; the command's output and exit code then arrive in the outputs of later `write_stdin` polls of
that session, and the CLI records the command's end (`event_msg exec_command_end`, or from 0.16x an
`item_completed` CommandExecution item) with its exit code. Here every poll is tied to the command
of its session: the poll's result names the command, a command still running says
`running (session N)`, and a command whose end no poll read is closed from its end record when the
turn ends, so an exit code is never lost nor counted twice.
"""

from __future__ import annotations

import contextlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from skillgrad.text import clean_text
from skillgrad.values import TraceStep

_HEADER = re.compile(
    r"(?:Process exited with code|Exit code:?)\s*(-?\d+)|Process running with session ID (\d+)"
)
# How the CLI answers a call it could not run, instead of a command's output (codex-rs
# FunctionCallError texts and the sandbox's refusals): the tool failed, not the command.
_TOOL_FAILURE = re.compile(
    r"^(?:[\w.-]+ (?:[\w-]+ )?failed\b|failed to |unsupported (?:custom tool )?call\b"
    r"|execution error\b|sandbox denied\b|command timed out\b|(?:command )?aborted by user\b"
    r"|(?:exec command|patch) rejected\b|user rejected\b|invalid patch\b|unknown (?:session|process) id\b)",
    re.I,
)
_COMMAND_CHARS = 80


@dataclass(frozen=True)
class ToolOutput:
    """A function output read apart: its body, exit code, the session of a running process, and
    whether the tool itself refused (e.g. `write_stdin failed: ...`)."""

    body: str
    exit_code: int | None = None
    session: str | None = None
    refused: bool = False


def read_output(raw: Any) -> ToolOutput:
    """Every output form of the CLI: the unified exec header, `Exit code: N` text, and the older
    JSON `{"output": ..., "metadata": {"exit_code": N}}` of `shell` and `apply_patch`."""
    if isinstance(raw, str) and raw.startswith("{") and '"metadata"' in raw:
        with contextlib.suppress(ValueError):
            raw = json.loads(raw)
    if isinstance(raw, dict) and isinstance(raw.get("metadata"), dict):
        code = raw["metadata"].get("exit_code")
        body = raw.get("output")
        return ToolOutput(clean_text(str(body if body is not None else "")).strip(), _int(code))
    text = raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)
    head, sep, body = text.partition("\nOutput:\n")
    if not sep:
        head, body = text[:400], text
    found = _HEADER.search(head)
    if found is None:
        return ToolOutput(body.strip(), refused=bool(_TOOL_FAILURE.match(text)))
    exited, running = found.group(1), found.group(2)
    return ToolOutput(body.strip(), int(exited) if exited else None, running)  # TraceStep cleans the text


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _with_body(head: str, body: str) -> str:
    return f"{head}: {body}" if body else head


def short_command(command: str) -> str:
    flat = " ".join(command.split())
    return flat if len(flat) <= _COMMAND_CHARS else flat[:_COMMAND_CHARS] + "..."


@dataclass
class _Process:
    session: str
    call_ref: str
    command: str
    reported: bool = False  # an output showed its exit code
    closed: bool = False  # its turn ended (the closing step, if any, is written)


@dataclass
class UnifiedExec:
    """Links exec_command calls, write_stdin polls and end records by call id and session id."""

    commands: dict[str, str] = field(default_factory=dict)  # exec call ref -> command
    processes: dict[str, _Process] = field(default_factory=dict)  # session id -> process
    polls: dict[str, str] = field(default_factory=dict)  # poll call ref -> session id
    ends: dict[str, tuple[int | None, Any]] = field(default_factory=dict)  # exec call ref -> (exit, output)
    answered: set[str] = field(default_factory=set)  # exec call refs whose output arrived

    def exec_call(self, ref: str, command: str) -> None:
        self.commands[ref] = command

    def poll_call(self, ref: str, args: Any) -> str:
        """The one-line summary of a write_stdin call (which session it polls or types into)."""
        args = args if isinstance(args, dict) else {}
        session = str(args.get("session_id", "?"))
        self.polls[ref] = session
        chars = args.get("chars")
        if chars:
            return f"send {json.dumps(str(chars), ensure_ascii=False)} to session {session}"
        return f"poll session {session}"

    def result(self, ref: str, tool: str | None, raw: Any) -> TraceStep:
        """The tool_result step of one function output, tied to its command when it has one."""
        out = read_output(raw)
        if ref in self.polls:
            return self._poll_result(ref, out)
        if ref in self.commands:
            self.answered.add(ref)
            if out.session is not None:
                self.processes[out.session] = _Process(out.session, ref, self.commands[ref])
                return TraceStep(
                    "tool_result", _with_body(f"running (session {out.session})", out.body), tool, ref=ref
                )
        return _plain_result(out, tool, ref)

    def _poll_result(self, ref: str, out: ToolOutput) -> TraceStep:
        session = self.polls[ref]
        process = self.processes.get(session)
        what = f"`{short_command(process.command)}`" if process else f"session {session}"
        if out.refused:
            return TraceStep("tool_result", out.body, "write_stdin", True, ref=ref)
        if out.exit_code is not None:
            if process:
                process.reported = True
            head = f"exit code {out.exit_code} of {what}"
            return TraceStep(
                "tool_result", _with_body(head, out.body), "exec_command", out.exit_code != 0, ref=ref
            )
        head = f"running (session {session}, {what})" if process else f"running (session {session})"
        return TraceStep("tool_result", _with_body(head, out.body), "exec_command", ref=ref)

    def end_record(self, call_id: str, exit_code: Any, output: Any) -> None:
        """exec_command_end / a completed CommandExecution item: how the command ended."""
        self.ends.setdefault(call_id, (_int(exit_code), output))

    def close_turn(self, when: str = "when the turn ended") -> list[TraceStep]:
        """At a turn's end: each command whose exit no output showed gets one closing step, from its
        end record when there is one, else `still running`."""
        steps: list[TraceStep] = []
        for process in self.processes.values():
            if not (process.closed or process.reported):
                process.closed = True
                steps.append(self._closing(process.call_ref, process.command, process.session, when))
        for ref, command in self.commands.items():
            if ref not in self.answered and ref in self.ends:
                self.answered.add(ref)  # no output ever came: its end record still tells
                steps.append(self._closing(ref, command, None, when))
        return steps

    def _closing(self, ref: str, command: str, session: str | None, when: str) -> TraceStep:
        end = self.ends.get(ref)
        what = f"`{short_command(command)}`"
        if end is None or end[0] is None:
            running = f"running (session {session})" if session else "running"
            return TraceStep("tool_result", f"{running} {when}: {what}", "exec_command", ref=ref)
        head = f"exit code {end[0]} of {what} (from its end record: no output showed it)"
        body = str(end[1] or "").strip()
        return TraceStep("tool_result", _with_body(head, body), "exec_command", end[0] != 0, ref=ref)


def _plain_result(out: ToolOutput, tool: str | None, ref: str) -> TraceStep:
    if out.exit_code is not None:
        text = _with_body(f"exit code {out.exit_code}", out.body)
        return TraceStep("tool_result", text, tool, out.exit_code != 0, ref=ref)
    return TraceStep("tool_result", out.body, tool, out.refused, ref=ref)
