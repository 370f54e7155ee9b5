"""Progress observers: rich live view on a TTY, one line per event otherwise, and train.log."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text

from skillgrad.loop.events import Events
from skillgrad.observe.formatting import describe
from skillgrad.observe.live import RichObserver
from skillgrad.observe.progress import LogFileObserver, PlainObserver, make_observers
from tests.report_fixture import make_run, run_events


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def _fail(line: str) -> None:
    raise AssertionError(line)  # an observer that raises fails the test (the run would switch it off)


def _replay(observers: list[Any], events: list[tuple[str, dict[str, Any]]]) -> None:
    bus = Events(observers, on_failure=_fail)
    for kind, fields in events:
        bus.emit(kind, **{k: v for k, v in fields.items() if k != "time"})
    bus.close()


def test_plain_mode_prints_one_line_per_event_and_writes_train_log(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    (run / "train.log").unlink()
    stream = io.StringIO()
    observers = make_observers(run, stream=stream, force_tty=False)
    assert [type(o) for o in observers] == [PlainObserver, LogFileObserver]
    events = run_events(run)
    _replay(observers, events)
    lines = stream.getvalue().splitlines()
    assert len(lines) == len(events)
    assert "\x1b[" not in stream.getvalue()  # no terminal control codes in a pipe
    assert lines[0].lstrip("[ ").split("s]")[0].replace(".", "").isdigit()
    assert "run start: 2 epochs x 3 steps (6 steps)" in lines[0]
    assert any("step 1 (epoch 1) ACCEPTED: val 0.400" in line for line in lines)
    assert any("REJECTED" in line for line in lines)
    assert any("candidate identical to v0001" in line for line in lines)
    assert "run end (completed): best 0.800" in lines[-1] and "$" in lines[-1]
    log = (run / "train.log").read_text(encoding="utf-8").splitlines()
    assert len(log) == len(events)
    assert log[0].split()[3] == "run_start" and log[-1].split()[3] == "run_end"
    assert all(len(line.split()) > 4 for line in log)


def test_tty_mode_renders_live_progress(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    stream = io.StringIO()
    console = Console(file=stream, force_terminal=True, width=110)
    observer = RichObserver(console, auto_refresh=False)
    events = run_events(run)
    # stop in the middle of step 3's validation to look at the live view
    cut = next(
        i
        for i, (k, f) in enumerate(events)
        if k == "task_done" and f["step"] == 3 and f["stage"] == "validate" and f["done"] == 4
    )
    for kind, fields in events[: cut + 1]:
        observer.event(kind, fields)
    snapshot = io.StringIO()
    Console(file=snapshot, width=110, color_system=None).print(observer._render())
    view = snapshot.getvalue()
    assert "epoch 1/2   step 3/6" in view
    assert "validate (step 3)" in view and "4/6" in view
    assert "rollout (step 3)" in view and "steps" in view and "2/6" in view
    assert "rollout (step 2)" not in view  # earlier steps' bars are dropped
    assert "best 0.800" in view and "current 0.800" in view
    assert "optimizer" in view and "target" in view and "$" in view
    for kind, fields in events[cut + 1 :]:
        observer.event(kind, fields)
    observer.close()
    raw = stream.getvalue()
    assert "\x1b[" in raw  # a real terminal rendering
    out = Text.from_ansi(raw).plain
    assert "ACCEPTED" in out and "REJECTED" in out and "run end (completed)" in out
    assert "6/6" in out


def test_factory_detects_a_terminal(tmp_path: Path) -> None:
    observers = make_observers(tmp_path, stream=_Tty())
    assert isinstance(observers[0], RichObserver)
    assert observers[0].console.is_terminal
    _replay(observers, run_events(make_run(tmp_path)))
    assert (tmp_path / "train.log").is_file()
    assert isinstance(make_observers(tmp_path, stream=_Tty(), force_tty=False)[0], PlainObserver)


def test_observers_tolerate_sparse_and_unknown_events(tmp_path: Path) -> None:
    stream = io.StringIO()
    rich_stream = io.StringIO()
    observers = [
        *make_observers(tmp_path, stream=stream, force_tty=False),
        RichObserver(Console(file=rich_stream, force_terminal=True), auto_refresh=False),
    ]
    # what `skillgrad eval` emits: no run_start, no step, no epoch
    events: list[tuple[str, dict[str, Any]]] = [
        ("stage_start", {"stage": "test", "total": 2}),
        ("task_done", {"stage": "test", "done": 1, "total": 2, "task_id": "a", "score": None}),
        ("stage_end", {"stage": "test", "mean_score": 0.5}),
        ("something_new", {"x": 1}),
        ("message", {"text": "odd [/] markup [bold"}),
        ("run_end", {"best_score": None, "baseline_score": None, "stopped": "completed", "usage": {}}),
    ]
    for kind, fields in events:
        for obs in observers:
            obs.event(kind, {**fields, "time": 1.0})
    for obs in observers:
        obs.close()
    assert len(stream.getvalue().splitlines()) == len(events)
    assert "test: 1/2 task a" in stream.getvalue()
    assert "something_new: x=1" in stream.getvalue()
    assert "odd [/] markup [bold" in Text.from_ansi(rich_stream.getvalue()).plain


def test_describe_usage_and_scores() -> None:
    line = describe(
        "step_end",
        {
            "step": 4,
            "epoch": 2,
            "action": "rejected",
            "val_score": 0.5,
            "current_score": 0.625,
            "best_score": 0.625,
            "edits_applied": 2,
            "usage": {
                "optimizer": {"input_tokens": 12000, "output_tokens": 500, "calls": 3, "cost_usd": 0.05},
                "target": {"input_tokens": 10, "output_tokens": 5, "calls": 1, "cost_usd": None},
            },
            "step_usage": {
                "optimizer": {"input_tokens": 900, "output_tokens": 100, "calls": 1, "cost_usd": 0.01}
            },
        },
    )
    assert line == (
        "step 4 (epoch 2) REJECTED: val 0.500 vs current 0.625, best 0.625, 2 edits applied; "
        "step cost: optimizer 1.0k tok 1 calls $0.0100; "
        "run total: optimizer 12.5k tok 3 calls $0.0500; target 15 tok 1 calls $?"
    )
