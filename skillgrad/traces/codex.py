"""Codex CLI events (`codex exec --json`, one JSON object per line) -> TraceSteps.

The event shapes are those of the pinned CLI (`codex-rs/exec/src/exec_events.rs`): `thread.started`,
`turn.started`, `turn.completed` (usage), `turn.failed`, a top-level `error`, and `item.started` /
`item.updated` / `item.completed` carrying one thread item. Items become steps when they complete:
- `agent_message` -> `text` (the last one is the final answer, shown once);
- `command_execution` -> `tool_call` (the command, unwrapped from `bash -lc '...'`) and `tool_result`
  (exit code and output; an error when the exit code is non-zero or the command was declined);
- `file_change`, `mcp_tool_call`, `collab_tool_call`, `web_search`, `todo_list` -> `tool_call` /
  `tool_result` with one-line summaries;
- `plan` -> `text`; an `error` item (a non-fatal CLI notice) -> an error `text` step;
- `reasoning` is dropped by design.
An item that started but never completed (the CLI was stopped) still shows its call, with an error
result. A session without `turn.completed` is unfinished, whatever else it says. Unknown event and
item kinds are skipped, never fatal: the CLI adds kinds often.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skillgrad.errors import UserError
from skillgrad.traces.codex_unified import short_command
from skillgrad.values import TraceStep, Usage

EVENT_TYPES = frozenset(
    {
        "thread.started",
        "turn.started",
        "turn.completed",
        "turn.failed",
        "item.started",
        "item.updated",
        "item.completed",
        "item.plan.delta",
        "request_user_input",
        "error",
    }
)
_SHELLS = {"bash", "sh", "zsh", "dash"}
_WRAPPED = re.compile(r"^\s*\S*\b(?:bash|sh|zsh|dash)\s+-[li]?c\s")  # worth a shlex.split
_SUMMARY_CHARS = 300
_NO_RESULT = "no result: the session ended first"
_LEFT_RUNNING = "running when the turn ended (no exit code)"
_CALLS_AT_START = ("command_execution", "file_change", "mcp_tool_call", "collab_tool_call")


def _one_line(text: str, limit: int = _SUMMARY_CHARS) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[:limit] + "..."


def unwrap_command(command: str) -> str:
    """`/bin/bash -lc 'cat task.md'` -> `cat task.md`: the shell wrapper says nothing to a reader."""
    if not _WRAPPED.match(command):
        return command
    try:
        argv = shlex.split(command)
    except ValueError:
        return command
    return unwrap_argv(argv) if len(argv) == 3 else command


def unwrap_argv(argv: list[str]) -> str:
    """`["bash", "-lc", "cat task.md"]` -> `cat task.md`; any other argv joined by spaces."""
    if len(argv) == 3 and Path(argv[0]).name in _SHELLS and argv[1] in ("-c", "-lc", "-ic"):
        return argv[2]
    return " ".join(argv)


@dataclass
class CodexSession:
    steps: list[TraceStep] = field(default_factory=list)
    final_answer: str = ""
    is_error: bool = False
    terminal_reason: str | None = None  # completed | failed | unfinished
    usage: Usage | None = None  # from turn.completed only; None when there is none
    errors: list[str] = field(default_factory=list)


def _json_line(value: Any) -> str:
    return _one_line(
        value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    )


def _content_text(content: Any) -> str:
    """Text of MCP content blocks: the text parts; other blocks (images, ...) by their type."""
    if not isinstance(content, list):
        return "" if content is None else _json_line(content)
    parts = []
    for block in content:
        if isinstance(block, dict) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        elif isinstance(block, dict):
            parts.append(f"[{block.get('type') or 'block'}]")
    return "\n".join(parts).strip()


def _relative(path: str, workspace: Path | None) -> str:
    if workspace is None:
        return path
    try:
        return str(Path(path).relative_to(workspace))
    except ValueError:
        return path


def _mcp_result_text(item: dict[str, Any]) -> str:
    error = item.get("error")
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])
    result = item.get("result")
    if not isinstance(result, dict):
        return ""
    text = _content_text(result.get("content"))
    if not text and result.get("structured_content") is not None:
        text = json.dumps(result["structured_content"], ensure_ascii=False, sort_keys=True)
    return text


@dataclass
class _Builder:
    workspace: Path | None = None
    steps: list[TraceStep] = field(default_factory=list)
    open_items: dict[str, dict[str, Any]] = field(default_factory=dict)
    last_message: str | None = None
    usage: Usage | None = None
    completed: bool = False
    errors: list[str] = field(default_factory=list)
    shown_calls: set[str] = field(default_factory=set)  # items whose call was shown when they started
    ref: str | None = None  # the id of the item being read
    only_call: bool = False  # reading a started item: its call now, its result when it completes

    def pair(self, tool: str, call: str, result: str, failed: bool) -> None:
        if self.ref is None or self.ref not in self.shown_calls:
            self.steps.append(TraceStep("tool_call", call or "(no input)", tool=tool, ref=self.ref))
        if self.only_call:
            self.shown_calls.add(str(self.ref))  # only items with an id are read when they start
        else:
            self.steps.append(TraceStep("tool_result", result, tool=tool, is_error=failed, ref=self.ref))

    def item(self, item: dict[str, Any], only_call: bool = False) -> None:
        """One item -> its steps: the call and result of a completed one, the call of a started one."""
        item_id = item.get("id")
        self.ref, self.only_call = (None if item_id is None else str(item_id)), only_call
        kind = item.get("type")
        status = str(item.get("status") or "")
        if kind == "agent_message":
            text = str(item.get("text") or "")
            if text.strip():
                self.steps.append(TraceStep("text", text))
                self.last_message = text
        elif kind == "command_execution":
            code = item.get("exit_code")
            output = str(item.get("aggregated_output") or "").strip()
            failed = status in ("failed", "declined") or (isinstance(code, int) and code != 0)
            head = f"exit code {code}" if code is not None else f"status {status or 'unknown'}"
            if status == "in_progress" and code is None:  # reconciled at the turn's end, still running
                head = _LEFT_RUNNING
            self.pair(
                "exec_command",
                unwrap_command(str(item.get("command") or "")),
                (f"{head}: {output}" if output else head),
                failed,
            )
        elif kind == "file_change":
            changes = [c for c in item.get("changes") or [] if isinstance(c, dict)]
            ws = self.workspace
            call = ", ".join(f"{c.get('kind')} {_relative(str(c.get('path')), ws)}" for c in changes)
            self.pair("apply_patch", call, f"patch {status or 'unknown'}", status == "failed")
        elif kind == "mcp_tool_call":
            name = f"{item.get('server')}.{item.get('tool')}"
            failed = status == "failed" or bool(item.get("error"))
            call = _json_line(item.get("arguments")) if item.get("arguments") else "(no arguments)"
            self.pair(name, call, _mcp_result_text(item) or f"status {status or 'unknown'}", failed)
        elif kind == "collab_tool_call":
            receivers = ", ".join(str(r) for r in item.get("receiver_thread_ids") or [])
            call = _one_line(str(item.get("prompt") or "")) or receivers
            self.pair(f"collab.{item.get('tool')}", call, f"status {status or 'unknown'}", status == "failed")
        elif kind == "web_search":
            raw_action = item.get("action")
            action: dict[str, Any] = raw_action if isinstance(raw_action, dict) else {}
            query = str(item.get("query") or action.get("query") or action.get("url") or "")
            self.pair("web_search", _one_line(query), f"{action.get('type') or 'search'} done", False)
        elif kind == "todo_list":
            todos = [t for t in item.get("items") or [] if isinstance(t, dict)]
            marks = "; ".join(f"[{'x' if t.get('completed') else ' '}] {t.get('text')}" for t in todos)
            done = sum(1 for t in todos if t.get("completed"))
            self.pair("todo_list", f"{len(todos)} items", f"{done}/{len(todos)} done: {marks}", False)
        elif kind == "plan":
            self.steps.append(TraceStep("text", f"Plan: {item.get('text') or ''}"))
        elif kind == "error":
            self.steps.append(TraceStep("text", f"Codex: {item.get('message') or ''}", is_error=True))
        # reasoning is dropped by design; unknown kinds are skipped

    def add(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        item = event.get("item")
        if kind in ("item.started", "item.updated") and isinstance(item, dict):
            self.open_items[str(item.get("id"))] = item
            if kind == "item.started" and item.get("type") in _CALLS_AT_START and item.get("id") is not None:
                self.item(item, only_call=True)  # in the order it started; parallel calls stay apart
        elif kind == "item.completed" and isinstance(item, dict):
            self.open_items.pop(str(item.get("id")), None)
            self.item(item)
        elif kind == "turn.completed":
            self.close_open_items(turn_ended=True)
            self.completed = True
            self.usage = (self.usage or Usage(calls=0, cost_usd=None)) + _usage(event.get("usage"))
        elif kind in ("turn.failed", "error"):
            message = _error_message(event.get("error") if kind == "turn.failed" else event)
            step = TraceStep("text", f"Codex error: {message}", is_error=True)
            if not self.steps or self.steps[-1] != step:  # turn.failed repeats the error event
                self.steps.append(step)
            if kind == "turn.failed":
                self.errors.append(message)

    def close_open_items(self, turn_ended: bool) -> None:
        """Items that never completed: show each call. When its turn completed, a command was left
        running (no exit code, not an error); when the session stopped first, it has no result."""
        for item in self.open_items.values():
            if item.get("type") == "todo_list":
                self.item(item)  # the last known list is still what the agent planned
            elif item.get("type") not in ("agent_message", "reasoning"):
                before = len(self.steps)
                self.item({**item, "status": "failed", "exit_code": None})
                result = _LEFT_RUNNING if turn_ended else _NO_RESULT
                if item.get("type") == "command_execution":
                    result += f": `{short_command(unwrap_command(str(item.get('command') or '')))}`"
                self.steps[before:] = [
                    s
                    if s.kind == "tool_call"
                    else TraceStep("tool_result", result, s.tool, not turn_ended, ref=s.ref)
                    for s in self.steps[before:]
                ]
        self.open_items.clear()


def _error_message(error: Any) -> str:
    """The message of an error event; an HTTP error body in it is reduced to its own message."""
    message = str(error.get("message") if isinstance(error, dict) else error or "unknown error")
    try:
        body = json.loads(message)
    except json.JSONDecodeError:
        return message
    inner = body.get("error") if isinstance(body, dict) else None
    return str(inner["message"]) if isinstance(inner, dict) and inner.get("message") else message


def _usage(raw: Any) -> Usage:
    """Tokens of one turn. Cost is unknown: the CLI reports no prices for a custom provider."""
    raw = raw if isinstance(raw, dict) else {}
    return Usage(_count(raw.get("input_tokens")), _count(raw.get("output_tokens")), 1, None)


def _count(value: Any) -> int:
    """A token count as reported; anything that is not a non-negative number counts as 0."""
    return int(value) if isinstance(value, int | float) and value >= 0 else 0


def steps_from_codex_events(events: Iterable[Any], workspace: Path | None = None) -> CodexSession:
    """Parse Codex JSONL events into steps, final answer, usage and outcome."""
    builder = _Builder(workspace=workspace)
    for event in events:
        if isinstance(event, dict):
            builder.add(event)
    builder.close_open_items(turn_ended=False)
    session = CodexSession(steps=builder.steps, final_answer=builder.last_message or "", usage=builder.usage)
    if builder.errors:
        session.is_error, session.terminal_reason, session.errors = True, "failed", builder.errors
    elif not builder.completed:
        session.is_error, session.terminal_reason = True, "unfinished"
        session.errors = ["Codex ended without a turn.completed event (the session is unfinished)"]
    else:
        session.terminal_reason = "completed"
    return session


def is_codex_record(record: Any) -> bool:
    return isinstance(record, dict) and record.get("type") in EVENT_TYPES


def parse_jsonl(text: str, source: str) -> list[dict[str, Any]]:
    """The JSON objects of a JSONL text; a partial last line (a killed CLI) is skipped."""
    records: list[dict[str, Any]] = []
    lines = text.splitlines()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError:
            if number == len(lines) and records:
                continue
            expected = "expected `codex exec --json` output"
            raise UserError(f"{source}: line {number} is not JSON; {expected}") from None
        if isinstance(item, dict):
            records.append(item)
    return records
