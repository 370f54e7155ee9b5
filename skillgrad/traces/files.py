"""`skillgrad trace FILE`: read a Claude Code or a Codex session record file, detecting which."""

from __future__ import annotations

from pathlib import Path

from skillgrad.errors import UserError
from skillgrad.traces import claude
from skillgrad.traces.codex import is_codex_record, parse_jsonl, steps_from_codex_events
from skillgrad.traces.steps import TraceStep


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        expected = "pass a Claude Code or Codex session record (.jsonl)"
        raise UserError(f"{path}: file not found; {expected}") from None
    except (UnicodeDecodeError, IsADirectoryError, PermissionError) as exc:
        raise UserError(f"{path}: cannot read it as UTF-8 text ({type(exc).__name__})") from None


def is_codex_file(path: Path) -> bool:
    """True when the first JSON record of `path` is a `codex exec --json` event."""
    for line in _read(path).splitlines():
        if line.strip():
            try:
                return is_codex_record(parse_jsonl(line, str(path))[0])
            except (UserError, IndexError):
                return False
    return False


def load_trace_steps(path: str | Path) -> list[TraceStep]:
    """The TraceSteps of a session record file: Codex JSONL, else the Claude Code forms."""
    path = Path(path)
    if is_codex_file(path):
        return steps_from_codex_events(parse_jsonl(_read(path), str(path))).steps
    return claude.load_trace_file(path)
