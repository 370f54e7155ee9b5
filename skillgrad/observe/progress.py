"""Observers that show a run while it runs: a rich live display (`observe.live`, loaded only for a
terminal: a bar per stage with its count, pace and time left), a plain printer, and train.log.

All three consume the event vocabulary of `skillgrad.loop.event_bus` and share one formatter
(`observe.formatting`), so the terminal, a CI log and `<out>/train.log` tell the same story in the
same words. The printer and train.log write a line per stage start and end, not one per task
(`observe.lines`).
"""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

from skillgrad.loop.event_bus import Observer
from skillgrad.observe.formatting import describe, stamp
from skillgrad.observe.lines import PROGRESS_EVERY_S, LineFilter
from skillgrad.run_folder import RunFiles

# ---------------------------------------------------------------------------------------------
# plain and log-file observers


class PlainObserver:
    """A line per stage start and end, step and message (`observe.lines`): for pipes, CI logs and
    anything that is not a terminal."""

    name = "progress lines"  # in the warning if it fails (loop.event_bus)

    def __init__(self, stream: TextIO, every_s: float = PROGRESS_EVERY_S) -> None:
        self.stream = stream
        self.lines = LineFilter(every_s)

    def event(self, kind: str, fields: dict[str, Any]) -> None:
        if self.lines.wants(kind, fields):
            self.stream.write(f"{stamp(fields)} {describe(kind, fields)}\n")
            self.stream.flush()

    def close(self) -> None:
        self.stream.flush()


class LogFileObserver:
    """Appends the printer's lines to a file, each with the date and the event's kind (appending,
    so a resumed run keeps its history)."""

    name = "train.log"  # in the warning if it fails (loop.event_bus)

    def __init__(self, path: Path, every_s: float = PROGRESS_EVERY_S) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.lines = LineFilter(every_s)
        self._file: TextIO | None = path.open("a", encoding="utf-8", errors="replace")  # any string

    def event(self, kind: str, fields: dict[str, Any]) -> None:
        if self._file is None or not self.lines.wants(kind, fields):
            return
        now = datetime.now().astimezone().strftime("%Y-%m-%d %H:%M:%S")
        elapsed = float(fields.get("time", 0.0))
        self._file.write(f"{now} {elapsed:8.1f}s {kind:<11} {describe(kind, fields)}\n")
        # flushed per line: a crashed or killed run still leaves a complete log to read
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


# ---------------------------------------------------------------------------------------------
# factory


def terminal_observer(stream: TextIO | None = None, force_tty: bool | None = None) -> Observer:
    """The CLI's progress: a rich live view on a terminal, plain lines per stage otherwise."""
    stream = stream if stream is not None else sys.stdout
    tty = force_tty if force_tty is not None else bool(getattr(stream, "isatty", lambda: False)())
    if tty:
        from skillgrad.observe.live import live_observer  # rich: only a terminal pays its import

        return live_observer(stream)
    return PlainObserver(stream)


def make_observers(
    out_dir: Path, stream: TextIO | None = None, force_tty: bool | None = None
) -> list[Observer]:
    """Terminal observer (rich live on a TTY, plain lines otherwise) plus `<out_dir>/train.log`."""
    return [terminal_observer(stream, force_tty), LogFileObserver(out_dir / RunFiles.LOG)]
