"""The example of docs/api.md: it is the file examples/train_in_python.py, it gains when run (on the
scripted OpenAI server, and as shipped on the packaged model), and mypy --strict accepts it and
examples/custom_strategies.py against the public API (and refuses each with a type error put in,
so the check is real)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.api_world import EXAMPLE, REPO, FactsWorld, example_namespace, scripted_config
from tests.fakes.openai_server import ScriptedOpenAI

STRATEGIES_EXAMPLE = REPO / "examples" / "custom_strategies.py"  # docs/api.md, "Strategies as objects"


def docs_example() -> str:
    docs = (REPO / "docs" / "api.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", docs, flags=re.S)
    return next(b for b in blocks if "skillgrad.train(" in b and "def score" in b)


def test_docs_api_shows_the_example_file_verbatim() -> None:
    assert docs_example() == EXAMPLE.read_text(encoding="utf-8")
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "docs/api.md" in readme and "docs/architecture.md" in readme


def test_docs_api_lists_every_public_name_and_each_resolves() -> None:
    import skillgrad

    docs = (REPO / "docs" / "api.md").read_text(encoding="utf-8")
    public = [name for name in skillgrad.__all__ if name != "__version__"]
    assert not [name for name in public if not re.search(rf"`{name}[`(]", docs)]
    assert all(getattr(skillgrad, name) is not None for name in public)


def test_the_example_gains_on_the_scripted_server(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    example = example_namespace()  # its scorer is defined here, in this test, importable from nowhere
    world = FactsWorld(example["FACTS"])
    with ScriptedOpenAI(world) as server:
        config = scripted_config(example["CONFIG"], server.base_url, tmp_path / "cache")
        evaluation = example["main"](config, str(tmp_path / "run"))
    printed = capsys.readouterr().out

    run = tmp_path / "run"
    summary = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    assert summary["best_val_score"] > summary["baseline_val_score"] == 0.0
    assert summary["test"]["best"] > summary["test"]["baseline"] == 0.0
    # evaluate() scored the best skill on the test split: the same score the run's final test gave
    assert evaluation.split == "test" and evaluation.n == 16
    assert evaluation.mean_score == summary["test"]["best"]
    assert [t.task_id for t in evaluation.tasks] == json.loads(
        (evaluation.run_dir / "rollouts" / "test.tasks.json").read_text(encoding="utf-8")
    )
    # the scorer's own words reached the analyst (a miss's feedback states the fact)
    prompts = [json.loads(p.read_text(encoding="utf-8")) for p in run.glob("steps/*/reflections/mb_*.json")]
    assert any("The answer must contain 'help@quokka.dev'" in json.dumps(p) for p in prompts)
    assert "Our support email address is help@quokka.dev." in (run / "best_skill.md").read_text("utf-8")
    # train() and evaluate() printed the CLI's progress by default (a line per stage, the test
    # passes named by version, no line per task), then the example its own lines
    assert re.search(r"^\[\s+\d+\.\ds\] run start: 1 epochs", printed, flags=re.M)
    assert re.search(r"^\[\s+\d+\.\ds\] test v0000 \(initial\): done, 16/16 tasks in ", printed, flags=re.M)
    assert re.search(r"^\[\s+\d+\.\ds\] eval: done, 16/16 tasks in ", printed, flags=re.M)
    assert " task " not in printed and f"test: {evaluation.mean_score:.3f} over 16 tasks" in printed


def test_mypy_strict_accepts_the_example_against_the_public_api(tmp_path: Path) -> None:
    # One cache folder for both runs, new to this test: the second run re-reads the package's types
    # from the first instead of checking the package again.
    def mypy(*paths: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / "c"), *map(str, paths)],
            capture_output=True, text=True, timeout=600, cwd=REPO,
        )  # fmt: skip

    proc = mypy(EXAMPLE, STRATEGIES_EXAMPLE)  # the strategies example too: one run for both
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # Each example with a wrong type where the API is typed: mypy must see the API's types (for
    # the strategies example: a gate handed in as the agent, against the Agent protocol).
    broken = tmp_path / "broken" / "broken_example.py"
    broken.parent.mkdir()
    source = EXAMPLE.read_text(encoding="utf-8")
    assert 'split="test",' in source
    broken.write_text(source.replace('split="test",', 'split="tests",'), encoding="utf-8")
    strategies = tmp_path / "broken" / "broken_strategies.py"
    source = STRATEGIES_EXAMPLE.read_text(encoding="utf-8")
    assert "agent=RuleFollower()," in source
    strategies.write_text(
        source.replace("agent=RuleFollower(),", "agent=NoRegressionGate(),"), encoding="utf-8"
    )
    proc = mypy(broken, strategies)
    assert proc.returncode == 1 and 'Argument "split" to "evaluate"' in proc.stdout, proc.stdout
    assert "broken_strategies.py:" in proc.stdout and 'Argument "agent" to "train"' in proc.stdout, (
        proc.stdout
    )


@pytest.mark.slow
@pytest.mark.timeout(900, method="thread")
def test_the_example_on_the_packaged_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The example as shipped (both roles the packaged SmolLM2-135M, 12/12/16 items, one call and one
    stage at a time), the call cache off so that the model really runs: it learns a fact into the
    skill and gains on val (0 -> 0.25 as measured), and its test pass is never below the initial
    skill's. One worker and no overlap keep the order of the calls, which the 135M's answers depend
    on (llama.cpp reuses the previous prompt's cached prefix): with overlap the baseline interleaved
    with step 1 by timing, and two runs made different skills (test 0 -> 0.19 and 0 -> 0). The test
    runs the example as it is, the run a reader gets."""
    from skillgrad.backends.local_models import pull_default_model

    pull_default_model()  # once per machine (~98 MB from the package registry), then cached
    example = example_namespace()
    config = example["CONFIG"]
    assert config["train"]["concurrency"] == 1 and config["train"]["overlap"] is False  # repeatable
    config["cache"] = {"enabled": False}
    evaluation = example["main"](config, str(tmp_path / "run"))
    summary = json.loads((tmp_path / "run" / "summary.json").read_text(encoding="utf-8"))
    assert summary["best_val_score"] > summary["baseline_val_score"] == 0.0, summary
    assert summary["test"]["best"] >= summary["test"]["baseline"] == 0.0, summary
    assert evaluation.mean_score == summary["test"]["best"] and evaluation.n == 16
    skill = (tmp_path / "run" / "best_skill.md").read_text(encoding="utf-8")
    assert any(value in skill for value, _, _ in example["FACTS"].values()), skill  # a fact, learned
    assert "test: " in capsys.readouterr().out
    shutil.rmtree(tmp_path / "run", ignore_errors=True)
