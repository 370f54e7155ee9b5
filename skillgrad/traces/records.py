"""Reading a session record file as a stream of JSON records, whatever wrote or cut it.

Accepted: JSON Lines (stream-json output, the backend's raw transcript, `~/.claude/projects`
sessions) with or without a UTF-8 BOM, CRLF line ends, a partial first line (the tail of a file) or
a torn last line; a JSON array of records on one line; a single pretty-printed JSON document (an
object, such as `--output-format json` output, or an array). Lines are read one at a time, so memory
stays near one record, not the file. Bytes that are not UTF-8 become U+FFFD, never an exception.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from skillgrad.errors import UserError

_BOM = b"\xef\xbb\xbf"


@dataclass
class ReadStats:
    """What the reader skipped, so a caller can say a file held no records at all."""

    records: int = 0
    skipped_lines: int = 0
    first_bad_line: int | None = None


def _decode(raw: bytes) -> Any:
    return json.loads(raw.decode("utf-8", errors="replace"))


def _dicts(value: Any) -> Iterator[dict[str, Any]]:
    if isinstance(value, dict):
        yield value
    elif isinstance(value, list):
        yield from (item for item in value if isinstance(item, dict))


def _whole_document(handle: BinaryIO, first: bytes) -> Any:
    """The rest of the file parsed as one JSON document starting with `first`, or None (and the
    file position back where it was)."""
    position = handle.tell()
    try:
        return _decode(first + handle.read())
    except ValueError:
        handle.seek(position)
        return None


def iter_records(path: Path, stats: ReadStats | None = None) -> Iterator[dict[str, Any]]:
    """Every JSON object record of `path`, in order. Raises UserError when it cannot be opened."""
    return (record for _, record in iter_numbered_records(path, stats))


def iter_numbered_records(path: Path, stats: ReadStats | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, record) for every JSON object record of `path`, in order."""
    stats = stats if stats is not None else ReadStats()
    try:
        handle = open(path, "rb")  # noqa: SIM115 -- closed by the with below, after the checks
    except FileNotFoundError:
        raise UserError(f"{path}: file not found; pass a Claude Code session record (.jsonl)") from None
    except (IsADirectoryError, PermissionError) as exc:
        raise UserError(
            f"{path}: cannot read it ({type(exc).__name__}); pass a session record file"
        ) from None
    with handle:
        seen_line = False
        for number, raw in enumerate(iter(handle.readline, b""), 1):
            if not seen_line and raw.startswith(_BOM):
                raw = raw[len(_BOM) :]
            if not raw.strip():
                continue
            try:
                value = _decode(raw)
            except ValueError:
                if not seen_line and raw.lstrip()[:1] in (b"{", b"["):
                    document = _whole_document(handle, raw)  # pretty-printed JSON: one document
                    if document is not None:
                        for record in _dicts(document):
                            stats.records += 1
                            yield number, record
                        return
                stats.skipped_lines += 1  # a partial first line, a torn last one, or noise
                stats.first_bad_line = stats.first_bad_line or number
                continue
            finally:
                seen_line = True
            for record in _dicts(value):
                stats.records += 1
                yield number, record
