"""Reading a session record file as a stream of JSON records, whatever wrote or cut it.

Accepted: JSON Lines (stream-json output, the backend's raw transcript, `~/.claude/projects`
sessions, Codex events and rollouts) with or without a UTF-8 BOM, CRLF line ends, a partial first
line (the tail of a file) or a torn last line; a JSON array of records on one line; a single
pretty-printed JSON document (an object, such as `--output-format json` output, or an array). Lines
are read one at a time, so memory stays near one record, not the file. Each line goes to orjson
first (session files run to hundreds of megabytes); what orjson refuses (a BOM, bytes that are not
UTF-8, a lone surrogate escape, NaN) goes to the standard library, with bad bytes as U+FFFD, never
an exception.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import orjson

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


def _open(path: Path) -> BinaryIO:
    try:
        return open(path, "rb")  # noqa: SIM115 -- the caller closes it
    except FileNotFoundError:
        raise UserError(f"{path}: file not found; pass a Claude Code session record (.jsonl)") from None
    except (IsADirectoryError, PermissionError) as exc:
        raise UserError(
            f"{path}: cannot read it ({type(exc).__name__}); pass a session record file"
        ) from None


def iter_records(
    path: Path, stats: ReadStats | None = None, skip: tuple[bytes, ...] = ()
) -> Iterator[dict[str, Any]]:
    """Every JSON object record of `path`, in order. Raises UserError when it cannot be opened.
    A line whose first 200 bytes hold one of `skip` is a record the caller ignores: it is not
    parsed (a rollout's token counts and reasoning are a fifth of its bytes)."""
    return (record for _, record in iter_numbered_records(path, stats, skip))


def iter_numbered_records(
    path: Path, stats: ReadStats | None = None, skip: tuple[bytes, ...] = ()
) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, record) for every JSON object record of `path`, in order."""
    stats = stats if stats is not None else ReadStats()
    loads, slow_error = orjson.loads, orjson.JSONDecodeError
    ignored = re.compile(b"|".join(re.escape(m) for m in skip)).search if skip else None
    with _open(path) as handle:
        number, first = 0, True  # first: no line with content read yet (a BOM or a document may start)
        for raw in handle:
            number += 1
            if ignored is not None and not first and ignored(raw, 0, 200):
                continue
            try:
                value = loads(raw)
            except slow_error:
                if first and raw.startswith(_BOM):
                    raw = raw[len(_BOM) :]
                if not raw.strip():
                    continue
                try:
                    value = _decode(raw)
                except ValueError:
                    if first and raw.lstrip()[:1] in (b"{", b"["):
                        document = _whole_document(handle, raw)  # pretty-printed JSON: one document
                        if document is not None:
                            for record in _dicts(document):
                                stats.records += 1
                                yield number, record
                            return
                    first = False
                    stats.skipped_lines += 1  # a partial first line, a torn last one, or noise
                    stats.first_bad_line = stats.first_bad_line or number
                    continue
            first = False
            if type(value) is dict:
                stats.records += 1
                yield number, value
            else:
                for record in _dicts(value):
                    stats.records += 1
                    yield number, record
