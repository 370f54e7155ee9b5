"""Codex session files (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`) -> TraceSteps.

A rollout line is `{"timestamp", "type", "payload"}`: `session_meta` first, then `response_item`s
(the conversation as the model saw it: messages, `function_call` / `custom_tool_call` and their
outputs, reasoning) and `event_msg`s (UI events; `task_complete` closes a turn). Steps come from the
response items: assistant messages -> `text`; calls -> `tool_call` (the command of `exec_command` /
`shell`, the files of `apply_patch`); outputs -> `tool_result`, an error when the process exited
non-zero; user messages after the first request -> `user`; the harness's own context messages
(environment, permissions, instructions) and reasoning are dropped. A turn without `task_complete`
is unfinished. This is the format `codex exec` writes when it is not `--ephemeral`, and the one the
interactive CLI keeps.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from skillgrad.text import clean_text
from skillgrad.traces.codex import unwrap_command
from skillgrad.traces.summaries import one_line_value
from skillgrad.values import TraceStep

ROLLOUT_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})
_CONTEXT_PREFIXES = (
    "<environment_context>",
    "<user_instructions>",
    "<permissions",
    "<INSTRUCTIONS>",
    "# AGENTS.md",
)
_EXIT = re.compile(r"(?:Process exited with code|Exit code:?)\s*(-?\d+)")
_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$", re.M)


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


def rollout_request(record: dict[str, Any]) -> str | None:
    """The text of a rollout record that is a user request, else None."""
    payload = record.get("payload") if record.get("type") == "response_item" else None
    if not isinstance(payload, dict) or payload.get("type") != "message" or payload.get("role") != "user":
        return None
    text = clean_text(_message_text(payload)).strip()
    return text if text and not text.startswith(_CONTEXT_PREFIXES) else None


def _arguments(payload: dict[str, Any]) -> Any:
    raw = payload.get("arguments", payload.get("input"))
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


def call_summary(payload: dict[str, Any]) -> tuple[str, str]:
    """(tool name, one-line summary) of a function_call / custom_tool_call payload."""
    name = str(payload.get("name") or payload.get("type") or "tool")
    args = _arguments(payload)
    if isinstance(args, dict):
        command = args.get("cmd") or args.get("command")
        if isinstance(command, list):
            command = " ".join(str(c) for c in command)
        if isinstance(command, str):
            return name, one_line_value(unwrap_command(command))
    if name == "apply_patch" and isinstance(args, str):
        files = _PATCH_FILE.findall(args)
        return name, "patch " + (", ".join(files) if files else f"({len(args)} chars)")
    return name, one_line_value(args if args is not None else "(no input)")


def patched_files(payload: dict[str, Any]) -> list[str]:
    args = _arguments(payload)
    return _PATCH_FILE.findall(args) if isinstance(args, str) else []


def _output(payload: dict[str, Any]) -> tuple[str, bool]:
    raw = payload.get("output")
    text = raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)
    exit_code = _EXIT.search(text)
    failed = bool(exit_code and exit_code.group(1) != "0")
    body = text.split("\nOutput:\n", 1)[1] if "\nOutput:\n" in text else text
    prefix = f"exit code {exit_code.group(1)}: " if exit_code else ""
    return clean_text(prefix + body.strip()), failed


@dataclass
class RolloutSession:
    steps: list[TraceStep] = field(default_factory=list)
    final_answer: str = ""
    finished: bool = False


def rollout_steps(records: Iterable[dict[str, Any]]) -> RolloutSession:
    session = RolloutSession()
    names: dict[str, str] = {}
    asked = False
    for record in records:
        payload = record.get("payload") if isinstance(record, dict) else None
        if not isinstance(payload, dict):
            continue
        kind = payload.get("type")
        if record.get("type") == "event_msg":
            if kind == "task_complete":
                session.finished = True
            elif kind == "turn_aborted":
                session.finished = False
                session.steps.append(
                    TraceStep("user", f"turn aborted: {payload.get('reason', '')}", "interrupt")
                )
            continue
        if record.get("type") != "response_item":
            continue
        if kind == "message" and payload.get("role") == "assistant":
            text = clean_text(_message_text(payload))
            if text.strip():
                session.steps.append(TraceStep("text", text))
                session.final_answer = text
        elif kind == "message" and payload.get("role") == "user" and (request := rollout_request(record)):
            if asked:
                session.steps.append(TraceStep("user", request, "follow-up"))
                session.finished = False  # a new turn: finished again only at its task_complete
            asked = True
        elif kind in ("function_call", "custom_tool_call", "local_shell_call"):
            name, summary = call_summary(payload)
            ref = str(payload.get("call_id") or payload.get("id"))
            names[ref] = name
            session.steps.append(TraceStep("tool_call", clean_text(summary), name, ref=ref))
        elif kind in ("function_call_output", "custom_tool_call_output"):
            ref = str(payload.get("call_id"))
            text, failed = _output(payload)
            session.steps.append(TraceStep("tool_result", text, names.get(ref), failed, ref=ref))
        elif kind == "web_search_call":
            raw = payload.get("action")
            action: dict[str, Any] = raw if isinstance(raw, dict) else {}
            session.steps.append(
                TraceStep("tool_call", one_line_value(action.get("query", "")), "web_search")
            )
    if not session.finished:
        note = "session unfinished: the last turn has no task_complete event"
        session.steps.append(TraceStep("text", note, is_error=True))
    return session
