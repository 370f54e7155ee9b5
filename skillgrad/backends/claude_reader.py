"""Claude Code as an analyst that reads a folder (`ReadingChatModel.investigate`, see `reading`).

Found by running the bundled CLI (2.1.x) against a scripted API: `tools` is the allow-list of what
the session has at all: Read, Grep and Glob (no Bash, Write, Edit, web or Task tools; a call of
one is answered "No such tool available", in subagents too). No permission rule is granted
(`allowed_tools` empty, no settings loaded), so the default permission mode lets the tools read
under the working folder only: a read outside it is refused ("requested permissions to read").
A plain `Read` allow rule would open the whole disk, so none is given.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skillgrad.backends.claude_session import STDERR_LINES, is_transient, run_session
from skillgrad.backends.common import split_messages
from skillgrad.backends.reading import ReadingBounds, SessionOutcome, SessionRunner, ToolUse
from skillgrad.lazy import lazy_import
from skillgrad.traces.claude import tool_result_text
from skillgrad.values import Effort, Message, Usage

if TYPE_CHECKING:
    import claude_agent_sdk as sdk
else:
    sdk = lazy_import("claude_agent_sdk")  # loaded on first use

READ_TOOLS = ("Read", "Grep", "Glob")
ANSWER_TURNS = 2  # the answer, plus the CLI's own reminder to give it as StructuredOutput
_ANSWER_TOOL = "StructuredOutput"


def reading_options(
    common: dict[str, Any],
    folder: Path,
    system: str,
    schema: dict[str, Any] | None,
    effort: Effort | None,
    turns: int,
) -> sdk.ClaudeAgentOptions:
    """The session's options; `common` are the optimizer's own (endpoint, key, model, launcher)."""
    return sdk.ClaudeAgentOptions(
        cwd=str(folder),
        system_prompt=system,
        tools=list(READ_TOOLS),
        allowed_tools=[],
        permission_mode="default",
        setting_sources=[],
        output_format={"type": "json_schema", "schema": schema} if schema is not None else None,
        max_turns=turns + ANSWER_TURNS,
        effort=effort,
        **common,
    )


def tool_uses(events: list[dict[str, Any]]) -> list[ToolUse]:
    """Every tool call of the session with its result, in order (the structured answer aside)."""
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    order: list[str] = []
    results: dict[str, tuple[str, bool]] = {}
    for event in events:
        message = event.get("message") if isinstance(event.get("message"), dict) else {}
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use" and block.get("name") != _ANSWER_TOOL:
                call_id = str(block.get("id"))
                tool_input = block.get("input")
                calls[call_id] = (str(block.get("name")), tool_input if isinstance(tool_input, dict) else {})
                order.append(call_id)
            elif block.get("type") == "tool_result":
                text = tool_result_text(block.get("content"))
                results[str(block.get("tool_use_id"))] = (text, bool(block.get("is_error")))
    uses = []
    for call_id in order:
        name, tool_input = calls[call_id]
        text, is_error = results.get(call_id, ("(no result: the session ended first)", True))
        uses.append(ToolUse.of(name, tool_input, text, is_error))
    return uses


def _turns(events: list[dict[str, Any]]) -> int:
    """Model turns: the result's count, else the distinct assistant messages seen."""
    for event in events:
        if event.get("type") == "result" and isinstance(event.get("num_turns"), int):
            return int(event["num_turns"])
    ids = {(event.get("message") or {}).get("id") for event in events if event.get("type") == "assistant"}
    return len(ids)


def session_runner(
    common: Callable[[deque[str]], dict[str, Any]],
    folder: Path,
    bounds: ReadingBounds,
    schema: dict[str, Any] | None,
    effort: Effort | None,
    key_hint: str,
) -> SessionRunner:
    """One session a call, in `folder`; `common(stderr)` gives the optimizer's common options."""

    def run(messages: list[Message], seconds_left: float) -> SessionOutcome:
        system, prompt = split_messages(messages)
        stderr: deque[str] = deque(maxlen=STDERR_LINES)
        options = reading_options(common(stderr), folder, system, schema, effort, bounds.turns)
        events, session, failure = run_session(prompt, options, seconds_left, stderr, key_hint)
        usage = session.usage or Usage(calls=1, cost_usd=None)
        outcome = SessionOutcome(None, usage, tool_uses=tool_uses(events), turns=_turns(events))
        if session.terminal_reason == "max_turns":
            outcome.bound = (
                f"used its {bounds.turns} turns (optimizer.reflection_turns) reading its workspace "
                "without answering; raise optimizer.reflection_turns"
            )
        elif failure is not None and "timed out" in failure:
            outcome.bound = (
                f"ran past optimizer.reflection_timeout_s={bounds.timeout_s:g}s while reading its "
                "workspace; raise optimizer.reflection_timeout_s"
            )
        elif is_transient(failure, session):
            outcome.failure = failure or "; ".join(session.errors)
        elif session.structured_output is not None:
            outcome.answer = json.dumps(session.structured_output)
        else:
            outcome.answer = session.final_answer
        return outcome

    return run
