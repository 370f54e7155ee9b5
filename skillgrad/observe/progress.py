"""Observers that show a run while it runs: a rich live display, a plain printer, and train.log.

All three consume the event vocabulary of `skillgrad.loop.events` and share one formatter, so the
terminal, a CI log and `<out>/train.log` tell the same story in the same words. Usage semantics
(as the trainer emits them): `step_end.usage` and `run_end.usage` are the run's totals so far by
role, `{role: Usage-json}`; `step_end.step_usage` is what that step alone cost, in the same shape.
"""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from skillgrad.loop.events import Observer
from skillgrad.loop.records import StepEnd
from skillgrad.run_folder import RunFiles
from skillgrad.values import Usage

# ---------------------------------------------------------------------------------------------
# formatting shared by every observer


def fmt_score(value: Any) -> str:
    return "-" if value is None else f"{float(value):.3f}"


def fmt_tokens(n: int) -> str:
    if n >= 1_000_000:
        return f"{n / 1_000_000:.2f}M"
    return f"{n / 1000:.1f}k" if n >= 1000 else str(n)


def fmt_cost(value: float | None) -> str:
    return "$?" if value is None else f"${value:.4f}"


def usage_by_role(raw: Any) -> dict[str, Usage]:
    """An event's `{role: Usage-json}` -> `{role: Usage}` (anything else: no usage)."""
    if not isinstance(raw, dict):
        return {}
    return {role: Usage.from_json(u) for role, u in raw.items() if isinstance(u, dict)}


def fmt_usage(usage: dict[str, Usage]) -> str:
    parts = [
        f"{role} {fmt_tokens(u.total_tokens)} tok {u.calls} calls {fmt_cost(u.cost_usd)}"
        for role, u in sorted(usage.items())
    ]
    return "; ".join(parts) if parts else "no usage"


def _where(fields: dict[str, Any]) -> str:
    step, epoch = fields.get("step"), fields.get("epoch")
    if step is None:
        return ""
    return f"step {step}" + (f" (epoch {epoch})" if epoch is not None else "") + " "


def describe(kind: str, fields: dict[str, Any]) -> str:
    """One human-readable line for one event (no timestamp)."""
    f = fields
    if kind == "run_start":
        return (
            f"run start: {f.get('epochs')} epochs x {f.get('steps_per_epoch')} steps "
            f"({f.get('total_steps')} steps); optimizer={f.get('optimizer_backend')} "
            f"target={f.get('target_backend')}; out={f.get('out')}"
        )
    if kind == "stage_start":
        return f"{_where(f)}{f.get('stage')}: started, {f.get('total')} to do"
    if kind == "task_done":
        task = "" if f.get("task_id") is None else f" task {f['task_id']}"
        score = "" if f.get("score") is None else f" score {fmt_score(f['score'])}"
        return f"{_where(f)}{f.get('stage')}: {f.get('done')}/{f.get('total')}{task}{score}"
    if kind == "stage_end":
        mean = f.get("mean_score")
        tail = "" if mean is None else f", mean score {fmt_score(mean)}"
        return f"{_where(f)}{f.get('stage')}: done{tail}"
    if kind == "step_end":
        end = StepEnd.from_json(f)
        return (
            f"{_where(f)}{end.action.upper()}: val {fmt_score(end.val_score)} "
            f"vs current {fmt_score(end.current_score)}, best {fmt_score(end.best_score)}, "
            f"{end.edits_applied} edits applied; "
            f"step cost: {fmt_usage(usage_by_role(end.step_usage))}; "
            f"run total: {fmt_usage(usage_by_role(end.usage))}"
        )
    if kind == "run_end":
        return (
            f"run end ({f.get('stopped')}): best {fmt_score(f.get('best_score'))}, "
            f"baseline {fmt_score(f.get('baseline_score'))}; "
            f"run total: {fmt_usage(usage_by_role(f.get('usage')))}"
        )
    if kind == "message":
        return str(f.get("text", ""))
    extra = " ".join(f"{k}={v}" for k, v in f.items() if k != "time")
    return f"{kind}: {extra}"


def _stamp(fields: dict[str, Any]) -> str:
    return f"[{float(fields.get('time', 0.0)):8.1f}s]"


# ---------------------------------------------------------------------------------------------
# plain and log-file observers


class PlainObserver:
    """One line per event: for pipes, CI logs and anything that is not a terminal."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def event(self, kind: str, fields: dict[str, Any]) -> None:
        self.stream.write(f"{_stamp(fields)} {describe(kind, fields)}\n")
        self.stream.flush()

    def close(self) -> None:
        self.stream.flush()


class LogFileObserver:
    """Appends every event as one line to a file (appending, so a resumed run keeps its history)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._file: TextIO | None = path.open("a", encoding="utf-8", errors="replace")  # any string

    def event(self, kind: str, fields: dict[str, Any]) -> None:
        if self._file is None:
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
# rich live display


_ACTION_STYLE = {"accepted": "bold green", "rejected": "red", "skipped": "yellow"}


class RichObserver:
    """Live terminal view: step header, one progress bar per stage, scores, usage by role."""

    def __init__(self, console: Console, *, auto_refresh: bool = True) -> None:
        self.console = console
        self.progress = Progress(
            TextColumn("{task.description:<22}"),
            BarColumn(bar_width=None),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            expand=True,
        )
        self._started = False
        self._steps_task: TaskID | None = None
        self._stage_tasks: dict[str, TaskID] = {}
        self.epoch: Any = None
        self.step: Any = None
        self.epochs: Any = None
        self.total_steps: Any = None
        self.current_score: float | None = None
        self.best_score: float | None = None
        self.usage: dict[str, Usage] = {}
        # created last: Live renders the header once at construction, so the state must exist
        self.live = Live(
            get_renderable=self._render,
            console=console,
            auto_refresh=auto_refresh,
            refresh_per_second=4,
            transient=False,
        )

    # -- rendering ----------------------------------------------------------------------------

    def _header(self) -> Table:
        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="bold cyan")
        grid.add_column()
        step = "-" if self.step is None else f"{self.step}/{self.total_steps or '?'}"
        epoch = "-" if self.epoch is None else f"{self.epoch}/{self.epochs or '?'}"
        grid.add_row("progress", f"epoch {epoch}   step {step}")
        grid.add_row(
            "validation",
            f"current {fmt_score(self.current_score)}   [bold green]best {fmt_score(self.best_score)}[/]",
        )
        for role, u in sorted(self.usage.items()):
            grid.add_row(
                role,
                f"{fmt_tokens(u.input_tokens)} in / {fmt_tokens(u.output_tokens)} out tokens, "
                f"{u.calls} calls, {fmt_cost(u.cost_usd)}",
            )
        return grid

    def _render(self) -> RenderableType:
        return Group(self._header(), self.progress)

    # -- events -------------------------------------------------------------------------------

    def _ensure_live(self) -> None:
        if not self._started:
            self.live.start()
            self._started = True

    def event(self, kind: str, fields: dict[str, Any]) -> None:
        self._ensure_live()
        handler = getattr(self, f"_on_{kind}", None)
        if handler is not None:
            handler(fields)
        if kind == "message":
            self._print(fields, describe(kind, fields), "italic")
        self.live.refresh()

    def _print(self, fields: dict[str, Any], line: str, style: str = "") -> None:
        # Text, not markup: task ids and messages may contain "[...]" that rich would parse
        self.console.print(Text.assemble((_stamp(fields), "dim"), " ", (line, style)))

    def _on_run_start(self, f: dict[str, Any]) -> None:
        self.epochs, self.total_steps = f.get("epochs"), f.get("total_steps")
        self._print(f, describe("run_start", f), "bold")
        if self.total_steps:
            self._steps_task = self.progress.add_task("steps", total=self.total_steps)

    def _on_stage_start(self, f: dict[str, Any]) -> None:
        if f.get("epoch") is not None:
            self.epoch = f["epoch"]
        stage = str(f.get("stage"))
        # one bar per stage of the current step; a new step drops the previous step's bars so the
        # view stays a few lines high however long the run is
        if f.get("step") != self.step or stage in self._stage_tasks:
            for task_id in self._stage_tasks.values():
                self.progress.remove_task(task_id)
            self._stage_tasks = {}
        self.step = f.get("step", self.step)
        label = stage if f.get("step") is None else f"{stage} (step {f['step']})"
        self._stage_tasks[stage] = self.progress.add_task(label, total=f.get("total") or None)

    def _on_task_done(self, f: dict[str, Any]) -> None:
        task_id = self._stage_tasks.get(str(f.get("stage")))
        if task_id is not None:
            self.progress.update(task_id, completed=f.get("done", 0), total=f.get("total") or None)

    def _on_stage_end(self, f: dict[str, Any]) -> None:
        task_id = self._stage_tasks.get(str(f.get("stage")))
        if task_id is not None:
            total = self.progress.tasks[self.progress.task_ids.index(task_id)].total or 1
            self.progress.update(task_id, completed=total, total=total)
        if f.get("stage") == "baseline" and f.get("mean_score") is not None:
            self.current_score = self.best_score = float(f["mean_score"])
        if f.get("mean_score") is not None:
            self._print(f, describe("stage_end", f))

    def _on_step_end(self, f: dict[str, Any]) -> None:
        end = StepEnd.from_json(f)
        action = end.action
        if action == "accepted" and end.val_score is not None:
            self.current_score = end.val_score
        elif end.current_score is not None:
            self.current_score = end.current_score
        if end.best_score is not None:
            self.best_score = end.best_score
        totals = usage_by_role(end.usage)
        if totals:
            self.usage = totals
        if self._steps_task is not None:
            self.progress.advance(self._steps_task)
        style = _ACTION_STYLE.get(action, "")
        self._print(f, describe("step_end", f), style)

    def _on_run_end(self, f: dict[str, Any]) -> None:
        totals = usage_by_role(f.get("usage"))
        if totals:
            self.usage = totals
        if f.get("best_score") is not None:
            self.best_score = float(f["best_score"])
        self._print(f, describe("run_end", f), "bold")

    def close(self) -> None:
        if self._started:
            self.live.refresh()
            self.live.stop()
            self._started = False


# ---------------------------------------------------------------------------------------------
# factory


def make_observers(
    out_dir: Path, stream: TextIO | None = None, force_tty: bool | None = None
) -> list[Observer]:
    """Terminal observer (rich live on a TTY, plain lines otherwise) plus `<out_dir>/train.log`."""
    stream = stream if stream is not None else sys.stdout
    tty = force_tty if force_tty is not None else bool(getattr(stream, "isatty", lambda: False)())
    terminal: Observer = (
        RichObserver(Console(file=stream, force_terminal=True)) if tty else PlainObserver(stream)
    )
    return [terminal, LogFileObserver(out_dir / RunFiles.LOG)]
