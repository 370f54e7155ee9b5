"""The HTML report: sections, escaping, tolerance of missing files, compare page, real browser."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from skillgrad.errors import UserError
from skillgrad.report import write_report
from skillgrad.report.data import load_run
from skillgrad.report.diff import diff_lines
from tests.needs import need
from tests.report_fixture import HOSTILE, make_run


def _html(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def test_report_has_curves_diffs_tasks_traces_and_usage(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    out = write_report([run])
    assert out == run / "report.html"
    html = _html(out)
    history = [json.loads(line) for line in (run / "history.jsonl").read_text().splitlines()]
    accepted = [h for h in history if h["action"] == "accepted"]
    rejected = [h for h in history if h["action"] == "rejected"]
    # the score chart: one marker per step plus the baseline, and a best-so-far curve
    assert 'data-chart="scores"' in html and '<path class="best"' in html
    assert html.count('class="pt pt-accepted"') == len(accepted) + 1  # + legend
    assert html.count('class="pt pt-rejected"') == len(rejected) + 1
    assert 'data-chart="bars"' in html and "test · best" in html
    # a diff for initial -> best and for every accepted step
    assert "initial → best (v0002)" in html
    for h in accepted:
        assert f"step {h['step']}: " in html and f"→ {h['version']}" in html
    assert 'class="d-add"' in html and 'class="d-del"' in html
    # tasks: ids, expected answers, feedback, a trace with the failing tool call highlighted
    assert "q03" in html and "Canberra" in html and "exact match" in html
    assert "st-err" in html and "No such file or directory" in html and "<b>Bash</b>" in html
    assert "tool error" in html
    # usage by role and stage
    assert "optimizer" in html and "reflect" in html and "validate" in html and "$" in html


def test_hostile_content_is_escaped(tmp_path: Path) -> None:
    html = _html(write_report([make_run(tmp_path, hostile=True)]))
    assert HOSTILE not in html
    assert "&lt;script&gt;alert(" in html
    assert html.count("<script") == 1  # only the report's own script block
    assert "<img" not in html and "onerror=alert(1)>" not in html


def test_missing_optional_files_are_tolerated(tmp_path: Path) -> None:
    run = make_run(tmp_path, agent=False, with_test=False)
    for name in ("summary.json", "best_skill.md", "config.json", "train.log"):
        (run / name).unlink()
    for gate in run.glob("steps/*/gate.json"):
        gate.unlink()
    with (run / "history.jsonl").open("a") as f:
        f.write('{"step": 7, "act')  # a torn last line: the run is still writing
    html = _html(write_report([run]))
    assert 'data-chart="scores"' in html
    assert '<details class="trace-box"' not in html  # a chat target has no traces
    assert "in progress" in html


def test_eval_folder_renders(tmp_path: Path) -> None:
    run = make_run(tmp_path, with_test=False)
    folder = tmp_path / "eval"
    shutil.copytree(run / "steps/0000/rollouts/val", folder / "rollouts/test")
    (folder / "eval.json").write_text(
        json.dumps(
            {"skill": "best_skill.md", "split": "test", "mean_score": 0.5, "n": 6, "passed": 3, "usage": {}}
        )
    )
    html = _html(write_report([folder]))
    assert "eval · test" in html and "3/6 passed" in html


def test_bad_run_dirs_raise_one_line_user_errors(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no such run folder"):
        write_report([tmp_path / "missing"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match="not a skillgrad run folder"):
        write_report([tmp_path / "empty"])
    run = make_run(tmp_path)
    with pytest.raises(UserError, match="one run folder or two"):
        write_report([run, run, run])


def test_compare_page(tmp_path: Path) -> None:
    a = make_run(tmp_path, "run_a")
    b = make_run(tmp_path, "run_b", seed=3, agent=False)
    out = write_report([a, b])
    assert out == a / "compare.html"
    html = _html(out)
    assert "run_a" in html and "run_b" in html
    assert 'class="series series-a"' in html and 'class="series series-b"' in html
    assert "best skill: run_a → run_b" in html and "Tasks on test" in html
    custom = write_report([a, b], tmp_path / "out" / "cmp.html")
    assert custom.is_file()


def test_load_run_and_diff_lines(tmp_path: Path) -> None:
    run = load_run(make_run(tmp_path))
    assert sorted(run.skills) == ["v0000", "v0001", "v0002"]
    assert run.set_for("val", step=0) is not None and run.set_for("test", version="v0002") is not None
    rows = diff_lines("a\nb\nc\n", "a\nB\nc\nd\n")
    assert [(r.kind, r.text) for r in rows] == [
        ("ctx", "a"),
        ("del", "b"),
        ("add", "B"),
        ("ctx", "c"),
        ("add", "d"),
    ]


# ---------------------------------------------------------------------------------------------
# a real browser: renders, no console errors, screenshot

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _chromium(tmp_path: Path, url: str, *extra: str) -> subprocess.CompletedProcess[str]:
    need(CHROMIUM, "chromium not installed (Debian: apt-get install -y chromium)")
    assert CHROMIUM is not None
    args = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--hide-scrollbars",
        f"--user-data-dir={tmp_path / 'chromium-profile'}",
        "--enable-logging=stderr",
        "--v=0",
        *extra,
        url,
    ]
    return subprocess.run(args, capture_output=True, text=True, timeout=120, check=False)


def _console_messages(stderr: str) -> list[str]:
    # with --enable-logging=stderr Chromium echoes every page console message as "...:CONSOLE..."
    return [line for line in stderr.splitlines() if ":CONSOLE" in line or "Uncaught" in line]


def test_console_check_catches_page_errors(tmp_path: Path) -> None:
    """Guards the check below: a page that throws must be seen as throwing."""
    page = tmp_path / "broken.html"
    page.write_text("<html><body><script>notDefined();</script></body></html>")
    proc = _chromium(tmp_path, page.as_uri(), "--dump-dom")
    assert any("Uncaught" in m for m in _console_messages(proc.stderr))


@pytest.mark.parametrize("compare", [False, True])
def test_report_in_headless_chromium(tmp_path: Path, compare: bool) -> None:
    a = make_run(tmp_path, "run_a", hostile=True)
    runs = [a, make_run(tmp_path, "run_b", seed=3)] if compare else [a]
    report = write_report(runs)
    proc = _chromium(tmp_path, report.as_uri(), "--dump-dom")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert _console_messages(proc.stderr) == []
    dom = proc.stdout
    assert "<svg" in dom and 'data-chart="scores"' in dom and "best so far" in dom
    assert 'class="d-add"' in dom and 'class="d-del"' in dom
    assert "<img" not in dom and dom.count("<script") == 1  # no hostile markup became elements
    shot = tmp_path / "report.png"
    proc = _chromium(tmp_path, report.as_uri(), "--window-size=1400,2400", f"--screenshot={shot}")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert _console_messages(proc.stderr) == []
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 30_000  # a blank page compresses far below this


def test_usage_reads_ledger_and_usage_shapes(tmp_path: Path) -> None:
    from skillgrad.report import usage

    partial = usage.merge(
        usage.to_bucket({"input_tokens": 10, "output_tokens": 5, "calls": 1, "cost_usd": 0.5}),
        usage.to_bucket({"input_tokens": 1, "output_tokens": 1, "calls": 2, "cost_usd": None}),
    )
    assert (partial.total_tokens, partial.calls) == (17, 3)
    assert usage.fmt_cost(partial) == "≥ $0.5000 (2 calls unpriced)"
    assert usage.fmt_cost(usage.to_bucket({"known_usd": 0.0, "unknown_cost_calls": 4})) == "unknown"
    run = load_run(make_run(tmp_path))
    assert [role for role, _ in usage.by_role(run)] == ["optimizer", "target"]
    assert ("optimizer", "reflect") in [(r, s) for r, s, _ in usage.by_stage(run)]
