"""Progress observers: rich live view on a TTY (a bar per stage, its time left), a line per stage
start and end otherwise and in train.log, a slow stage's progress every 30 s."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text

from skillgrad.loop.event_bus import Events
from skillgrad.loop.selection import CLIPPED, REJECTED
from skillgrad.loop.step_records import skip_note
from skillgrad.observe.formatting import describe
from skillgrad.observe.live import RichObserver
from skillgrad.observe.progress import LogFileObserver, PlainObserver, make_observers
from skillgrad.skilldoc import Edit, SkillDoc
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


def test_plain_mode_prints_a_line_per_stage_and_writes_train_log(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    (run / "train.log").unlink()
    stream = io.StringIO()
    observers = make_observers(run, stream=stream, force_tty=False)
    assert [type(o) for o in observers] == [PlainObserver, LogFileObserver]
    events = run_events(run)
    _replay(observers, events)
    lines = stream.getvalue().splitlines()
    stages = sum(1 for kind, _ in events if kind == "stage_start")
    assert stages == 1 + 6 * 3 + 2  # the baseline, 6 steps of rollout, reflect and validate, 2 tests
    # every task reaches the observers, but a fast stage prints its start and its end only
    assert len(lines) == len(events) - sum(1 for kind, _ in events if kind == "task_done") < len(events) / 2
    assert "\x1b[" not in stream.getvalue()  # no terminal control codes in a pipe
    assert lines[0].lstrip("[ ").split("s]")[0].replace(".", "").isdigit()
    assert "run start: 2 epochs x 3 steps (6 steps)" in lines[0]
    text = "\n".join(lines)
    assert re.search(r"\] baseline: done, 6/6 tasks in \d+\.\ds, mean score 0\.233$", text, re.M)
    assert re.search(r"\] step 1 reflect: done, 2/2 analyst calls in \d+\.\ds, 2 edit\(s\) proposed", text)
    assert "step 1 (epoch 1) ACCEPTED v0001: val 0.400 vs current 0.233, best 0.400" in text
    assert any("REJECTED" in line for line in lines)
    assert any("candidate identical to v0001" in line for line in lines)
    # the two final test passes, named by the skill version each tests
    assert re.search(r"\] test v0000 \(initial\): started, 6 tasks$", text, re.M)
    assert re.search(r"\] test v0002 \(best\): done, 6/6 tasks in \d+\.\ds, mean score", text)
    assert "run end (completed): best 0.800" in lines[-1] and "$" in lines[-1]
    log = (run / "train.log").read_text(encoding="utf-8").splitlines()
    assert len(log) == len(lines)
    assert [line.split(None, 4)[4] for line in log] == [line.split("] ", 1)[1] for line in lines]
    assert log[0].split()[3] == "run_start" and log[-1].split()[3] == "run_end"
    assert "task_done" not in {line.split()[3] for line in log}


def test_a_slow_stage_says_how_far_it_is_and_what_is_left() -> None:
    """Off a terminal a stage quiet for 30 s prints its next task's line: its count, its time and,
    at its own pace, the time left; the stage's last task leaves the line to its end."""
    stream = io.StringIO()
    printer = PlainObserver(stream)
    common = {"stage": "reflect", "step": 2, "total": 4}
    printer.event("stage_start", {**common, "time": 10.0})
    for done, at in ((1, 25.0), (2, 50.0), (3, 60.0), (4, 95.0)):
        printer.event("task_done", {**common, "done": done, "task_id": f"mb_0{done - 1}", "score": None,
                                    "elapsed": at - 10.0, "time": at})  # fmt: skip
    printer.event("stage_end", {**common, "done": 4, "failed": 1, "edits": 2, "seconds": 85.0, "time": 95.0})
    lines = [line.split("] ", 1)[1] for line in stream.getvalue().splitlines()]
    assert lines == [
        "step 2 reflect: started, 4 analyst calls",
        "step 2 reflect: 2/4 mb_01; 40.0s, about 40.0s left",  # 40 s after the start
        "step 2 reflect: done, 4/4 analyst calls in 1m25s, 1 failed, 2 edit(s) proposed",
    ]


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
    assert "step 3 validate" in view and "4/6" in view and "left" in view  # its time left, at its pace
    assert "step 3 rollout" in view and "step 3 reflect" in view and "steps" in view and "2/6" in view
    assert "step 2 rollout" not in view and "baseline" not in view  # earlier steps' bars are dropped
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
    # a line per finished stage stays above the bars, the reflect stages' and the test passes' too
    assert re.search(r"step 6 reflect: done, 2/2 analyst calls in", out)
    assert "test v0000 (initial): done, 6/6 tasks" in out and "test v0002 (best): done" in out


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
    assert len(stream.getvalue().splitlines()) == len(events) - 1  # a fast stage's task: no line
    assert (
        "test: started, 2 tasks" in stream.getvalue() and "test: done, mean score 0.500" in stream.getvalue()
    )
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
        "step 4 (epoch 2) REJECTED: val 0.500 vs current 0.625, best 0.625; 2 edits applied; "
        "step cost: optimizer 1.0k tok 1 calls $0.0100; "
        "run total: optimizer 12.5k tok 3 calls $0.0500; target 15 tok 1 calls $?"
    )


def test_a_step_line_says_what_happened_in_words() -> None:
    """A step that validated nothing says why, a raced-out candidate where it stopped and what it
    could at most have scored, a held one that its failed runs decided, an accepted one its version."""
    base = {"step": 2, "epoch": 1, "best_score": 0.42, "current_score": 0.42, "usage": {}, "step_usage": {}}

    def verdict(**fields: Any) -> str:
        line = describe("step_end", {**base, **fields})
        return line.split("step 2 (epoch 1) ", 1)[1].split("; step cost", 1)[0]

    assert (
        verdict(action="skipped", edits_applied=0, skip_reason="no edit proposed")
        == "SKIPPED: no edit proposed"
    )
    raced = {"items": 6, "of": 12, "score": 0.25, "bound": 0.31}
    assert verdict(action="rejected", val_score=None, edits_applied=1, raced_out=raced) == (
        "REJECTED: raced out after 6/12 val items (0.250 on those; at most 0.310 on all 12, which "
        "cannot pass against current 0.420), best 0.420; 1 edits applied"
    )
    assert verdict(action="rejected", val_score=0.5, edits_applied=1, missing=2, held=True) == (
        "REJECTED: val 0.500 (2 val run(s) whose agent failed left out) vs current 0.420; held: those "
        "failed runs decide it, so its edits stay allowed, best 0.420; 1 edits applied"
    )
    assert verdict(action="accepted", val_score=0.5, edits_applied=2, version="v0002").startswith(
        "ACCEPTED v0002: val 0.500 vs current 0.420"
    )
    assert "SKIPPED: no candidate to validate" in describe("step_end", {**base, "action": "skipped"})


def test_a_skipped_step_says_what_became_of_its_edits() -> None:
    """Why a step validated no candidate: the check that refused it, edits that changed nothing,
    or where each proposed edit went (dropped by selection, or failed to apply)."""
    skill = SkillDoc("Be brief.\n")
    applied = skill.apply([Edit("add", "", "Name the staging host.")], 10_000)[1]
    failed = skill.apply([Edit("replace", "no such line", "x")], 10_000)[1]
    assert [o.status for o in applied + failed] == ["applied", "skipped"]
    dropped = {REJECTED: 2, CLIPPED: 0}
    assert skip_note({}, [], "skill.max_chars", False) == "the candidate was refused: skill.max_chars"
    assert skip_note({}, applied, None, True) == "the applied edits leave the skill as it was"
    assert skip_note({CLIPPED: 0}, [], None, False) == "no edit proposed"
    assert skip_note(dropped, failed, None, False) == (
        "no edit applied: 3 proposed (2 rejected earlier, 1 failed to apply)"
    )
