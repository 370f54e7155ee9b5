"""Where a user's Claude Code sessions are, and which of them to read.

Claude Code keeps one folder per project under `~/.claude/projects/`, named after the project's
absolute path with every character other than a letter or digit replaced by `-`. A session is a
`<session>.jsonl` file there; its subagents' files sit in `<session>/subagents/agent-*.jsonl` and
are read through the main session, never as sessions of their own.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime
from pathlib import Path

from skillgrad.errors import UserError


def project_folder(project: Path, home: Path) -> Path:
    """The `~/.claude/projects/<name>` folder of a project directory."""
    return home / ".claude" / "projects" / re.sub(r"[^A-Za-z0-9]", "-", str(project.resolve()))


def parse_since(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        day = date.fromisoformat(value)
    except ValueError:
        raise UserError(
            f"--since {value!r}: expected a date as YYYY-MM-DD, e.g. --since 2026-11-01"
        ) from None
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def session_files(source: Path, since: datetime | None) -> list[Path]:
    """Session files under `source` (a folder, searched recursively, or one file), oldest first;
    with `since`, only those modified on or after it. UserError when there are none to read."""
    if source.is_file():
        files = [source]
    elif source.is_dir():
        files = [p for p in source.rglob("*.jsonl") if "subagents" not in p.parts and p.is_file()]
    else:
        raise UserError(
            f"--from {source}: no such file or folder; pass ~/.claude/projects/<project> or a .jsonl"
        )
    if since is not None:
        files = [p for p in files if datetime.fromtimestamp(p.stat().st_mtime, UTC) >= since]
    if not files:
        when = f" modified since {since.date()}" if since else ""
        raise UserError(f"--from {source}: no session files (*.jsonl){when} found")
    return sorted(files, key=lambda p: (p.stat().st_mtime, str(p)))


def subagent_files(session: Path) -> list[Path]:
    """The separate subagent files of a session (Claude Code 2.1 layout), if any."""
    folder = session.with_suffix("") / "subagents"
    return sorted(folder.glob("agent-*.jsonl")) if folder.is_dir() else []
