"""What an analyst opened in its workspace, from its tool calls: which files, which line ranges,
which searches and what they hit. Kept in the reflection record and shown by the report, so a
user can see what evidence an edit came from.

Claude Code's calls say it directly (Read: file_path, offset, limit; Grep: pattern and path, its
matches as `path:line:`; Glob). A Codex analyst reads with shell commands: each is tokenised and
its pipeline read for the files of the workspace it names and the window it prints (`sed -n
'A,Bp'`, `head`/`tail -n`, `awk 'NR>=A && NR<=B'`), a search's hits from its output. A command
this does not recognise is kept as it was written, with the files it names.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

from skillgrad.backends.reading import ToolUse

READ_DEFAULT_LINES = 2000  # Claude Code's Read without a limit
_HIT = re.compile(r"^(?:(?P<path>[^\s:][^:\n]*?):)?(?P<line>\d+)[:-]", re.MULTILINE)
_SED = re.compile(r"^(\d+)(?:,(\d+))?p$")
_NR = re.compile(r"NR\s*>=?\s*(\d+).*?NR\s*<=?\s*(\d+)")
_SEARCHES = ("grep", "rg", "egrep", "fgrep")
_OPERATORS = {"|", "||", "&&", ";", "&"}


class _Folder:
    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self._lines: dict[str, int] = {}

    def relative(self, name: str) -> str | None:
        """`name` as a path inside the workspace, or None when it names nothing there."""
        path = Path(name)
        try:
            full = (path if path.is_absolute() else self.root / path).resolve()
            rel = full.relative_to(self.root)
        except (ValueError, OSError):
            return None
        return rel.as_posix() if full.exists() else None

    def line_count(self, rel: str) -> int:
        if rel not in self._lines:
            try:
                with (self.root / rel).open("rb") as handle:
                    self._lines[rel] = sum(1 for _ in handle)
            except OSError:
                self._lines[rel] = 0
        return self._lines[rel]


def _hits(output: str, folder: _Folder, default: str | None) -> list[dict[str, Any]]:
    """`path:line:` (or `line:` for one file) lines of a search's output, grouped by file."""
    found: dict[str, list[int]] = {}
    for match in _HIT.finditer(output):
        rel = folder.relative(match.group("path")) if match.group("path") else default
        if rel is not None:
            found.setdefault(rel, []).append(int(match.group("line")))
    return [{"path": p, "lines": sorted(set(lines))} for p, lines in found.items()]


def _claude(use: ToolUse, folder: _Folder) -> dict[str, Any]:
    args = use.input
    if use.name == "Read":
        name = str(args.get("file_path") or args.get("path") or "")
        rel = folder.relative(name)
        if rel is None:
            return {"path": name}
        start = int(args.get("offset") or 1)
        limit = int(args.get("limit") or READ_DEFAULT_LINES)
        return {"path": rel, "lines": [start, max(start, min(start + limit - 1, folder.line_count(rel)))]}
    if use.name == "Grep":
        where = str(args.get("path") or ".")
        rel = folder.relative(where)
        single = rel if rel is not None and (folder.root / rel).is_file() else None
        record: dict[str, Any] = {"pattern": str(args.get("pattern", "")), "in": rel or where}
        if args.get("glob"):
            record["glob"] = str(args["glob"])
        return {**record, "hits": _hits(use.output, folder, single)}
    if use.name == "Glob":
        return {"pattern": str(args.get("pattern", "")), "found": len(use.output.splitlines())}
    return {"input": args}


def _tokens(script: str) -> list[str]:
    lexer = shlex.shlex(script, posix=True, punctuation_chars="|&;")
    lexer.whitespace_split = True
    return list(lexer)


def _segments(script: str) -> list[list[str]]:
    segments: list[list[str]] = [[]]
    for token in _tokens(script):
        if token in _OPERATORS:
            segments.append([])
        else:
            segments[-1].append(token)
    return [s for s in segments if s]


def _window(segment: list[str], total: int) -> list[int] | None:
    """The lines a printing command keeps, when it says (1-based, inclusive)."""
    name, args = segment[0].rsplit("/", 1)[-1], segment[1:]
    numbers = [a for a in args if a.lstrip("-+").isdigit()]
    if name == "sed":
        for arg in args:
            found = _SED.match(arg)
            if found:
                return [int(found.group(1)), int(found.group(2) or found.group(1))]
    if name == "awk":
        for arg in args:
            if found := _NR.search(arg):
                return [int(found.group(1)), int(found.group(2))]
    if name in ("head", "tail") and numbers:
        n = numbers[0]
        count = int(n.lstrip("-+"))
        if name == "head":
            return [1, min(count, total) if total else count]
        return [count, total] if n.startswith("+") else [max(1, total - count + 1), total]
    return None


def _shell(use: ToolUse, folder: _Folder) -> list[dict[str, Any]]:
    script = str(use.input.get("command", ""))
    try:
        segments = _segments(script)
    except ValueError:
        return [{"command": script}]
    records: list[dict[str, Any]] = []
    window: list[int] | None = None
    files: list[str] = []
    for segment in segments:
        named = [rel for arg in segment[1:] if (rel := folder.relative(arg)) is not None]
        total = folder.line_count(named[0]) if named else (folder.line_count(files[0]) if files else 0)
        window = _window(segment, total) or window
        name = segment[0].rsplit("/", 1)[-1]
        if name in _SEARCHES:
            pattern = next((a for a in segment[1:] if not a.startswith("-")), "")
            default = named[0] if len(named) == 1 and (folder.root / named[0]).is_file() else None
            record = {"command": script, "pattern": pattern, "in": named or ["."]}
            records.append({**record, "hits": _hits(use.output, folder, default)})
        else:
            files += [f for f in named if (folder.root / f).is_file()]
    for rel in dict.fromkeys(files):
        lines = window or [1, folder.line_count(rel)]
        records.append({"command": script, "path": rel, "lines": lines})
    return records or [{"command": script}]


def opened(uses: list[ToolUse] | tuple[ToolUse, ...], root: Path) -> list[dict[str, Any]]:
    """One record per file read or search made (a refused call says so), in call order."""
    folder = _Folder(root)
    out: list[dict[str, Any]] = []
    for use in uses:
        found = _shell(use, folder) if use.name == "shell" else [_claude(use, folder)]
        for record in found:
            entry = {"tool": use.name, **record}
            if use.is_error:
                entry["refused"] = use.output[:300]
            out.append(entry)
    return out


def read_ranges(records: list[dict[str, Any]]) -> dict[str, list[list[int]]]:
    """Per file, the merged line ranges the analyst read (searches' hits not counted)."""
    ranges: dict[str, list[list[int]]] = {}
    for record in records:
        if record.get("refused") is None and isinstance(record.get("lines"), list) and "path" in record:
            ranges.setdefault(record["path"], []).append(list(record["lines"]))
    merged: dict[str, list[list[int]]] = {}
    for path, spans in ranges.items():
        out: list[list[int]] = []
        for start, end in sorted(spans):
            if out and start <= out[-1][1] + 1:
                out[-1][1] = max(out[-1][1], end)
            else:
                out.append([start, end])
        merged[path] = out
    return merged
