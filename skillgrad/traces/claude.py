"""Claude Code session records -> TraceSteps (DESIGN.md "Traces").

One parser reads the three record forms, which share the same per-line shape (`type` +
`message` with Messages-API content blocks):
  (a) `claude -p --output-format stream-json --verbose` output,
  (b) the raw-messages JSONL the claude_code_exec backend keeps (SDK messages written back in the
      stream-json shape, see `skillgrad.backends.claude_code.sdk_message_to_event`),
  (c) session transcripts under `~/.claude/projects/<project>/<session>.jsonl` (extra bookkeeping
      line kinds such as `summary`, `attachment`, `queue-operation` are skipped).
Unknown line kinds are skipped, never fatal: the CLI adds kinds often and the optimizer only needs
text, tool calls and tool results.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skillgrad.backends.base import Usage
from skillgrad.errors import UserError
from skillgrad.traces.steps import TraceStep

# Keys whose value best says what a tool call does, most telling first.
_SUMMARY_KEYS = (
    "command",
    "file_path",
    "notebook_path",
    "pattern",
    "path",
    "url",
    "query",
    "skill",
    "prompt",
)
_REMINDER = re.compile(r"\s*<system-reminder>.*?</system-reminder>\s*", re.DOTALL)
_RECORD_TYPES = {"system", "assistant", "user", "result"}
_SUMMARY_VALUE_CHARS = 300


@dataclass
class ParsedSession:
    steps: list[TraceStep] = field(default_factory=list)
    final_answer: str = ""
    is_error: bool = False
    terminal_reason: str | None = None
    usage: Usage | None = None  # from the result record only; None when there is none (transcripts)
    errors: list[str] = field(default_factory=list)  # the result's error texts, when it failed
    structured_output: Any = None


def _one_line(value: Any, limit: int = _SUMMARY_VALUE_CHARS) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "..."


def summarize_tool_input(name: str, tool_input: Any) -> str:
    """A one-line summary of a tool call's input: the telling argument, then the other keys."""
    if not isinstance(tool_input, dict):
        return _one_line(tool_input)
    main = next((k for k in _SUMMARY_KEYS if isinstance(tool_input.get(k), str)), None)
    parts = [_one_line(tool_input[main])] if main else []
    for key, value in tool_input.items():
        if key == main or key == "description":
            continue
        if isinstance(value, str) and len(value) > 80:
            parts.append(f"{key}=<{len(value)} chars>")  # file contents, edit strings: size only
        else:
            parts.append(f"{key}={_one_line(value, 80)}")
    return " ".join(parts) if parts else "(no input)"


def tool_result_text(content: Any) -> str:
    """Text of a tool_result's content: a string, or the text parts of a list of blocks."""
    if content is None:
        return ""
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
            elif isinstance(block, dict) and block.get("type"):
                parts.append(f"[{block['type']}]")  # images, documents: say they were there
        text = "\n".join(parts)
    else:
        text = json.dumps(content, ensure_ascii=False)
    return _REMINDER.sub("\n", text).strip()


def _message(event: dict[str, Any]) -> dict[str, Any] | None:
    msg = event.get("message")
    return msg if isinstance(msg, dict) else None


def _is_main_chain(event: dict[str, Any]) -> bool:
    return not event.get("parent_tool_use_id") and not event.get("isSidechain")


class _Builder:
    """Accumulates steps from events; keeps tool names by id so results name their tool."""

    def __init__(self) -> None:
        self.steps: list[TraceStep] = []
        self.tool_names: dict[str, str] = {}
        self.last_main_text: str | None = None
        self.result: dict[str, Any] | None = None

    def assistant(self, event: dict[str, Any]) -> None:
        msg = _message(event)
        content = msg.get("content") if msg else None
        if not isinstance(content, list):
            return
        # An API error surfaces as an assistant text message flagged on the event.
        failed = bool(event.get("error") or event.get("isApiErrorMessage"))
        for block in content:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text" and str(block.get("text", "")).strip():
                text = str(block["text"])
                self.steps.append(TraceStep("text", text, is_error=failed))
                if _is_main_chain(event):
                    self.last_main_text = text
            elif kind in ("tool_use", "server_tool_use"):
                name = str(block.get("name") or "tool")
                self.tool_names[str(block.get("id"))] = name
                summary = summarize_tool_input(name, block.get("input"))
                self.steps.append(TraceStep("tool_call", summary, tool=name))
            # thinking / redacted_thinking blocks are dropped by design

    def user(self, event: dict[str, Any]) -> None:
        msg = _message(event)
        content = msg.get("content") if msg else None
        if not isinstance(content, list):
            return  # a plain-string user message is the prompt, not a step
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                name = self.tool_names.get(str(block.get("tool_use_id")))
                text = tool_result_text(block.get("content"))
                self.steps.append(
                    TraceStep("tool_result", text, tool=name, is_error=bool(block.get("is_error")))
                )

    def add(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "assistant":
            self.assistant(event)
        elif kind == "user":
            self.user(event)
        elif kind == "result":
            self.result = event  # the last one wins: a resumed session can carry several


def _usage(result: dict[str, Any]) -> Usage:
    raw = result.get("usage") or {}
    tokens_in = sum(
        int(raw.get(k) or 0)
        for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    )
    return Usage(tokens_in, int(raw.get("output_tokens") or 0), 1, result_cost(result))


def result_cost(result: dict[str, Any]) -> float | None:
    """total_cost_usd when every model used is priced from Anthropic's list, else None (unknown).

    The CLI prices unknown model names too, with a made-up default; it marks its list prices with
    `costBasis: "list"` per model, so anything else (or no marking at all) counts as unknown.
    """
    cost = result.get("total_cost_usd")
    models = result.get("modelUsage") or result.get("model_usage") or {}
    if cost is None:
        return None
    if not models:  # no model was called (e.g. the first request failed): nothing was spent
        return float(cost) if float(cost) == 0.0 else None
    known = all(isinstance(e, dict) and e.get("costBasis") == "list" for e in models.values())
    return float(cost) if known else None


def _finish(b: _Builder) -> ParsedSession:
    session = ParsedSession(steps=b.steps, final_answer=b.last_main_text or "")
    result = b.result
    if result is None:
        return session
    session.terminal_reason = result.get("terminal_reason")
    session.is_error = bool(result.get("is_error")) or session.terminal_reason not in (None, "completed")
    session.usage = _usage(result)
    session.structured_output = result.get("structured_output")
    errors = [str(e) for e in result.get("errors") or []]
    text = result.get("result")
    if session.is_error:
        session.errors = errors or ([text] if isinstance(text, str) and text else [])
        if not session.errors:
            session.errors = [f"Claude Code stopped: {session.terminal_reason or result.get('subtype')}"]
        message = "; ".join(session.errors)
        if message.strip() != (b.last_main_text or "").strip():
            session.steps.append(TraceStep("text", message, is_error=True))
        return session  # the answer stays the last assistant text: a failed run has no result text
    if isinstance(text, str):
        session.final_answer = text
        # The result repeats the last assistant text; a structured answer already shows as the
        # StructuredOutput tool call. Only an answer seen nowhere else becomes a step.
        seen = text.strip() == (b.last_main_text or "").strip() or session.structured_output is not None
        if text.strip() and not seen:
            session.steps.append(TraceStep("text", text))
    return session


def steps_from_events(events: Iterable[dict[str, Any]]) -> ParsedSession:
    """Parse session records (any of the three forms) into steps, final answer and outcome."""
    builder = _Builder()
    for event in events:
        if isinstance(event, dict):
            builder.add(event)
    return _finish(builder)


def _records(path: Path, text: str) -> list[dict[str, Any]]:
    stripped = text.strip()
    if stripped.startswith("["):  # a JSON array of records is accepted too
        try:
            data = json.loads(stripped)
        except json.JSONDecodeError:
            data = None
        if isinstance(data, list):
            return [d for d in data if isinstance(d, dict)]
    records: list[dict[str, Any]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError:
            if not records:
                raise UserError(
                    f"{path}: line {number} is not JSON; expected a Claude Code session record "
                    "(stream-json output, raw-messages JSONL or a ~/.claude/projects transcript)"
                ) from None
            continue  # a transcript still being written can end in a partial line
        if isinstance(item, dict):
            records.append(item)
    return records


def load_session(path: str | Path) -> ParsedSession:
    """Parse a session record file; raises UserError (one line naming the file) when it is none."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"{path}: file not found; pass a Claude Code session record (.jsonl)") from None
    except (UnicodeDecodeError, IsADirectoryError, PermissionError) as exc:
        raise UserError(f"{path}: cannot read it as UTF-8 text ({type(exc).__name__})") from None
    records = _records(path, text)
    if not any(r.get("type") in _RECORD_TYPES for r in records):
        raise UserError(
            f"{path}: no Claude Code session records found; expected stream-json output, "
            "raw-messages JSONL or a ~/.claude/projects transcript"
        )
    return steps_from_events(records)


def load_trace_file(path: str | Path) -> list[TraceStep]:
    """The TraceSteps of a session record file (what `skillgrad trace FILE` renders)."""
    return load_session(path).steps
