"""Codex session files (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`) -> TraceSteps.

A rollout line is `{"timestamp", "type", "payload"}`: `session_meta` first, then `response_item`s
(the conversation as the model saw it: messages, `function_call` / `custom_tool_call` and their
outputs, reasoning) and `event_msg`s (UI events; `task_complete` closes a turn). Steps come from the
response items: assistant messages -> `text`; calls -> `tool_call` (the command of `exec_command` /
`shell`, the files of `apply_patch`, the session a `write_stdin` polls); outputs -> `tool_result`, an
error when the process exited non-zero or the tool refused; unified exec polls are tied to their
command (codex_unified.py). User messages after the first request -> `user` follow-ups, read from
response items and from `event_msg user_message` (or a 0.16x `item_completed` UserMessage), each
message once. The harness's own context messages (environment, permissions, instructions) and
reasoning are dropped. A turn without `task_complete` is unfinished. This is the format `codex exec`
writes when it is not `--ephemeral`, and the one the interactive CLI keeps.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson

from skillgrad.text import clean_text
from skillgrad.traces.codex import unwrap_command
from skillgrad.traces.codex_unified import UnifiedExec
from skillgrad.traces.summaries import one_line_value
from skillgrad.values import TraceStep

ROLLOUT_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})
# Records the steps never use, recognised before they are parsed (records.iter_records).
IGNORED_RECORDS = (
    b'"payload":{"type":"token_count"',
    b'"payload":{"type":"reasoning"',
    b'"payload":{"type":"agent_reasoning',
    b'"type":"turn_context"',
    b'"type":"session_meta"',
    b'"payload":{"type":"message","role":"developer"',
)
_CONTEXT_PREFIXES = (
    "<environment_context>",
    "<user_instructions>",
    "<permissions",
    "<INSTRUCTIONS>",
    "# AGENTS.md",
)
_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$", re.M)
_POLL_TOOLS = ("write_stdin",)
_CALLS = ("function_call", "custom_tool_call", "local_shell_call")
_OUTPUTS = ("function_call_output", "custom_tool_call_output")


def is_rollout_record(record: Any) -> bool:
    return (
        isinstance(record, dict)
        and record.get("type") in ROLLOUT_TYPES
        and isinstance(record.get("payload"), dict)
    )


def _message_text(payload: dict[str, Any]) -> str:
    content = payload.get("content")
    if isinstance(content, str):
        return content
    parts = [str(p.get("text", "")) for p in content or [] if isinstance(p, dict)]
    return "\n".join(p for p in parts if p)


def _request_text(text: str) -> str | None:
    text = clean_text(text).strip()
    return text if text and not text.startswith(_CONTEXT_PREFIXES) else None


def rollout_request(record: dict[str, Any]) -> str | None:
    """The text of a rollout record that is a user request, else None."""
    payload = record.get("payload") if record.get("type") == "response_item" else None
    if not isinstance(payload, dict) or payload.get("type") != "message" or payload.get("role") != "user":
        return None
    return _request_text(_message_text(payload))


def _event_request(payload: dict[str, Any]) -> str | None:
    """The text of an event that says the user sent a message (two shapes across CLI versions)."""
    kind = payload.get("type")
    if kind == "user_message" and payload.get("kind") in (None, "plain"):
        return _request_text(str(payload.get("message") or ""))
    item = payload.get("item")
    if kind == "item_completed" and isinstance(item, dict) and item.get("type") == "UserMessage":
        return _request_text(_message_text(item))
    return None


def _arguments(payload: dict[str, Any]) -> Any:
    raw = payload.get("arguments", payload.get("input"))
    if isinstance(raw, str) and raw[:1] in ("{", "["):
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            return raw
    return raw


def _command(args: Any) -> str | None:
    if not isinstance(args, dict):
        return None
    command = args.get("cmd") or args.get("command")
    if isinstance(command, list):
        command = " ".join(str(c) for c in command)
    return unwrap_command(command) if isinstance(command, str) else None


def call_summary(payload: dict[str, Any]) -> tuple[str, str]:
    """(tool name, one-line summary) of a function_call / custom_tool_call payload."""
    return _summary(payload, _arguments(payload))


def _summary(payload: dict[str, Any], args: Any, command: str | None = None) -> tuple[str, str]:
    name = str(payload.get("name") or payload.get("type") or "tool")
    command = command if command is not None else _command(args)
    if command is not None:
        return name, one_line_value(command)
    if name == "apply_patch" and isinstance(args, str):
        files = _PATCH_FILE.findall(args)
        return name, "patch " + (", ".join(files) if files else f"({len(args)} chars)")
    return name, one_line_value(args if args is not None else "(no input)")


def patched_files(payload: dict[str, Any]) -> list[str]:
    args = _arguments(payload)
    return _PATCH_FILE.findall(args) if isinstance(args, str) else []


@dataclass
class _Requests:
    """Each user message once: a response item and its event say the same thing, in either order."""

    asked: bool = False
    from_items: deque[str] = field(default_factory=lambda: deque(maxlen=16))
    from_events: deque[str] = field(default_factory=lambda: deque(maxlen=16))

    def shown(self, text: str, from_item: bool) -> bool:
        """Whether this message is a follow-up to show (not the first request, not seen before)."""
        flat = " ".join(text.split())
        mine, other = (
            (self.from_items, self.from_events) if from_item else (self.from_events, self.from_items)
        )
        if flat in other:
            other.remove(flat)
            return False
        mine.append(flat)
        show, self.asked = self.asked, True
        return show


@dataclass
class RolloutSession:
    steps: list[TraceStep] = field(default_factory=list)
    final_answer: str = ""
    finished: bool = False
    evidence: str = ""


class _Reader:
    def __init__(self) -> None:
        self.session = RolloutSession()
        self.names: dict[str, str] = {}
        self.requests = _Requests()
        self.unified = UnifiedExec()
        self.turns = 0

    def add(self, record: dict[str, Any]) -> None:
        payload = record.get("payload")
        if not isinstance(payload, dict):
            return
        if record.get("type") == "event_msg":
            self.event(payload)
        elif record.get("type") == "response_item":
            self.item(payload)

    def follow_up(self, text: str) -> None:
        self.session.steps.append(TraceStep("user", text, "follow-up"))
        self.session.finished, self.session.evidence = False, ""  # a new turn, until its task_complete

    def event(self, payload: dict[str, Any]) -> None:
        kind, steps = payload.get("type"), self.session.steps
        if kind == "task_complete":
            steps.extend(self.unified.close_turn())
            self.session.finished, self.session.evidence = True, "the last turn ends with task_complete"
            self.turns += 1
        elif kind == "turn_aborted":
            steps.extend(self.unified.close_turn())
            self.session.finished = False
            self.session.evidence = f"the last turn was aborted ({payload.get('reason', '')})"
            steps.append(TraceStep("user", f"turn aborted: {payload.get('reason', '')}", "interrupt"))
        elif kind == "exec_command_end":
            self.unified.end_record(
                str(payload.get("call_id")), payload.get("exit_code"), payload.get("aggregated_output")
            )
        elif (
            kind == "item_completed"
            and isinstance(item := payload.get("item"), dict)
            and item.get("type") == "CommandExecution"
        ):
            self.unified.end_record(str(item.get("id")), item.get("exit_code"), item.get("aggregated_output"))
        elif (text := _event_request(payload)) and self.requests.shown(text, from_item=False):
            self.follow_up(text)

    def item(self, payload: dict[str, Any]) -> None:
        kind, steps = payload.get("type"), self.session.steps
        if kind in _OUTPUTS:  # the most frequent kinds first: a rollout is mostly calls and outputs
            ref = str(payload.get("call_id"))
            steps.append(self.unified.result(ref, self.names.get(ref), payload.get("output")))
        elif kind in _CALLS:
            ref, args = str(payload.get("call_id") or payload.get("id")), _arguments(payload)
            name = str(payload.get("name") or kind)
            if name in _POLL_TOOLS:
                summary = self.unified.poll_call(ref, args)
            else:
                command = _command(args)
                name, summary = _summary(payload, args, command)
                if command is not None:
                    self.unified.exec_call(ref, command)
            self.names[ref] = name
            steps.append(TraceStep("tool_call", summary, name, ref=ref))
        elif kind == "message":
            role, text = payload.get("role"), _message_text(payload)
            if role == "assistant" and text.strip():
                steps.append(TraceStep("text", text))
                self.session.final_answer = steps[-1].text
            elif role == "user" and (request := _request_text(text)) and self.requests.shown(request, True):
                self.follow_up(request)
        elif kind == "web_search_call":
            raw = payload.get("action")
            action: dict[str, Any] = raw if isinstance(raw, dict) else {}
            steps.append(TraceStep("tool_call", one_line_value(action.get("query", "")), "web_search"))


def rollout_steps(records: Iterable[dict[str, Any]]) -> RolloutSession:
    reader = _Reader()
    for record in records:
        if isinstance(record, dict):
            reader.add(record)
    session = reader.session
    session.steps.extend(reader.unified.close_turn("when the session stopped"))
    if not session.finished:
        session.evidence = session.evidence or (
            "the last turn has no task_complete event: the session stops mid-turn"
            if reader.turns or session.steps
            else "the session recorded no turn"
        )
        note = f"session unfinished: {session.evidence}"
        session.steps.append(TraceStep("text", note, is_error=True))
    return session
