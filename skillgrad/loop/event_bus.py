"""Progress events the trainer emits; observers (live progress, train.log, trackers) consume them.

Vocabulary (every event also carries `time` = seconds since the run started):
- run_start:  out, epochs, steps_per_epoch, total_steps, optimizer_backend, target_backend
- stage_start: stage ("baseline" | "rollout" | "reflect" | "validate" | "test" | "eval"), step,
              epoch, total (tasks; analyst calls for reflect), label (only where the stage's name
              does not say which run it is: a test pass's "v0000 (initial)" / "v0003 (best)", a
              racing validation's "wave 2", the incumbent's "current skill", a "re-ask").
              A racing validation starts one "validate" stage per wave; with overlap, a step's
              "rollout" stage may run beside the previous step's "validate"
- task_done:  stage, step, done, total, task_id (reflect: the minibatch's name), score (None for
              reflect), elapsed (the stage's seconds so far), label
- stage_end:  stage, step, done, total, failed, seconds, mean_score (None for reflect), edits
              (reflect: edits proposed), label
- step_end:   step, epoch, action ("accepted" | "rejected" | "skipped"), val_score (None when
              raced out), best_score, current_score, edits_applied, usage (the run's total so
              far, by role: {role: Usage.to_json()}), step_usage (this step alone, same shape),
              raced_out ({items, of, score, bound} or None), missing (val runs whose agent failed),
              held (not kept only because of those), version (an accepted step's new version),
              skip_reason (a skipped step: why no candidate was validated, in words)
- run_end:    best_score, baseline_score, stopped, usage
- message:    text (a one-off human note, e.g. "candidate identical to v0001: reusing its score")

Observers must never raise into the trainer: an observer that raises (an MLflow server that went
away, a display that crashed) is switched off, and that is said once, naming it and the error,
through `on_failure` (the CLI prints a warning line) and to the observers still working (a
`message` event: train.log keeps it). The run goes on.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from skillgrad.errors import print_warning


class Observer(Protocol):
    def event(self, kind: str, fields: dict[str, Any]) -> None: ...

    def close(self) -> None: ...


def observer_name(observer: Observer) -> str:
    return str(getattr(observer, "name", None) or type(observer).__name__)


class Events:
    """Fan-out of events to observers, timestamped relative to the run start. `on_failure` gets
    one line per observer that failed (default: a warning on stderr)."""

    def __init__(
        self, observers: list[Observer] | None = None, on_failure: Callable[[str], None] = print_warning
    ) -> None:
        self.observers = list(observers or [])
        self.started = time.monotonic()
        self.on_failure = on_failure
        self._broken: set[int] = set()
        self._lock = threading.Lock()  # events come from the trainer's threads

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def emit(self, kind: str, **fields: Any) -> None:
        fields["time"] = round(time.monotonic() - self.started, 3)
        for i, obs in enumerate(self.observers):
            if i in self._broken:
                continue
            try:
                obs.event(kind, fields)
            except Exception as exc:  # an observer bug must not kill a paid-for run
                self._switch_off(i, f"on a {kind} event", exc)

    def _switch_off(self, index: int, when: str, exc: Exception, *, relay: bool = True) -> None:
        with self._lock:
            if index in self._broken:
                return
            self._broken.add(index)
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        line = (
            f"progress observer {observer_name(self.observers[index])} failed {when} "
            f"({type(exc).__name__}{': ' + reason[:300] if reason else ''}); "
            "it is switched off, the run goes on"
        )
        self.on_failure(line)
        if relay:
            self.emit("message", text=line)

    def close(self) -> None:
        for i, obs in enumerate(self.observers):
            try:
                obs.close()
            except Exception as exc:  # closing a broken observer must not mask the run's outcome
                if i not in self._broken:
                    self._switch_off(i, "when closing", exc, relay=False)


class StageProgress:
    """One run of a stage as progress events: `stage_start` when made, a `task_done` per finished
    item (counted across threads, with the stage's `elapsed` seconds), `stage_end` with the
    counts and `seconds`; `label` (a test pass's version, a wave, a re-ask) rides on each."""

    def __init__(
        self, events: Events, stage: str, step: int, epoch: int | None, total: int, label: str | None
    ) -> None:
        self.events, self.stage, self.step, self.total = events, stage, step, total
        self.tag = {"label": label} if label else {}
        self.started = time.monotonic()
        self.done = 0
        self._lock = threading.Lock()
        events.emit("stage_start", stage=stage, step=step, epoch=epoch, total=total, **self.tag)

    def seconds(self) -> float:
        return round(time.monotonic() - self.started, 3)

    def task_done(self, task_id: str, score: float | None) -> None:
        with self._lock:
            self.done += 1
            count = self.done
        self.events.emit(
            "task_done",
            stage=self.stage,
            step=self.step,
            done=count,
            total=self.total,
            task_id=task_id,
            score=score,
            elapsed=self.seconds(),
            **self.tag,
        )

    def end(self, mean_score: float | None, done: int, failed: int, **extra: Any) -> None:
        self.events.emit(
            "stage_end",
            stage=self.stage,
            step=self.step,
            mean_score=mean_score,
            done=done,
            total=self.total,
            failed=failed,
            **extra,
            seconds=self.seconds(),
            **self.tag,
        )
