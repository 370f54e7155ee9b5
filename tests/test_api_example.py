"""The example of docs/api.md: it is the file examples/train_in_python.py, it gains when run on the
scripted OpenAI server, and mypy --strict accepts it and examples/custom_strategies.py against the
public API (and refuses each with a type error put in, so the check is real). Its run on the
packaged model is not repeated here: the README's command (tests/test_quickstart.py) trains the
same kind of run on it, and the README's Python snippet (tests/test_readme_python.py) runs
`skillgrad.train` on it; a third run of minutes kept the suite past 15 minutes."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
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


def mypy_config(folder: Path) -> Path:
    """The package's mypy settings (pyproject.toml) with MLflow's modules skipped: the examples are
    checked against skillgrad's API, and analysing MLflow's ~2,000 modules and what they import took
    32 of this test's 49 s (Ray's took 17 more until skillgrad imported it by name)."""
    settings = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]
    lines = ["[mypy]", *(f"{k} = {','.join(v) if isinstance(v, list) else v}" for k, v in settings.items())]
    path = folder / "mypy.ini"
    path.write_text("\n".join([*lines, "[mypy-mlflow.*]", "follow_imports = skip", ""]), encoding="utf-8")
    return path


def test_mypy_strict_accepts_the_example_against_the_public_api(tmp_path: Path) -> None:
    """Both examples and a broken copy of each, in one mypy run (checking the package's types once):
    the examples pass, and each copy fails where the API is typed (for the strategies example: a
    gate handed in as the agent, against the Agent protocol), so mypy sees the API's types."""
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
    paths = [EXAMPLE, STRATEGIES_EXAMPLE, broken, strategies]
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--config-file", str(mypy_config(tmp_path)),
         "--cache-dir", str(tmp_path / "c"), *map(str, paths)],
        capture_output=True, text=True, timeout=600, cwd=REPO,
    )  # fmt: skip
    errors = [line for line in proc.stdout.splitlines() if ": error:" in line]
    assert proc.returncode == 1 and errors, proc.stdout + proc.stderr
    # the examples as shipped have no error: every one is in a broken copy
    assert all(Path(line.split(":", 1)[0]).name in (broken.name, strategies.name) for line in errors), (
        proc.stdout
    )
    assert any(broken.name in e and 'Argument "split" to "evaluate"' in e for e in errors), proc.stdout
    assert any(strategies.name in e and 'Argument "agent" to "train"' in e for e in errors), proc.stdout
