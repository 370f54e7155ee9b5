"""Codex session files (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`) -> TraceSteps.

A rollout line is `{"timestamp", "type", "payload"}`: `session_meta` first, then `response_item`s
(the conversation as the model saw it: messages, `function_call` / `custom_tool_call` and their
outputs, reasoning) and `event_msg`s (UI events; `task_started` / `task_complete` open and close a
turn). Steps come from the response items: assistant messages -> `text`; calls -> `tool_call` (the
command of `exec_command` / `shell`, the files of `apply_patch`, the session a `write_stdin` polls);
outputs -> `tool_result`, an error when the process exited non-zero or the tool could not run it
(`execution error: ...`, codex_unified.py); unified exec polls are tied to their command. User
messages after the first request -> `user` follow-ups, each message once, whichever record says it
(codex_requests.py); the harness's own context messages and reasoning are dropped. A compaction
(`compacted`, `event_msg context_compacted`, a `compaction` / `context_compaction` response item)
-> one `user compact` step, as Claude Code's.

How the session ended comes from what its CLI version writes: a last turn closed by
`task_complete` finished, one without it stopped mid-turn. A rollout that writes no turn events at
all (Codex 0.40 did not) is judged by how it stops: on the agent's answer with no call open it
finished; on an unanswered call, output or user message it is unfinished. This is the format
`codex exec` writes when it is not `--ephemeral`, and the one the interactive CLI keeps.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson

from skillgrad.text import clean_text
from skillgrad.traces.codex import unwrap_argv, unwrap_command
from skillgrad.traces.codex_requests import Requests, redacted_empty
from skillgrad.traces.codex_unified import UnifiedExec
from skillgrad.traces.steps import session_note
from skillgrad.traces.summaries import one_line_value
from skillgrad.traces.user_turns import compact_step
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
_IMAGE_TAG = re.compile(r"^</?image\b[^>]*>$")  # the parts that wrap an attached image
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
    """A message's text parts; an attached image is `[image]` (its wrapper parts are dropped)."""
    content = payload.get("content")
    if isinstance(content, str):
        return content
    parts = []
    for part in content or []:
        if not isinstance(part, dict):
            continue
        if part.get("type") == "input_image":
            parts.append("[image]")
        elif (text := str(part.get("text", ""))) and not _IMAGE_TAG.match(text.strip()):
            parts.append(text)
    return "\n".join(parts)


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
        images = payload.get("images")
        attached = ["[image]"] * len(images) if isinstance(images, list) else []
        return _request_text("\n".join([str(payload.get("message") or ""), *attached]))
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
    if isinstance(command, list):  # `shell`'s argv: ["bash", "-lc", "<script>"] says the script
        argv = [str(c) for c in command]
        command = unwrap_argv(argv) if len(argv) == 3 else " ".join(argv)
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
class RolloutSession:
    steps: list[TraceStep] = field(default_factory=list)
    final_answer: str = ""
    finished: bool = False
    evidence: str = ""


def _agent_item(payload: dict[str, Any]) -> bool:
    kind = payload.get("type")
    if kind == "message":
        return payload.get("role") == "assistant"
    return kind in _CALLS or kind in _OUTPUTS or kind == "web_search_call"


class _Reader:
    def __init__(self) -> None:
        self.session = RolloutSession()
        self.names: dict[str, str] = {}
        self.open_calls: dict[str, str] = {}  # call ref -> tool, for calls whose output has not come
        self.requests = Requests()
        self.unified = UnifiedExec()
        self.turn_events = False  # the file writes task_started / task_complete
        self.last: str | None = None  # what the agent's thread did last: answer, call, result, user
        self.version = ""

    def add(self, record: dict[str, Any]) -> None:
        payload = record.get("payload")
        if not isinstance(payload, dict):
            return
        kind = record.get("type")
        if kind == "response_item" and payload.get("type") == "message" and payload.get("role") == "user":
            if request := _request_text(_message_text(payload)):
                self.follow_ups(self.requests.item(request))
            return
        if kind == "event_msg" and (request := _event_request(payload)):
            self.follow_ups(self.requests.event(request))
            return
        self.follow_ups(self.requests.other(kind == "response_item" and _agent_item(payload)))
        if kind == "event_msg":
            self.event(payload)
        elif kind == "response_item":
            self.item(payload)
        elif kind == "compacted":
            history = payload.get("replacement_history")
            summary = str(payload.get("message") or "")
            kept = len(history) if isinstance(history, list) else None
            self.compaction("" if redacted_empty(summary) else summary, kept)
        elif kind == "session_meta":
            self.version = str(payload.get("cli_version") or "")

    def follow_ups(self, texts: list[str]) -> None:
        for text in texts:
            self.session.steps.append(TraceStep("user", text, "follow-up"))
            self.session.finished, self.session.evidence = False, ""  # a new turn, until its task_complete
            self.last = "user"

    def compaction(self, summary: str, kept: int | None) -> None:
        """One step per compaction, whichever of its two records come (the fuller one wins)."""
        steps = self.session.steps
        step = compact_step(summary, kept=kept)
        if steps and steps[-1].kind == "user" and steps[-1].tool == "compact":
            if kept is not None or summary:
                steps[-1] = step
            return
        steps.append(step)

    def event(self, payload: dict[str, Any]) -> None:
        kind, steps = payload.get("type"), self.session.steps
        if kind == "task_started":
            self.turn_events = True
            self.requests.turn_started()
        elif kind == "task_complete":
            steps.extend(self.unified.close_turn())
            self.turn_events = True
            self.session.finished, self.session.evidence = True, "the last turn ends with task_complete"
        elif kind == "turn_aborted":
            steps.extend(self.unified.close_turn())
            self.turn_events = True
            self.session.finished = False
            self.session.evidence = f"the last turn was aborted ({payload.get('reason', '')})"
            steps.append(TraceStep("user", f"turn aborted: {payload.get('reason', '')}", "interrupt"))
        elif kind == "context_compacted":
            self.compaction("", None)
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

    def item(self, payload: dict[str, Any]) -> None:
        kind, steps = payload.get("type"), self.session.steps
        if kind in _OUTPUTS:  # the most frequent kinds first: a rollout is mostly calls and outputs
            ref = str(payload.get("call_id"))
            self.open_calls.pop(ref, None)
            steps.append(self.unified.result(ref, self.names.get(ref), payload.get("output")))
            self.last = "result"
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
            self.names[ref] = self.open_calls[ref] = name
            steps.append(TraceStep("tool_call", summary, name, ref=ref))
            self.last = "call"
        elif kind == "message":
            if payload.get("role") == "assistant" and (text := _message_text(payload)).strip():
                steps.append(TraceStep("text", text))
                self.session.final_answer = steps[-1].text
                self.last = "answer"
        elif kind in ("compaction", "context_compaction"):  # later CLIs: the compacted history's marker
            self.compaction("", None)
        elif kind == "web_search_call":
            raw = payload.get("action")
            action: dict[str, Any] = raw if isinstance(raw, dict) else {}
            steps.append(TraceStep("tool_call", one_line_value(action.get("query", "")), "web_search"))

    def without_turn_events(self) -> tuple[bool, str]:
        """(finished, evidence) for a rollout whose CLI writes no turn events: how it stops."""
        writer = f"Codex {self.version}" if self.version else "this rollout"
        if self.open_calls:
            return False, f"the last {list(self.open_calls.values())[-1]} call never got its output"
        if self.last == "answer":
            return (
                True,
                f"the session ends on the agent's answer with no call open ({writer} writes no turn events)",
            )
        return False, {
            "result": "the last tool output was never answered: the session stops mid-turn",
            "user": "the last user message was never answered",
        }.get(str(self.last), "the agent never answered")


def rollout_steps(records: Iterable[dict[str, Any]]) -> RolloutSession:
    reader = _Reader()
    for record in records:
        if isinstance(record, dict):
            reader.add(record)
    reader.follow_ups(reader.requests.other(agent_step=True))
    session = reader.session
    session.steps.extend(reader.unified.close_turn("when the session stopped"))
    if session.steps and not reader.turn_events:
        session.finished, session.evidence = reader.without_turn_events()
    if not session.finished:
        session.evidence = session.evidence or (
            "the last turn has no task_complete event: the session stops mid-turn"
            if reader.turn_events
            else "the session recorded no turn"
        )
        session.steps.append(session_note(f"session unfinished: {session.evidence}"))
    return session
