"""The report's reflections: per step, each analyst call (`steps/NNNN/reflections/mb_NN.json`)
with what it read to propose its edits. For an analyst that read a workspace
(`optimizer.reflection: workspace`), every file and line range it opened and every search with its
hits, each read shown as the lines themselves from the kept folder (`mb_NN/`), so a user sees the
evidence an edit came from; for both modes, turns, tool calls, tokens and wall time.

Read like the rest of the report (`report.files`): only records named as the trainer names them,
no symlink followed, a damaged record skipped with a warning naming it rather than failing the page.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from skillgrad.report.files import Notes, plain_file, read_object
from skillgrad.run_folder import RunFiles

_RECORD = re.compile(r"^mb_\d+(_p\d+)?(_reask)?\.json$")
EXCERPT_LINES = 40  # of one range read, shown in the report
LINE_CHARS = 300
_SKIP_CHARS = 1024 * 1024  # read at a time past the end of a long line


@dataclass
class Opened:
    tool: str
    what: str  # "tasks/01/trace_full.txt lines 55-62", "Grep `\.csv` in tasks -> 2 hits", ...
    refused: str | None = None
    excerpt: list[tuple[int, str]] = field(default_factory=list)  # (line number, text)


@dataclass
class ReflectionRow:
    step: int
    name: str
    mode: str
    tasks: list[str]
    edits: list[dict[str, Any]]
    error: str | None
    session: dict[str, Any]
    opened: list[Opened]


def _inside(root: Path, rel: str) -> Path | None:
    """`rel` under `root`, reached through no symlink, or None."""
    path = root
    for part in Path(rel).parts:
        if part in ("..", "/") or path.is_symlink():
            return None
        path = path / part
    return path if plain_file(path) else None


def _clipped_lines(handle: TextIO) -> Iterator[str]:
    """Each line's first LINE_CHARS + 1 characters; the rest of a longer line is read past in
    chunks, so a file of one huge line costs no more memory than a short one."""
    while line := handle.readline(LINE_CHARS + 1):
        rest = line
        while not rest.endswith("\n") and (rest := handle.readline(_SKIP_CHARS)):
            pass
        yield line.rstrip("\n")


def _excerpt(workspace: Path, rel: str, lines: list[Any]) -> list[tuple[int, str]]:
    path = _inside(workspace, rel)
    if path is None or len(lines) != 2 or not all(type(n) is int for n in lines):
        return []  # a record the trainer did not write: nothing to show
    start, end = lines[0], min(lines[1], lines[0] + EXCERPT_LINES - 1)
    out = []
    with path.open(encoding="utf-8", errors="replace") as handle:
        for number, text in enumerate(_clipped_lines(handle), 1):
            if number > end:
                break
            if number >= start:
                out.append((number, text if len(text) <= LINE_CHARS else text[:LINE_CHARS] + "…"))
    return out


def _describe(item: dict[str, Any]) -> str:
    """One line saying what a record of `opened` read or searched."""
    lines = item.get("lines")
    if isinstance(item.get("hits"), list):
        hits = [h for h in item["hits"] if isinstance(h, dict)]
        found = [f"{h.get('path')} line(s) {', '.join(map(str, h.get('lines') or []))}" for h in hits]
        return f"search `{item.get('pattern', '')}` in {item.get('in', '.')}: " + (
            "; ".join(found) or "no hit"
        )
    if "path" in item:
        span = f" lines {lines[0]}-{lines[1]}" if isinstance(lines, list) and len(lines) == 2 else ""
        return f"{item['path']}{span}"
    return str(item.get("command") or item.get("pattern") or json.dumps(item.get("input", {})))[:300]


def _opened(record: dict[str, Any], workspace: Path | None) -> list[Opened]:
    out = []
    for item in record.get("opened") or []:
        if not isinstance(item, dict):
            continue
        refused, lines = item.get("refused"), item.get("lines")
        excerpt = []
        if workspace is not None and refused is None and isinstance(lines, list) and "path" in item:
            excerpt = _excerpt(workspace, str(item["path"]), lines)
        refusal = str(refused) if refused is not None else None
        out.append(Opened(str(item.get("tool", "")), _describe(item), refusal, excerpt))
    return out


def reflection_rows(run_path: Path, warnings: list[str] | None = None) -> list[ReflectionRow]:
    """Every reflection of every step, in step and name order; each record that is damaged is
    skipped, with a warning added to `warnings`."""
    notes = Notes()
    rows = []
    for step_dir in sorted((run_path / RunFiles.STEPS).glob("[0-9]*")):
        folder = step_dir / RunFiles.REFLECTIONS
        if not step_dir.name.isdigit() or not folder.is_dir() or folder.is_symlink():
            continue
        for path in sorted(folder.iterdir()):
            record = read_object(path, notes) if _RECORD.match(path.name) and plain_file(path) else None
            if not record:
                continue
            name = path.stem
            session = record.get("session")
            workspace = folder / name if record.get("workspace") == name else None
            rows.append(
                ReflectionRow(
                    step=int(step_dir.name),
                    name=name,
                    mode=str(record.get("reflection") or ("error" if record.get("error") else "digest")),
                    tasks=[str(t) for t in record.get("tasks") or []],
                    edits=[e for e in record.get("edits") or [] if isinstance(e, dict)],
                    error=str(record["error"]) if record.get("error") else None,
                    session=session if isinstance(session, dict) else {},
                    opened=_opened(record, workspace),
                )
            )
    if warnings is not None:
        warnings.extend(notes.warnings)
    return rows
