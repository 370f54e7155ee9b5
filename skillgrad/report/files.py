"""The report's reader of run files: bounded in memory and time whatever their size, and never a
reason to refuse the whole report.

- Text (answers, rendered traces, skills) is read up to a limit; the rest is named by its size.
- JSON documents are parsed whole up to `JSON_LIMIT`; a larger one is left out with a note.
- A trace (`trace.json`, a JSON array) is streamed step by step: the first `TRACE_STEPS` steps
  are kept, the others only counted (errors too), so its size never matters.
- Long strings inside a document are kept as `Partial` text: the start, and the whole size.
- A file that is damaged (not UTF-8 JSON, or not the shape the run writes) is skipped with a
  warning naming it; the reader goes on. Symlinks are never followed (an agent may plant them).

Every note and warning lands in the `Notes` it was given, which the report shows and the CLI prints.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TEXT_LIMIT = 256 * 1024  # characters of a text file or JSON string kept (the report shows less)
JSON_LIMIT = 64 * 1024 * 1024  # bytes of a JSON document parsed whole
TRACE_STEPS = 200  # trace steps kept (the report shows these); the rest are counted
_CHUNK = 1024 * 1024


class Partial(str):
    """The start of a longer text; `whole` says how long the whole is (e.g. "10.0 MB")."""

    whole: str

    def __new__(cls, text: str, whole: str) -> Partial:
        made = super().__new__(cls, text)
        made.whole = whole
        return made


def size_text(size: int) -> str:
    if size < 1000:
        return f"{size} bytes"
    if size < 1_000_000:
        return f"{size / 1000:.1f} kB"
    return f"{size / 1_000_000:.1f} MB"


@dataclass
class Notes:
    """What the reader had to leave out: `warnings` for damaged files, `notes` for large ones."""

    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def damaged(self, path: Path, what: str) -> None:
        self.warnings.append(f"{path}: {what}; skipped in the report")


def plain_file(path: Path) -> bool:
    """A regular file reached without a symlink."""
    return path.is_file() and not path.is_symlink()


def keep_text(text: str, limit: int = TEXT_LIMIT) -> str:
    """`text`, or its first `limit` characters as a Partial naming the whole length."""
    return text if len(text) <= limit else Partial(text[:limit], f"{len(text):,} characters")


def read_text(path: Path, notes: Notes, limit: int = TEXT_LIMIT) -> str | None:
    """The file's text (invalid UTF-8 replaced), at most `limit` characters; None when absent."""
    if not plain_file(path):
        return None
    try:
        size = path.stat().st_size
        with path.open("rb") as handle:
            head = handle.read(limit * 4 + 4)  # a UTF-8 character is at most 4 bytes
    except OSError as exc:
        notes.damaged(path, f"cannot be read ({exc.strerror})")
        return None
    text = codecs.getincrementaldecoder("utf-8")("replace").decode(head, final=len(head) >= size)
    if len(head) >= size and len(text) <= limit:
        return text
    notes.notes.append(f"{path}: {size_text(size)}; the report shows its beginning")
    return Partial(text[:limit], size_text(size))


def _clip_strings(value: Any) -> Any:
    if isinstance(value, str):
        return keep_text(value)
    if isinstance(value, list):
        return [_clip_strings(v) for v in value]
    if isinstance(value, dict):
        return {k: _clip_strings(v) for k, v in value.items()}
    return value


def read_json(path: Path, notes: Notes, default: Any = None, *, clip: bool = True) -> Any:
    """The parsed document (its long strings kept as Partial text, unless not `clip`: a document
    the report validates whole); `default` when the file is absent, damaged (a warning) or over
    JSON_LIMIT (a note)."""
    if not plain_file(path):
        return default
    try:
        size = path.stat().st_size
        if size > JSON_LIMIT:
            notes.notes.append(
                f"{path}: {size_text(size)}, over the report's {size_text(JSON_LIMIT)}; not shown"
            )
            return default
        data = json.loads(path.read_bytes().decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        notes.damaged(path, f"not valid UTF-8 JSON ({str(exc).splitlines()[0] if str(exc) else exc})")
        return default
    except OSError as exc:
        notes.damaged(path, f"cannot be read ({exc.strerror})")
        return default
    return _clip_strings(data) if clip else data


def read_object(path: Path, notes: Notes) -> dict[str, Any]:
    """A JSON object file (task.json, score.json, ...); {} when absent, damaged or not an object."""
    data = read_json(path, notes, {})
    if not isinstance(data, dict):
        notes.damaged(path, f"expected a JSON object, got {type(data).__name__}")
        return {}
    return data


@dataclass
class ArrayHead:
    """The first items of a JSON array file, and how many there are in all."""

    items: list[Any]
    total: int
    errors: int  # items that are objects with a true `is_error`


class _Damaged(Exception):
    pass


def _array_items(path: Path) -> Iterator[Any]:
    """Each item of the JSON array in `path`, parsed one at a time (memory: the largest item)."""
    decoder = json.JSONDecoder()
    text_of = codecs.getincrementaldecoder("utf-8")("strict")
    buffer, pos, eof, started, expect_item = "", 0, False, False, True
    with path.open("rb") as handle:

        def fill(at_least: int) -> bool:
            nonlocal buffer, pos, eof
            if eof:
                return False
            chunk = handle.read(max(_CHUNK, at_least))
            eof = not chunk
            buffer = buffer[pos:] + text_of.decode(chunk, final=eof)
            pos = 0
            return bool(chunk)

        while True:
            while pos < len(buffer) and buffer[pos] in " \t\r\n":
                pos += 1
            if pos >= len(buffer):
                if fill(0):
                    continue
                raise _Damaged("the array ends early")
            char = buffer[pos]
            if not started:
                if char != "[":
                    raise _Damaged("not a JSON array")
                started, pos = True, pos + 1
                continue
            if char == "]":
                return
            if not expect_item:
                if char != ",":
                    raise _Damaged(f"unexpected {char!r} between items")
                expect_item, pos = True, pos + 1
                continue
            try:
                item, end = decoder.raw_decode(buffer, pos)
            except ValueError:
                if fill(len(buffer) - pos):  # an item longer than what is read so far
                    continue
                raise _Damaged("an item is not valid JSON") from None
            if end == len(buffer) and fill(0):  # a number may go on in the next chunk
                continue
            pos, expect_item = end, False
            yield item


def read_array_head(path: Path, notes: Notes, keep: int = TRACE_STEPS) -> ArrayHead | None:
    """The first `keep` items of a JSON array file (their strings kept as Partial text) and the
    count of all; None when absent or damaged (a warning)."""
    if not plain_file(path):
        return None
    items: list[Any] = []
    total = errors = 0
    try:
        for item in _array_items(path):
            total += 1
            errors += isinstance(item, dict) and item.get("is_error") is True
            if len(items) < keep:
                items.append(_clip_strings(item))
    except (_Damaged, UnicodeDecodeError) as exc:
        what = "not UTF-8" if isinstance(exc, UnicodeDecodeError) else str(exc)
        notes.damaged(path, f"not a valid JSON array ({what})")
        return None
    except OSError as exc:
        notes.damaged(path, f"cannot be read ({exc.strerror})")
        return None
    if total > keep:
        notes.notes.append(
            f"{path}: {total:,} items, {size_text(path.stat().st_size)}; the first {keep} shown"
        )
    return ArrayHead(items, total, errors)
