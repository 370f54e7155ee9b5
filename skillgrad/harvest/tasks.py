"""One Claude Code or Codex session file -> the tasks the user asked for, each with what followed it.

A task is a user request (the first prompt, a later follow-up, or a slash command with its
arguments) and every record up to the next request. Its steps come from the trace parser (so
subagents, compaction, hooks and interrupts are handled once, there); on top of them a task carries
the files the session read or changed, its outcome signals (tool errors, interrupts, rejected tool
uses, hook feedback, whether the next request corrected or accepted it, the final answer), a rubric
derived from those signals for the judge, and a provenance link (file, line, session, time).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skillgrad.text import clean_text
from skillgrad.traces.claude import steps_from_events
from skillgrad.traces.codex_rollout import is_rollout_record, patched_files, rollout_request, rollout_steps
from skillgrad.traces.record_stream import iter_numbered_records
from skillgrad.traces.steps import is_session_note, one_line
from skillgrad.traces.user_turns import user_step
from skillgrad.values import TraceStep

_READ_TOOLS = {"Read": "file_path", "NotebookRead": "notebook_path"}
_WRITE_TOOLS = {
    "Write": "file_path",
    "Edit": "file_path",
    "MultiEdit": "file_path",
    "NotebookEdit": "notebook_path",
}
_CORRECTION = re.compile(
    r"^(no\b|nope|don'?t|do not|instead|actually|wrong|that'?s not|not what|you didn'?t|it didn'?t|"
    r"still (fails|broken|not)|doesn'?t work|didn'?t work|undo|revert|stop\b)|\b(instead|you don'?t need)\b",
    re.I,
)
_APPROVAL = re.compile(
    r"^(thanks|thank you|great|nice|perfect|works|looks good|lgtm|good job|awesome|ok(ay)?\b.*commit)"
    r"|\bplease commit\b|\bworks great\b",
    re.I,
)
_CLIP = 300


@dataclass
class HarvestedTask:
    request: str
    source: str  # "prompt" | "follow-up" | "command"
    steps: list[TraceStep]
    final_answer: str
    files_read: list[str]
    files_changed: list[str]
    provenance: dict[str, Any]
    signals: dict[str, Any] = field(default_factory=dict)
    accepted: bool | None = None
    rubric: list[str] = field(default_factory=list)


def _is_main(record: dict[str, Any]) -> bool:
    return not record.get("isSidechain") and not record.get("parent_tool_use_id")


def request_of(record: dict[str, Any]) -> tuple[str, str] | None:
    """(request text, source) when a record is a user request that starts a task, else None."""
    if (
        record.get("type") != "user"
        or not _is_main(record)
        or record.get("isMeta")
        or record.get("isCompactSummary")
    ):
        return None
    content = (
        (record.get("message") or {}).get("content") if isinstance(record.get("message"), dict) else None
    )
    if isinstance(content, list):
        if any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
            return None
        content = "\n".join(
            str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text"
        )
    if not isinstance(content, str):
        return None
    step = user_step(content)
    if step is None or step.tool not in ("follow-up", "command") or step.text.startswith("output:"):
        return None
    return clean_text(step.text), "command" if step.tool == "command" else "follow-up"


def _tool_paths(records: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    read: dict[str, None] = {}
    changed: dict[str, None] = {}
    for record in records:
        inner = record.get("data", {}).get("message") if record.get("type") == "progress" else record
        message = inner.get("message") if isinstance(inner, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict) or block.get("type") != "tool_use":
                continue
            raw = block.get("input")
            args: dict[str, Any] = raw if isinstance(raw, dict) else {}
            name = str(block.get("name"))
            if name in _WRITE_TOOLS and isinstance(args.get(_WRITE_TOOLS[name]), str):
                changed[args[_WRITE_TOOLS[name]]] = None
            elif name in _READ_TOOLS and isinstance(args.get(_READ_TOOLS[name]), str):
                read[args[_READ_TOOLS[name]]] = None
    return list(read), list(changed)


def _signals(steps: list[TraceStep]) -> dict[str, Any]:
    errors = [s for s in steps if s.kind == "tool_result" and s.is_error]
    return {
        "tool_errors": len(errors),
        "interrupts": sum(1 for s in steps if s.kind == "user" and s.tool == "interrupt"),
        "rejections": sum(1 for s in steps if s.kind == "user" and s.tool == "rejection"),
        "hook_feedback": [one_line(s.text)[:_CLIP] for s in steps if s.kind == "user" and s.tool == "hook"],
        "first_errors": [f"{s.tool}: {one_line(s.text)[:_CLIP]}" for s in errors[:3]],
    }


def _rubric(task: HarvestedTask, next_request: str | None) -> list[str]:
    rubric = [f"Does what was asked: {one_line(task.request)[:_CLIP]}"]
    if task.signals.get("correction"):
        rubric.append(
            f"Avoids what the user had to correct afterwards: {one_line(next_request or '')[:_CLIP]}"
        )
    if task.signals["rejections"] or task.signals["interrupts"]:
        rubric.append("Avoids the actions the user stopped or refused in the original session.")
    rubric += [f"Does not repeat the original session's error: {e}" for e in task.signals["first_errors"]]
    rubric += [f"Satisfies the project's hook: {h}" for h in task.signals["hook_feedback"][:2]]
    if task.accepted and task.final_answer:
        rubric.append(f"Reaches the outcome the user accepted: {one_line(task.final_answer)[:_CLIP]}")
    return rubric


def _judge_next(task: HarvestedTask, next_request: str | None) -> None:
    """Set the outcome the next request tells: a correction, an approval, or nothing known."""
    correction = bool(next_request and _CORRECTION.search(next_request.strip()))
    approval = bool(next_request and _APPROVAL.search(next_request.strip())) and not correction
    stopped = task.signals["interrupts"] or task.signals["rejections"]
    task.signals["correction"] = correction or bool(stopped and next_request)
    task.accepted = False if (task.signals["correction"] or stopped) else (True if approval else None)
    task.rubric = _rubric(task, next_request)


def _claude_steps(records: list[dict[str, Any]]) -> tuple[list[TraceStep], str]:
    parsed = steps_from_events(records)
    steps = [s for s in parsed.steps if not is_session_note(s)]  # a slice of a session: never "unfinished"
    return steps, parsed.final_answer


def _codex_request(record: dict[str, Any]) -> tuple[str, str] | None:
    text = rollout_request(record)
    return (text, "follow-up") if text else None


def _codex_steps(records: list[dict[str, Any]]) -> tuple[list[TraceStep], str]:
    parsed = rollout_steps(records)
    steps = [s for s in parsed.steps if not is_session_note(s)]  # a slice of a session: never "unfinished"
    return steps, parsed.final_answer


def _codex_paths(records: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    changed = [f for r in records if isinstance(r.get("payload"), dict) for f in patched_files(r["payload"])]
    return [], list(dict.fromkeys(changed))


@dataclass(frozen=True)
class SessionFormat:
    """How one kind of session file says what a request is, and what followed it."""

    request_of: Callable[[dict[str, Any]], tuple[str, str] | None]
    steps: Callable[[list[dict[str, Any]]], tuple[list[TraceStep], str]]
    paths: Callable[[list[dict[str, Any]]], tuple[list[str], list[str]]]


CLAUDE = SessionFormat(lambda r: request_of(r), _claude_steps, lambda r: _tool_paths(r))
CODEX = SessionFormat(_codex_request, _codex_steps, _codex_paths)


def _segments(path: Path, fmt: SessionFormat) -> Iterator[tuple[int, str, str, list[dict[str, Any]]]]:
    """(line, request, source, records) per request, records running up to the next request."""
    current: tuple[int, str, str, list[dict[str, Any]]] | None = None
    for line, record in iter_numbered_records(path):
        found = fmt.request_of(record)
        if found is not None:
            if current is not None:
                yield current
            current = (line, found[0], found[1], [record])
        elif current is not None:
            current[3].append(record)
    if current is not None:
        yield current


def _format_and_session(path: Path) -> tuple[SessionFormat, str | None]:
    """The file's format (a Codex rollout starts with session_meta) and a session id it names."""
    first = next(iter_numbered_records(path), None)
    record = first[1] if first else {}
    if is_rollout_record(record):
        payload = record.get("payload") or {}
        return CODEX, payload.get("id") if record.get("type") == "session_meta" else None
    return CLAUDE, None


def session_tasks(path: Path) -> list[HarvestedTask]:
    """Every task of one session file (Claude Code or Codex), in order; a request the agent never
    answered is dropped."""
    fmt, session_id = _format_and_session(path)
    tasks: list[HarvestedTask] = []
    first = True
    for line, request, source, records in _segments(path, fmt):
        steps, final_answer = fmt.steps(records)
        if not any(s.kind in ("text", "tool_call") and s.agent is None for s in steps):
            continue  # /clear, /export and the like: nothing to replay
        read, changed = fmt.paths(records)
        head = records[0]
        provenance = {
            "file": str(path),
            "line": line,
            "session_id": head.get("sessionId") or head.get("session_id") or session_id,
            "timestamp": head.get("timestamp"),
        }
        kind = "prompt" if first and source != "command" else source
        first = False
        task = HarvestedTask(request, kind, steps, final_answer, read, changed, provenance)
        task.signals = _signals(steps)
        tasks.append(task)
    for task, following in zip(tasks, [*tasks[1:], None], strict=False):
        _judge_next(task, following.request if following else None)
    return tasks
