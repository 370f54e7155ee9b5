"""Claude Code session records -> TraceSteps.

One parser reads the three record forms, which share the same per-line shape (`type` + `message`
with Messages-API content blocks):
  (a) `claude -p --output-format stream-json --verbose` output (or `--output-format json`),
  (b) the raw-messages JSONL the claude_code_exec backend keeps (SDK messages written back in the
      stream-json shape, see `skillgrad.backends.claude_code.sdk_message_to_event`),
  (c) session transcripts under `~/.claude/projects/<project>/<session>.jsonl`, CLI 1.0 to 2.1.
Records stream through one at a time. Unknown kinds are skipped, never fatal. Subagent steps (inline
`isSidechain` lines, stream-json `parent_tool_use_id`, 2.1 `agent_progress` records, or separate
`agent-*.jsonl` files) are attributed to their subagent, whose report then appears once, as the
Task result. What the user or a hook says after the first prompt becomes a `user` step. A file of
several appended runs yields the last run. Without a result record a session is unfinished.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skillgrad.errors import UserError
from skillgrad.text import clean_text
from skillgrad.traces.claude_result import result_failed, result_usage
from skillgrad.traces.records import ReadStats, iter_records
from skillgrad.traces.summaries import summarize_tool_input
from skillgrad.traces.user_turns import REJECTION_PREFIX, rejection_step, user_step
from skillgrad.values import TraceStep, Usage

_REMINDER = re.compile(r"\s*<system-reminder>.*?</system-reminder>\s*", re.DOTALL)
_RECORD_TYPES = {"system", "assistant", "user", "result", "progress"}
_TASK_TOOLS = {"Task", "Agent"}


@dataclass
class ParsedSession:
    steps: list[TraceStep] = field(default_factory=list)
    final_answer: str = ""
    is_error: bool = False
    terminal_reason: str | None = None
    usage: Usage | None = None  # from the result record only; None when there is none
    errors: list[str] = field(default_factory=list)  # the result's error texts, when it failed
    structured_output: Any = None
    finished: bool = False  # a result record closed the session
    runs: int = 1  # runs found in the file; the steps and answer are the last one's
    skipped_lines: int = 0  # lines of the file that were not JSON records (torn, cut or noise)


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
    return clean_text(_REMINDER.sub("\n", text).strip())


def _agent_label(tool_input: Any) -> str:
    args = tool_input if isinstance(tool_input, dict) else {}
    kind = str(args.get("subagent_type") or "agent")
    description = " ".join(str(args.get("description") or "").split())[:40]
    return f"{kind} ({description})" if description else kind


@dataclass
class _Run:
    """One run's state: its steps, the answer so far, and what pairs results and subagents."""

    steps: list[TraceStep] = field(default_factory=list)
    last_main_text: str | None = None
    result: dict[str, Any] | None = None
    session_id: str | None = None
    started: set[str | None] = field(default_factory=set)  # agents that answered: later user text is a turn
    tool_names: dict[str, str] = field(default_factory=dict)
    open_calls: dict[str, str] = field(default_factory=dict)
    tasks: dict[str, str] = field(default_factory=dict)  # Task call id -> subagent label
    task_prompts: dict[str, str] = field(default_factory=dict)  # unanswered Task call id -> prompt
    sidechain: dict[str, str] = field(default_factory=dict)  # 1.0 sidechain uuid -> label
    agent_tasks: dict[str, str] = field(default_factory=dict)  # 2.1 agentId -> Task call id


class _Builder:
    """Accumulates steps from records, run by run."""

    def __init__(self, subagent_steps: dict[str, list[TraceStep]] | None = None) -> None:
        self.run = _Run()
        self.runs = 1
        self.subagent_steps = subagent_steps or {}  # agentId -> steps, from separate agent files

    # -- routing ------------------------------------------------------------------------------
    def add(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "system":
            self._system(event)
        elif kind == "result":
            self.run.result = event  # the last one of a run wins: a resumed session has several
        elif kind == "progress":
            self._progress(event)
        elif kind in ("assistant", "user"):
            self._maybe_new_session(event)
            agent = self._agent_of(event)
            if agent is not _ROOT_PROMPT:
                self._message(event, agent if isinstance(agent, str) else None)

    def _new_run(self) -> None:
        self.run = _Run()
        self.runs += 1

    def _system(self, event: dict[str, Any]) -> None:
        subtype = event.get("subtype")
        if subtype == "init" and (self.run.steps or self.run.result is not None):
            self._new_run()  # a second `claude -p` run appended to the same file
        elif subtype == "stop_hook_summary" and (
            event.get("hookErrors") or event.get("preventedContinuation")
        ):
            detail = "; ".join(str(e) for e in event.get("hookErrors") or []) or str(
                event.get("stopReason") or ""
            )
            self.run.steps.append(
                TraceStep("user", clean_text(f"stop hook blocked: {detail}".strip()), "hook")
            )

    def _maybe_new_session(self, event: dict[str, Any]) -> None:
        session = event.get("sessionId") or event.get("session_id")
        if not isinstance(session, str) or event.get("isSidechain"):
            return
        if self.run.session_id is not None and session != self.run.session_id and self.run.steps:
            self._new_run()  # transcripts of two sessions one after the other
        self.run.session_id = session

    def _agent_of(self, event: dict[str, Any]) -> object:
        """The subagent label of a record, None for the main agent, or _ROOT_PROMPT for the prompt
        that started an inline (1.0) sidechain, which the Task call already shows."""
        run = self.run
        parent_call = event.get("parent_tool_use_id")
        if isinstance(parent_call, str) and parent_call:
            return run.tasks.get(parent_call, "subagent")
        if not event.get("isSidechain"):
            return None
        uuid, parent = str(event.get("uuid")), event.get("parentUuid")
        if isinstance(parent, str) and parent in run.sidechain:
            run.sidechain[uuid] = run.sidechain[parent]
            return run.sidechain[uuid]
        label = f"subagent {event['agentId']}" if event.get("agentId") else "subagent"
        if event.get("type") == "user" and parent is None:  # the prompt that started a sidechain
            run.sidechain[uuid] = self._match_task(_plain_text(event)) or label
            return _ROOT_PROMPT
        run.sidechain[uuid] = label
        return label

    def _match_task(self, prompt: str) -> str | None:
        """The unanswered Task call whose prompt started this sidechain (else the oldest one)."""
        pending = self.run.task_prompts
        call = next((c for c, p in pending.items() if p.strip() == prompt.strip()), None)
        call = call or next(iter(pending), None)
        if call is None:
            return None
        del pending[call]
        return self.run.tasks[call]

    def _progress(self, event: dict[str, Any]) -> None:
        data = event.get("data")
        if not isinstance(data, dict) or data.get("type") != "agent_progress":
            return  # hook, bash and waiting progress: bookkeeping
        inner, call = data.get("message"), event.get("parentToolUseID")
        agent_id = str(data.get("agentId") or "")
        if agent_id and isinstance(call, str):
            self.run.agent_tasks[agent_id] = call
        if not isinstance(inner, dict) or agent_id in self.subagent_steps:
            return  # the agent's own file, when given, is the fuller record
        label = self.run.tasks.get(str(call), f"subagent {agent_id}".strip())
        if inner.get("type") in ("assistant", "user"):
            self._message(inner, label)

    # -- messages -----------------------------------------------------------------------------
    def _message(self, event: dict[str, Any], agent: str | None) -> None:
        msg = event.get("message")
        if not isinstance(msg, dict):
            return
        if event.get("type") == "assistant":
            self._assistant(event, msg.get("content"), agent)
        else:
            self._user(event, msg.get("content"), agent)

    def _assistant(self, event: dict[str, Any], content: Any, agent: str | None) -> None:
        if not isinstance(content, list):
            return
        run = self.run
        run.started.add(agent)
        failed = bool(event.get("error") or event.get("isApiErrorMessage"))  # an API error as text
        for block in content:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text" and str(block.get("text", "")).strip():
                text = clean_text(str(block["text"]))
                run.steps.append(TraceStep("text", text, is_error=failed, agent=agent))
                if agent is None:
                    run.last_main_text = text
            elif kind in ("tool_use", "server_tool_use"):
                self._tool_use(block, agent)
            # thinking / redacted_thinking blocks are dropped by design

    def _tool_use(self, block: dict[str, Any], agent: str | None) -> None:
        run = self.run
        name, call_id = clean_text(str(block.get("name") or "tool")), str(block.get("id"))
        run.tool_names[call_id] = name
        run.open_calls[call_id] = name
        if name in _TASK_TOOLS:
            run.tasks[call_id] = _agent_label(block.get("input"))
            prompt = block.get("input", {}).get("prompt") if isinstance(block.get("input"), dict) else None
            run.task_prompts[call_id] = str(prompt or "")
        summary = clean_text(summarize_tool_input(name, block.get("input")))
        run.steps.append(TraceStep("tool_call", summary, tool=name, agent=agent, ref=call_id))

    def _user(self, event: dict[str, Any], content: Any, agent: str | None) -> None:
        run = self.run
        is_turn = agent in run.started  # before its first answer, a user message is the prompt
        meta, compact = bool(event.get("isMeta")), bool(event.get("isCompactSummary"))
        if isinstance(content, str):
            step = user_step(content, is_meta=meta, is_compact=compact, agent=agent) if is_turn else None
            if step is not None:
                run.steps.append(step)
            return
        if not isinstance(content, list):
            return
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_result":
                self._tool_result(block, agent)
            elif block.get("type") == "text" and is_turn:
                step = user_step(str(block.get("text", "")), is_meta=meta, is_compact=compact, agent=agent)
                if step is not None:
                    run.steps.append(step)

    def _tool_result(self, block: dict[str, Any], agent: str | None) -> None:
        run = self.run
        call_id = str(block.get("tool_use_id"))
        name = run.tool_names.get(call_id)
        run.open_calls.pop(call_id, None)
        text = tool_result_text(block.get("content"))
        if block.get("is_error") and text.startswith(REJECTION_PREFIX):
            run.steps.append(rejection_step(name, text, agent))
            return
        if call_id in run.tasks:
            self._close_task(call_id, text)
        error = bool(block.get("is_error"))
        run.steps.append(TraceStep("tool_result", text, tool=name, is_error=error, agent=agent, ref=call_id))

    def _close_task(self, call_id: str, report: str) -> None:
        """Splice in a separate agent file's steps; drop the subagent's last text when the Task
        result repeats it, so the report appears once."""
        run = self.run
        run.task_prompts.pop(call_id, None)
        label = run.tasks[call_id]
        agent_id = next((a for a, c in run.agent_tasks.items() if c == call_id), None)
        if agent_id in self.subagent_steps:
            run.steps.extend(
                TraceStep(s.kind, s.text, s.tool, s.is_error, label, s.ref)
                for s in self.subagent_steps.pop(agent_id)
            )
        last = next((i for i in range(len(run.steps) - 1, -1, -1) if run.steps[i].agent == label), None)
        if last is not None and run.steps[last].kind == "text" and _same_report(run.steps[last].text, report):
            del run.steps[last]


_ROOT_PROMPT = object()


def _plain_text(event: dict[str, Any]) -> str:
    message = event.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text"
        )
    return ""


def _same_report(text: str, report: str) -> bool:
    a, b = " ".join(text.split()), " ".join(report.split())
    return bool(a) and (a == b or a in b)


def _unfinished_note(run: _Run) -> str:
    if not run.steps:
        return "session has no steps: it recorded no message and no result (unfinished)"
    note = "session unfinished: no result record (the stream was cut off, or the session never ended)"
    if run.open_calls:
        note += f"; the last {list(run.open_calls.values())[-1]} call never got its result"
    return note


def _finish(b: _Builder) -> ParsedSession:
    run = b.run
    session = ParsedSession(steps=run.steps, final_answer=run.last_main_text or "", runs=b.runs)
    result = run.result
    if result is None:
        session.is_error = True
        session.errors = [_unfinished_note(run)]
        session.steps.append(TraceStep("text", session.errors[0], is_error=True))
        return session
    session.finished = True
    session.terminal_reason = result.get("terminal_reason")
    session.is_error = result_failed(result)
    session.usage = result_usage(result)
    session.structured_output = result.get("structured_output")
    errors = [clean_text(str(e)) for e in result.get("errors") or []]
    text = clean_text(result["result"]) if isinstance(result.get("result"), str) else None
    if session.is_error:
        session.errors = errors or ([text] if text else [])
        if not session.errors:
            session.errors = [f"Claude Code stopped: {session.terminal_reason or result.get('subtype')}"]
        message = "; ".join(session.errors)
        if message.strip() != (run.last_main_text or "").strip():
            session.steps.append(TraceStep("text", message, is_error=True))
        return session  # the answer stays the last assistant text: a failed run has no result text
    if text is not None:
        session.final_answer = text
        # The result repeats the last assistant text; a structured answer already shows as the
        # StructuredOutput tool call. Only an answer seen nowhere else becomes a step.
        seen = text.strip() == (run.last_main_text or "").strip() or session.structured_output is not None
        if text.strip() and not seen:
            session.steps.append(TraceStep("text", text))
    return session


def steps_from_events(
    events: Iterable[dict[str, Any]], subagent_steps: dict[str, list[TraceStep]] | None = None
) -> ParsedSession:
    """Parse session records (any of the three forms) into steps, final answer and outcome.
    `subagent_steps` maps a 2.1 agentId to the steps of its separate `agent-*.jsonl` file."""
    return _finish(_parse(events, subagent_steps))


def _parse(events: Iterable[dict[str, Any]], subagent_steps: dict[str, list[TraceStep]] | None) -> _Builder:
    builder = _Builder(subagent_steps)
    for event in events:
        if isinstance(event, dict):
            builder.add(event)
    return builder


def _checked_records(path: Path, stats: ReadStats) -> Iterable[dict[str, Any]]:
    known = False
    for record in iter_records(path, stats):
        known = known or record.get("type") in _RECORD_TYPES
        yield record
    if not known:
        where = f" (line {stats.first_bad_line} is not JSON)" if stats.first_bad_line else ""
        raise UserError(
            f"{path}: no Claude Code session records found{where}; expected stream-json output, "
            "raw-messages JSONL or a ~/.claude/projects transcript"
        )


def _agent_id(path: Path) -> str:
    for record in iter_records(path):
        if record.get("agentId"):
            return str(record["agentId"])
    return path.stem.removeprefix("agent-")


def load_session(path: str | Path, subagent_files: Sequence[str | Path] = ()) -> ParsedSession:
    """Parse a session record file (and the separate files of its subagents, when given).
    Raises UserError, one line naming the file, when a file holds no session records."""
    path = Path(path)
    subagents: dict[str, list[TraceStep]] = {}
    for sub in map(Path, subagent_files):
        # A subagent file has no result record of its own: its steps, without a closing note.
        subagents[_agent_id(sub)] = _parse(_checked_records(sub, ReadStats()), None).run.steps
    stats = ReadStats()
    session = steps_from_events(_checked_records(path, stats), subagents)
    session.skipped_lines = stats.skipped_lines
    return session


def load_trace_file(path: str | Path) -> list[TraceStep]:
    """The TraceSteps of a session record file (what `skillgrad trace FILE` renders)."""
    return load_session(path).steps
