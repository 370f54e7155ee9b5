"""Claude Code session records -> TraceSteps (docs/architecture.md, "Traces").

One parser reads the three record forms, which share the same per-line shape (`type` + `message`
with Messages-API content blocks):
  (a) `claude -p --output-format stream-json --verbose` output (or `--output-format json`),
  (b) the raw-messages JSONL the claude_code_exec backend keeps (SDK messages written back in the
      stream-json shape, see `skillgrad.backends.claude_code.sdk_message_to_event`),
  (c) session transcripts under `~/.claude/projects/<project>/<session>.jsonl`, CLI 1.0 to 2.1.
Records stream through one at a time. Unknown kinds are skipped, never fatal. Subagent steps are
attributed to their subagent (claude_build.py says through which links), whose report then appears
once, as the Task result. What the user or a hook says after the first prompt becomes a `user` step.
A file of several appended runs yields the last run. Whether the session ended is decided from
evidence (claude_turns.py): a result record, or for a transcript how its main thread stops (a hook
that stopped it ended it); an unfinished session gets a closing note (steps.session_note) that says
why. Hooks are read as they happened, from system and `attachment` records (claude_hooks.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from skillgrad.errors import UserError
from skillgrad.text import clean_text
from skillgrad.traces.claude_build import Builder, tool_result_text
from skillgrad.traces.claude_result import result_failed, result_usage
from skillgrad.traces.claude_turns import closing_note, verdict
from skillgrad.traces.parsed_session import ParsedSession
from skillgrad.traces.record_stream import ReadStats, iter_records
from skillgrad.traces.steps import session_note
from skillgrad.values import TraceStep

__all__ = ["ParsedSession", "load_session", "load_trace_file", "steps_from_events", "tool_result_text"]

_RECORD_TYPES = ("system", "assistant", "user", "result", "progress", "queue-operation")
COMPACTION_AGENT_PREFIX = "acompact-"  # the agentId the CLI gives the agent that writes a compaction


def _close_subagents(b: Builder, names: dict[str, str]) -> list[str]:
    """Agent files whose Task never returned go at the end, under their Task; a file that matches
    no Task is a warning, never silently dropped. A compaction agent's file (`agent-acompact-*`)
    belongs to no Task: what it wrote is the session's `user compact` step."""
    run = b.run
    for agent_id, call in run.agent_tasks.items():
        if agent_id in b.subagent_steps and call in run.tasks:
            b.splice(agent_id, run.tasks[call])
    return [
        f"agent file {names.get(agent_id, agent_id)} (agentId {agent_id}) matches no Task call of this "
        f"session: left out ({len(steps)} step{'s' * (len(steps) != 1)})"
        for agent_id, steps in b.subagent_steps.items()
        if not agent_id.startswith(COMPACTION_AGENT_PREFIX)
    ]


def _finish(b: Builder, names: dict[str, str]) -> ParsedSession:
    b.deliver_queued()  # typed, taken from the queue, and the agent never answered
    warnings = _close_subagents(b, names)
    run = b.run
    session = ParsedSession(
        steps=run.steps,
        final_answer=run.last_main_text or "",
        runs=b.runs,
        warnings=warnings,
        lone_agent=(b.agent_id or "?") if b.lone else None,
    )
    result = run.result
    if result is None:
        session.finished, session.evidence = verdict(run.turns, run.main_open_calls(), bool(run.steps))
        if not session.finished:
            session.is_error = True
            session.errors = [closing_note(session.evidence, bool(run.steps))]
            session.steps.append(session_note(session.errors[0]))
        return session
    session.finished = True
    session.terminal_reason = result.get("terminal_reason")
    session.is_error = result_failed(result)
    session.usage = result_usage(result)
    session.structured_output = result.get("structured_output")
    session.evidence = f"result record: {result.get('subtype') or session.terminal_reason or 'no subtype'}"
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
    `subagent_steps` maps an agentId to the steps of its separate `agent-*.jsonl` file."""
    return _finish(_parse(events, subagent_steps), {})


def _parse(events: Iterable[dict[str, Any]], subagent_steps: dict[str, list[TraceStep]] | None) -> Builder:
    builder = Builder(subagent_steps)
    add = builder.add
    for event in events:
        if type(event) is dict:
            add(event)
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


def load_session(path: str | Path, subagent_files: Sequence[str | Path] = ()) -> ParsedSession:
    """Parse a session record file (and the separate files of its subagents, when given).
    Raises UserError, one line naming the file, when a file holds no session records."""
    path = Path(path)
    subagents: dict[str, list[TraceStep]] = {}
    names: dict[str, str] = {}
    for sub in map(Path, subagent_files):
        # A subagent file has no result record of its own: its steps, without a closing note.
        parsed = _parse(_checked_records(sub, ReadStats()), None)
        agent_id = parsed.agent_id or sub.stem.removeprefix("agent-")
        subagents[agent_id], names[agent_id] = parsed.run.steps, sub.name
    stats = ReadStats()
    session = _finish(_parse(_checked_records(path, stats), subagents), names)
    session.skipped_lines = stats.skipped_lines
    return session


def load_trace_file(path: str | Path) -> list[TraceStep]:
    """The TraceSteps of a session record file (what `skillgrad trace FILE` renders)."""
    return load_session(path).steps
