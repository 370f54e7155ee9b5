"""Which events a log of a run writes as lines (the plain progress off a terminal, train.log):
every event but the per-task `task_done`, so that a run prints a line where a stage starts and
one where it ends, with its counts and duration, however many tasks it has. A stage that has
been quiet for `every_s` seconds prints the `task_done` that comes next: its count so far, its
time and, from its own pace, what is left. The events themselves all reach every observer."""

from __future__ import annotations

import threading
from typing import Any

PROGRESS_EVERY_S = 30.0  # a slow stage's progress line at most this often


def stage_key(fields: dict[str, Any]) -> tuple[str, str, str]:
    """What tells one running stage from another: several may run side by side (overlap)."""
    return (str(fields.get("stage")), str(fields.get("step")), str(fields.get("label") or ""))


class LineFilter:
    """`wants(kind, fields)`: whether a line-per-stage log writes this event (thread-safe: events
    come from the trainer's threads)."""

    def __init__(self, every_s: float = PROGRESS_EVERY_S) -> None:
        self.every_s = every_s
        self._last: dict[tuple[str, str, str], float] = {}  # a running stage -> its last line's time
        self._lock = threading.Lock()

    def wants(self, kind: str, fields: dict[str, Any]) -> bool:
        if kind not in ("stage_start", "task_done", "stage_end"):
            return True
        key, now = stage_key(fields), float(fields.get("time", 0.0))
        with self._lock:
            if kind == "stage_start":
                self._last[key] = now
                return True
            if kind == "stage_end":
                self._last.pop(key, None)
                return True
            last = self._last.setdefault(key, now)  # a stage whose start it did not see: from now
            if fields.get("done") == fields.get("total") or now - last < self.every_s:
                return False  # the last task's line is the stage_end's
            self._last[key] = now
            return True
