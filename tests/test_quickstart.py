"""The README's first command, end to end on the packaged model: it learns, says so, and can run twice.

Runs `skillgrad train --config configs/quickstart.yaml --out runs/quickstart` as the README writes
it (in a scratch folder holding the repository's configs/), with the default call cache of a fresh
home folder: the model really runs (a cache another run filled would replay its calls), while the
model file itself, fetched once per machine by `skillgrad models pull` under a timeout, is shared.
The gain asserted is the one docs/benchmarks.md reports for the default seed
(`python bench/quickstart.py`); the run's `--estimate` must be within 1.5x of what it really made.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from skillgrad.backends.local_models import default_model_path
from skillgrad.benchmarks.housefacts import HOUSE
from skillgrad.demos import parse_demos, without_section

REPO = Path(__file__).resolve().parents[1]
README_COMMAND = "skillgrad train --config configs/quickstart.yaml --out runs/quickstart"
MIN_GAIN = 0.15  # val and test, seed 0 (docs/benchmarks.md, "Quickstart on the embedded local model")

# The model runs in native code: a thread-method timeout still dumps the stacks and ends the run.
pytestmark = pytest.mark.timeout(900, method="thread")


def _skillgrad(
    cwd: Path, *args: str, home: Path | None = None, timeout: float = 700
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), **({"HOME": str(home)} if home else {})}
    return subprocess.run(
        [sys.executable, "-m", "skillgrad.cli", *args], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=timeout,
    )  # fmt: skip


def _fresh_home(tmp_path: Path) -> Path:
    """A home folder with no call cache, sharing this machine's model files (pulled once, under a
    timeout: a registry that never answers fails the test instead of hanging it)."""
    pulled = _skillgrad(tmp_path, "models", "pull", timeout=600)  # ~98 MB the first time, then cached
    assert pulled.returncode == 0, pulled.stderr[-3000:]
    model = Path(pulled.stdout.strip().splitlines()[-1])
    assert model.is_file() and model.parent == default_model_path().parent
    home = tmp_path / "home"
    (home / ".cache" / "skillgrad").mkdir(parents=True)
    (home / ".cache" / "skillgrad" / "models").symlink_to(model.parent, target_is_directory=True)
    return home


def _assert_progress(stdout: str, summary: dict[str, Any]) -> None:
    """The progress off a terminal: a line where each stage starts and one where it ends (the
    reflect stages' too, with their analyst calls), no line per task unless a stage was quiet for
    30 s, a step's line saying what it decided, the two test passes named by version."""
    progress = [line.split("] ", 1)[1] for line in stdout.splitlines() if line.startswith("[")]
    starts = [line for line in progress if ": started, " in line]
    ends = [line for line in progress if re.search(r": done, \d+/\d+ (tasks|analyst calls) in ", line)]
    # the baseline, each step's rollout and reflect (and validate but for a skipped step), 2 tests
    assert len(starts) == len(ends) >= 1 + 2 * summary["steps"] + 2, progress
    assert (
        sum(1 for line in ends if re.match(r"step \d reflect( \(re-ask\))?: done", line)) >= summary["steps"]
    )
    steps = [
        line
        for line in progress
        if re.match(r"step \d \(epoch 1\) (ACCEPTED v\d{4}|REJECTED|SKIPPED): ", line)
    ]
    assert len(steps) == summary["steps"] and not [line for line in steps if "val - vs" in line]
    best = summary["best_version"]
    assert re.search(r"^test v0000 \(initial\): done, 16/16 tasks in ", "\n".join(progress), re.M)
    assert re.search(rf"^test {best} \(best\): done, 16/16 tasks in ", "\n".join(progress), re.M)
    # a task's own line only for a slow stage, with its count so far and the time left, at most one
    # per 30 s for each stage running (two run side by side), not one per task (main printed 131)
    tasks = [line for line in progress if re.search(r": \d+/\d+ ", line) and line not in ends]
    assert all(re.search(r"; [\dms.]+, about [\dhms.]+ left$", line) for line in tasks), tasks
    assert len(tasks) <= 2 * summary["wall_s"] / 30 + 2, tasks


def test_the_readme_first_command_learns_on_the_packaged_model(tmp_path: Path) -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert README_COMMAND in readme.split("```")[1]
    home = _fresh_home(tmp_path)
    shutil.copytree(REPO / "configs", tmp_path / "configs")
    args = README_COMMAND.split()[1:]

    proc = _skillgrad(tmp_path, *args, home=home)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = tmp_path / "runs" / "quickstart"
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["optimizer_backend"] == "local" == summary["target_backend"]
    test = summary["test"]
    assert summary["best_val_score"] - summary["baseline_val_score"] >= MIN_GAIN - 1e-9, summary
    assert test["best"] - test["baseline"] >= MIN_GAIN - 1e-9, summary
    lines = proc.stdout.strip().splitlines()
    assert lines[-3].startswith(f"{summary['accepted']} step(s) changed the skill") and "135M" in lines[-3]
    assert re.match(r"val 0\.\d{3} -> 0\.\d{3} \(\d+ accepted, \d+ rejected, \d+ skipped, test ", lines[-2])
    assert (
        lines[-1]
        == f"what changed, step by step and task by task: skillgrad report {Path('runs/quickstart')}"
    )
    _assert_progress(proc.stdout, summary)

    # the trained skill carries house facts; its rules no task's question, its worked examples
    # (skillgrad's own, from train tasks) none but train's
    skill = (out / "best_skill.md").read_text(encoding="utf-8")
    assert any(fact.value.split(".")[0] in skill for fact in HOUSE.values()), skill
    rolled = list(out.glob("steps/*/rollouts/*/*/task.json"))  # train tasks, one folder each
    questions = [json.loads(p.read_text())["question"] for p in rolled]
    assert questions and not any(q in without_section(skill) for q in questions)
    train_ids = {p.parent.name for p in rolled}
    assert {demo.task_id for demo in parse_demos(skill)} <= train_ids

    estimate = _skillgrad(tmp_path, *args, "--estimate", "--json", home=home)
    assert estimate.returncode == 0, estimate.stderr
    projected = json.loads(estimate.stdout)["total"]
    paid, saved = summary["usage"]["total"], summary["usage"]["saved"]  # saved: a call this run repeated
    assert paid["calls"] > saved["calls"]  # the model ran (a cache another run filled would answer all)
    calls = paid["calls"] + saved["calls"]
    tokens = sum(u["input_tokens"] + u["output_tokens"] for u in (paid, saved))
    assert 1 / 1.5 <= projected["calls"] / calls <= 1.5, (projected, paid, saved)
    assert 1 / 1.5 <= projected["total_tokens"] / tokens <= 1.5, (projected, paid, saved)

    again = _skillgrad(tmp_path, *args, home=home)  # the same command twice: a fresh numbered folder
    assert again.returncode == 0, again.stderr[-3000:]
    assert "runs/quickstart holds an earlier run" in again.stdout
    assert (tmp_path / "runs" / "quickstart-2" / "summary.json").is_file()
    assert json.loads((out / "summary.json").read_text(encoding="utf-8")) == summary
