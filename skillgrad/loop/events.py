"""Progress events the trainer emits; observers (live progress, train.log, trackers) consume them.

Vocabulary (every event also carries `time` = seconds since the run started):
- run_start:  out, epochs, steps_per_epoch, total_steps, optimizer_backend, target_backend
- stage_start: stage ("baseline" | "rollout" | "reflect" | "validate" | "test"), step, epoch, total
              (a racing validation starts one "validate" stage per wave; with overlap, a step's
              "rollout" stage may run beside the previous step's "validate")
- task_done:  stage, step, done, total, task_id, score
- stage_end:  stage, step, mean_score (None for reflect)
- step_end:   step, epoch, action ("accepted" | "rejected" | "skipped"), val_score, best_score,
              current_score, edits_applied, usage (the run's total so far, by role: {role:
              Usage.to_json()}), step_usage (this step alone, same shape)
- run_end:    best_score, baseline_score, stopped, usage
- message:    text (a one-off human note, e.g. "candidate identical to v0001: reusing its score")

Observers must never raise into the trainer; `emit` swallows and reports observer errors once.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any, Protocol


class Observer(Protocol):
    def event(self, kind: str, fields: dict[str, Any]) -> None: ...

    def close(self) -> None: ...


class Events:
    """Fan-out of events to observers, timestamped relative to the run start."""

    def __init__(self, observers: list[Observer] | None = None) -> None:
        self.observers = list(observers or [])
        self.started = time.monotonic()
        self._broken: set[int] = set()

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def emit(self, kind: str, **fields: Any) -> None:
        fields["time"] = round(time.monotonic() - self.started, 3)
        for i, obs in enumerate(self.observers):
            if i in self._broken:
                continue
            try:
                obs.event(kind, fields)
            except Exception:  # an observer bug must not kill a paid-for run
                self._broken.add(i)

    def close(self) -> None:
        for obs in self.observers:
            with contextlib.suppress(Exception):  # closing a broken observer must not mask the run's outcome
                obs.close()
