"""Progress for Python callers: the events the CLI prints, handed to plain callables.

An observer is any callable taking an `Event` (what it returns is ignored), or an object with the
`event(kind, fields)` / `close()` methods of `skillgrad.loop.event_bus.Observer`. An observer that
raises is switched off, named once in a warning on stderr and a `message` event, and the run goes
on (`skillgrad.loop.event_bus.Events`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal, TextIO

from skillgrad.loop.event_bus import Events, Observer
from skillgrad.observe.formatting import describe, stamp
from skillgrad.observe.progress import PlainObserver, terminal_observer

EventKind = Literal["run_start", "stage_start", "task_done", "stage_end", "step_end", "run_end", "message"]


@dataclass(frozen=True)
class Event:
    """One progress event. `kind` and the `fields` it carries are those of the CLI's progress
    (docs/api.md lists them; `skillgrad.loop.event_bus` is their source): e.g. `step_end` has step,
    epoch, action (accepted | rejected | skipped), val_score, best_score, usage. Every event has
    `time`, the seconds since the run started."""

    kind: str
    fields: Mapping[str, Any]

    @property
    def time(self) -> float:
        return float(self.fields.get("time", 0.0))

    @property
    def line(self) -> str:
        """This event as one line, in the CLI's words (`[  12.3s] step 1 ...`). The CLI prints the
        line of every event but `task_done`, whose line it prints only for a stage quiet for 30 s
        (`skillgrad.observe.lines`)."""
        fields = dict(self.fields)
        return f"{stamp(fields)} {describe(self.kind, fields)}"

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, **self.fields}


EventCallback = Callable[[Event], object]
ObserverLike = EventCallback | Observer


class CallbackObserver:
    """A callable as an Observer: each event as an `Event`, its fields a read-only copy (the
    other observers get the same event)."""

    def __init__(self, callback: EventCallback) -> None:
        self.callback = callback
        self.name = getattr(callback, "__qualname__", None) or type(callback).__name__

    def event(self, kind: str, fields: dict[str, Any]) -> None:
        self.callback(Event(kind, MappingProxyType(dict(fields))))

    def close(self) -> None:
        pass


def as_observers(observers: Sequence[ObserverLike]) -> list[Observer]:
    """Observer objects as they are, callables wrapped; TypeError for anything else."""
    out: list[Observer] = []
    for observer in observers:
        if callable(getattr(observer, "event", None)) and callable(getattr(observer, "close", None)):
            out.append(observer)  # type: ignore[arg-type]
        elif callable(observer):
            out.append(CallbackObserver(observer))
        else:
            raise TypeError(
                f"observers: {observer!r} is neither a callable taking an Event nor an Observer "
                "(event(kind, fields) and close())"
            )
    return out


def announce(observers: Sequence[Observer], text: str) -> None:
    """A note before a run has its events (a numbered run folder, a finished run), as a
    `message` event to the caller's observers; with none, one line on stderr, so a caller who
    watches nothing still learns that the run went to another folder."""
    Events(list(observers)).emit("message", text=text)
    if not observers:
        print(f"skillgrad: {text}", file=sys.stderr)


def progress_printer(stream: TextIO | None = None) -> Observer:
    """An observer printing the run as the CLI does off a terminal: a line per stage start and
    end, step and message, to `stream` (default: sys.stdout at the time of the call)."""
    return PlainObserver(stream if stream is not None else sys.stdout)


def default_printer(quiet: bool) -> Observer | None:
    """What `train` and `evaluate` show unless `quiet`: the CLI's progress on sys.stdout (rich
    bars on a terminal, a line per stage otherwise)."""
    return None if quiet else terminal_observer(sys.stdout)
