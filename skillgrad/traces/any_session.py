"""`skillgrad trace FILE`: read a Claude Code or a Codex session record file, detecting which."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from skillgrad.traces import claude
from skillgrad.traces.codex import is_codex_record, steps_from_codex_events
from skillgrad.traces.codex_rollout import IGNORED_RECORDS, is_rollout_record, rollout_steps
from skillgrad.traces.parsed_session import ParsedSession
from skillgrad.traces.record_stream import ReadStats, iter_records
from skillgrad.values import TraceStep

_CODEX_EVIDENCE = {
    "completed": "a turn.completed event",
    "failed": "a turn.failed event",
    "unfinished": "no turn.completed event: the CLI was stopped, or its output cut",
}


def is_codex_file(path: Path) -> bool:
    """True when the first JSON record of `path` is a `codex exec --json` event."""
    first = next(iter_records(Path(path)), None)
    return is_codex_record(first)


def load_any_session(path: str | Path, subagent_files: Sequence[str | Path] = ()) -> ParsedSession:
    """`codex exec --json` output, a Codex session (rollout) file or any Claude Code form, as one
    ParsedSession. UserError when it is none of them."""
    path = Path(path)
    first = next(iter_records(path), None)
    if is_rollout_record(first) or is_codex_record(first):
        session = _codex_session(path, is_rollout_record(first))
        session.warnings = [
            f"agent file {Path(f).name} left out: agent files belong to Claude Code sessions"
            for f in subagent_files
        ]
        return session
    return claude.load_session(path, subagent_files)


def _codex_session(path: Path, rollout_file: bool) -> ParsedSession:
    if rollout_file:
        stats = ReadStats()
        rollout = rollout_steps(iter_records(path, stats, IGNORED_RECORDS))
        return ParsedSession(
            steps=rollout.steps,
            final_answer=rollout.final_answer,
            is_error=not rollout.finished,
            finished=rollout.finished,
            skipped_lines=stats.skipped_lines,
            evidence=rollout.evidence,
        )
    stats = ReadStats()
    codex = steps_from_codex_events(iter_records(path, stats))
    return ParsedSession(
        steps=codex.steps,
        final_answer=codex.final_answer,
        is_error=codex.is_error,
        terminal_reason=codex.terminal_reason,
        usage=codex.usage,
        errors=codex.errors,
        finished=codex.terminal_reason != "unfinished",
        skipped_lines=stats.skipped_lines,
        evidence=_CODEX_EVIDENCE.get(str(codex.terminal_reason), ""),
    )


def load_trace_steps(path: str | Path) -> list[TraceStep]:
    """The TraceSteps of a session record file: Codex JSONL, else the Claude Code forms."""
    return load_any_session(path).steps
