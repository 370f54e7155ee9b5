"""Issue 32, defect 1: one large or damaged file never loses the whole report.

Large task, score, trace and answer files are shown in part with their size; a damaged file is
named in a warning line and skipped while the rest renders (exit 0); a real run folder with a
10 MB reply and a 10 MB trace (the real Claude Code CLI through the scripted API) renders in
headless Chromium.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from skillgrad.report import files
from skillgrad.report.data import load_run
from skillgrad.report.files import Partial
from tests.report_fixture import make_run
from tests.test_report import _chromium, _console_messages

MB10 = 10_000_000


def _report(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "skillgrad.cli", "report", *args], capture_output=True, text=True, timeout=200
    )


def _eval_folder(tmp_path: Path) -> Path:
    run = make_run(tmp_path, with_test=False)
    folder = tmp_path / "eval"
    shutil.copytree(run / "steps/0000/rollouts/val", folder / "rollouts/test")
    (folder / "eval.json").write_text(
        json.dumps({"skill": "s.md", "split": "test", "mean_score": 0.5, "n": 6, "passed": 3, "usage": {}})
    )
    return folder


def _task(folder: Path) -> Path:
    return sorted(p for p in (folder / "rollouts" / "test").iterdir() if p.is_dir())[0]


def test_a_five_megabyte_question_no_longer_refuses_the_report(tmp_path: Path) -> None:
    """The issue's repro: 5,000,000 characters appended to one task's question."""
    folder = _eval_folder(tmp_path)
    task_file = _task(folder) / "task.json"
    task = json.loads(task_file.read_text(encoding="utf-8"))
    task["question"] += "x" * 5_000_000
    task_file.write_text(json.dumps(task), encoding="utf-8")
    proc = _report(str(folder))
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    html = (folder / "report.html").read_text(encoding="utf-8")
    assert f"[{len(task['question']):,} characters in all]" in html and "3/6 passed" in html
    assert len(html) < 500_000  # the question is shown in part, not whole


def test_large_files_of_every_kind_are_shown_in_part(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _eval_folder(tmp_path)
    big, other = sorted(p for p in (folder / "rollouts" / "test").iterdir() if p.is_dir())[:2]
    (big / "answer.txt").write_text("a" * MB10, encoding="utf-8")
    score = json.loads((big / "score.json").read_text(encoding="utf-8"))
    (big / "score.json").write_text(json.dumps({**score, "feedback": "f" * MB10}), encoding="utf-8")
    steps = [
        {"kind": "tool_result", "text": "r" * 150, "tool": "Bash", "is_error": i % 1000 == 0}
        for i in range(60_000)
    ]
    (big / "trace.json").write_text(json.dumps(steps), encoding="utf-8")  # 10 MB of steps
    (big / "claude_trace_steps.txt").write_text("line\n" * (MB10 // 5), encoding="utf-8")
    monkeypatch.setattr(files, "JSON_LIMIT", 11_000_000)  # what a document over 64 MB meets, at 11 MB
    (other / "task.json").write_text(
        json.dumps({"id": "huge", "question": "q" * 12_000_000}), encoding="utf-8"
    )

    run = load_run(folder)
    tasks = {t.task_id: t for t in run.rollout_sets[0].tasks}
    task = tasks[json.loads((big / "task.json").read_text())["id"]]
    assert (
        isinstance(task.answer, Partial)
        and task.answer.whole == "10.0 MB"
        and len(task.answer) <= files.TEXT_LIMIT
    )
    assert isinstance(task.feedback, Partial) and task.feedback.whole == f"{MB10:,} characters"
    assert len(task.trace) == files.TRACE_STEPS and (task.steps, task.tool_errors) == (60_000, 60)
    assert isinstance(task.trace_text, Partial)
    assert any("answer.txt: 10.0 MB" in n for n in task.notes)
    assert any("trace.json: 60,000 items" in n for n in task.notes)
    shown = tasks[other.name]  # its task.json is over the limit: the task shows without it
    assert shown.question == "" and any("task.json" in n and "not shown" in n for n in shown.notes)
    assert run.warnings == []  # large is not damaged

    proc = _report(str(folder))
    assert proc.returncode == 0, proc.stderr
    html = (folder / "report.html").read_text(encoding="utf-8")
    assert "[10.0 MB in all]" in html and "59,800 more steps not shown" in html and "60 tool errors" in html
    assert len(html) < 2_000_000


def _damage(run: Path) -> dict[str, Path]:
    """One damaged file of each kind the report reads; returns them by what they are."""
    tasks = sorted(p for p in (run / "steps/0000/rollouts/val").iterdir() if p.is_dir())
    damaged = {
        "score": tasks[0] / "score.json",
        "task": tasks[1] / "task.json",
        "trace": tasks[2] / "trace.json",
        "summary": run / "summary.json",
        "config": run / "config.json",
        "index": run / "steps/0001/rollouts/train.tasks.json",
    }
    damaged["score"].write_text('{"value": 1.0, "passed": tr', encoding="utf-8")
    damaged["task"].write_bytes(b'{"id": "\xff\xfe"}')
    damaged["trace"].write_text('[{"kind": "text", "text": "a"}, {"kind": ', encoding="utf-8")
    damaged["summary"].write_text("[1, 2]", encoding="utf-8")
    damaged["config"].write_text("not json at all", encoding="utf-8")
    damaged["index"].write_text('["q01", "../../outside"]', encoding="utf-8")
    lines = (run / "history.jsonl").read_text(encoding="utf-8").splitlines()
    odd = ["#garbage", '{"step": "three"}', '{"step": 9, "usage": [1]}', '{"step": 9, "edits": 5}']
    (run / "history.jsonl").write_text("\n".join([lines[0], *odd, *lines[1:]]) + "\n", encoding="utf-8")
    first = json.loads(lines[0])  # an edit that lost its fields still renders
    (run / "history.jsonl").write_text(
        (run / "history.jsonl")
        .read_text(encoding="utf-8")
        .replace(lines[0], json.dumps({**first, "edits": [{}]}))
    )
    damaged["history"] = run / "history.jsonl"
    # a frontier run's pool whose member names a parent that is not in it; a torn reflection record
    damaged["pool"] = run / "state.json"
    member = {"version": 0, "parents": [3], "text": "", "results": {"q01": [1.0]}}
    damaged["pool"].write_text(json.dumps({"step": 1, "pool": {"members": [member]}}), encoding="utf-8")
    damaged["reflection"] = run / "steps/0001/reflections/mb_00.json"
    damaged["reflection"].parent.mkdir(parents=True, exist_ok=True)
    damaged["reflection"].write_text('{"minibatch": 0, "edits": [', encoding="utf-8")
    return damaged


def test_damaged_files_are_named_and_skipped_and_the_rest_renders(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    damaged = _damage(run)
    proc = _report(str(run))
    assert proc.returncode == 0, proc.stderr
    warnings = proc.stderr.strip().splitlines()
    assert len(warnings) == len(damaged) and all(w.startswith("skillgrad: warning: ") for w in warnings)
    for path in damaged.values():
        assert sum(str(path) in w for w in warnings) == 1, (path, warnings)
    assert "Traceback" not in proc.stderr
    html = (run / "report.html").read_text(encoding="utf-8")
    assert 'data-chart="scores"' in html and "q03" in html and "Canberra" in html  # the rest renders
    assert html.count('<ul class="warnings">') == 1 and str(damaged["trace"]) in html
    history = [
        json.loads(line) for line in (run / "history.jsonl").read_text().splitlines() if line[0] == "{"
    ]
    assert html.count('class="pt pt-accepted"') == sum(h.get("action") == "accepted" for h in history) + 1


@pytest.mark.slow
def test_a_real_run_with_a_10_mb_reply_and_trace_renders_in_chromium(tmp_path: Path) -> None:
    from tests.fakes.anthropic_server import text
    from tests.test_hostile_agent import eval_one_task

    reply = "word " * (MB10 // 5)
    out = tmp_path / "eval"
    proc = eval_one_task(tmp_path, lambda req: text(reply), "Say a lot.", "word", "Answer.\n", out)
    assert proc.returncode == 0, proc.stderr[-3000:]
    task = out / "rollouts" / "val" / "q1"
    assert (task / "answer.txt").stat().st_size >= MB10 - 1 and (task / "trace.json").stat().st_size > MB10
    assert (task / "score.json").stat().st_size > MB10  # the old reader cut each of these at 4 MiB

    report = _report(str(out))
    assert report.returncode == 0 and report.stderr == "", report.stderr
    page = out / "report.html"
    assert page.stat().st_size < 1_000_000
    dom = _chromium(tmp_path, page.as_uri(), "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert _console_messages(dom.stderr) == []
    assert "[10.0 MB in all]" in dom.stdout  # the answer
    assert f"[{len(reply):,} characters in all]" in dom.stdout  # the trace's reply step
    assert "answer.txt: 10.0 MB; the report shows its beginning" in dom.stdout
    shot = tmp_path / "report.png"
    done = _chromium(tmp_path, page.as_uri(), "--window-size=1400,2400", f"--screenshot={shot}")
    assert done.returncode == 0 and _console_messages(done.stderr) == []
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 30_000
