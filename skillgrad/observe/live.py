"""The live terminal view of a run (rich): a step header, one progress bar per stage (rollouts,
reflection, validation, each test pass) with its count, time and time left at its own pace, scores
and usage by role; a line per finished stage and step above it. Its own module so that only a run
on a terminal imports rich."""

from __future__ import annotations

from typing import Any, TextIO

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table
from rich.text import Text

from skillgrad.loop.step_records import StepEnd
from skillgrad.observe.formatting import (
    describe,
    fmt_cost,
    fmt_score,
    fmt_seconds,
    fmt_tokens,
    stage_name,
    stamp,
    usage_by_role,
)
from skillgrad.observe.lines import stage_key
from skillgrad.values import Usage

_ACTION_STYLE = {"accepted": "bold green", "rejected": "red", "skipped": "yellow"}


class TimeLeft(ProgressColumn):
    """A running stage's time left at its own pace: its seconds per finished item (`per_item`,
    from its task_done events) times its items, less the time it has run, counting down."""

    def render(self, task: Task) -> Text:
        per_item = task.fields.get("per_item")
        if task.finished or task.total is None or not isinstance(per_item, float):
            return Text("")
        left = max(0.0, per_item * task.total - (task.elapsed or 0.0))
        return Text(f"~{fmt_seconds(left)} left", style="progress.remaining")


class RichObserver:
    """Live terminal view: step header, one progress bar per stage, scores, usage by role."""

    name = "live progress view"  # in the warning if it fails (loop.event_bus)

    def __init__(self, console: Console, *, auto_refresh: bool = True) -> None:
        self.console = console
        self.progress = Progress(
            TextColumn("{task.description:<30}"),
            BarColumn(bar_width=None),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeLeft(),
            console=console,
            expand=True,
        )
        self._started = False
        self._steps_task: TaskID | None = None
        self._stage_tasks: dict[tuple[str, str, str], TaskID] = {}  # stage_key -> its bar
        self._finished: set[tuple[str, str, str]] = set()
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
        self.console.print(Text.assemble((stamp(fields), "dim"), " ", (line, style)))

    def _on_run_start(self, f: dict[str, Any]) -> None:
        self.epochs, self.total_steps = f.get("epochs"), f.get("total_steps")
        self._print(f, describe("run_start", f), "bold")
        if self.total_steps:
            self._steps_task = self.progress.add_task("steps", total=self.total_steps)

    def _on_stage_start(self, f: dict[str, Any]) -> None:
        if f.get("epoch") is not None:
            self.epoch = f["epoch"]
        key = stage_key(f)
        # one bar per stage of the current step: a stage that starts drops the finished bars of
        # other steps (and its own earlier run's), so the view stays a few lines high however long
        # the run is, while a stage still running beside it (overlap) keeps its bar
        for old in [k for k in self._stage_tasks if k == key or (k in self._finished and k[1] != key[1])]:
            self.progress.remove_task(self._stage_tasks.pop(old))
            self._finished.discard(old)
        if f.get("step") is not None and str(f.get("stage")).split()[-1] not in ("baseline", "test"):
            self.step = f["step"]
        self._stage_tasks[key] = self.progress.add_task(stage_name(f), total=f.get("total") or None)

    def _on_task_done(self, f: dict[str, Any]) -> None:
        task_id = self._stage_tasks.get(stage_key(f))
        if task_id is None:
            return
        done, elapsed = f.get("done", 0), f.get("elapsed")
        pace = {"per_item": float(elapsed) / done} if isinstance(elapsed, int | float) and done else {}
        self.progress.update(task_id, completed=done, total=f.get("total") or None, **pace)

    def _on_stage_end(self, f: dict[str, Any]) -> None:
        key = stage_key(f)
        task_id = self._stage_tasks.get(key)
        if task_id is not None:
            total = self.progress.tasks[self.progress.task_ids.index(task_id)].total or 1
            self.progress.update(task_id, completed=total, total=total)
            self.progress.stop_task(task_id)
            self._finished.add(key)
        if f.get("stage") == "baseline" and f.get("mean_score") is not None:
            self.current_score = self.best_score = float(f["mean_score"])
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


def live_observer(stream: TextIO) -> RichObserver:
    return RichObserver(Console(file=stream, force_terminal=True))
