"""Split sizes adapt to the data (issue 41): with no size given, n items are split 50/25/25 (val at
least 4, each at most 40/20/20), the sizes chosen are said as the run's first event and recorded
in its config.json, `evaluate` cuts the same test split, and a resume keeps them. A size too large
for the data is one line naming where it was given: `--set` on the command line, the config file,
or the config passed from Python (never `--set` there)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import skillgrad
from skillgrad import Event, Task
from skillgrad.benchmarks.splits import MIN_VAL, MOST_SIZES, fraction_sizes
from skillgrad.errors import UserError
from tests.api_world import FactsWorld, example_namespace, scripted_config
from tests.fakes.openai_server import ScriptedOpenAI


@pytest.fixture
def world() -> Iterator[tuple[dict[str, Any], ScriptedOpenAI]]:
    example = example_namespace()
    with ScriptedOpenAI(FactsWorld(example["FACTS"])) as server:
        yield example, server


def unsized(example: dict[str, Any], server: ScriptedOpenAI, cache: Path) -> dict[str, Any]:
    """The example's config on the scripted server, without its benchmark section (no sizes)."""
    config = scripted_config(example["CONFIG"], server.base_url, cache)
    del config["benchmark"]
    return config


@pytest.mark.parametrize("n", [5, 6, 9, 10, 16, 30, 31, 60, 79, 80, 81, 1000])
def test_fraction_sizes_fit_the_data_with_sane_bounds(n: int) -> None:
    sizes = fraction_sizes(n, "data")
    assert sum(sizes.values()) <= n and sizes["train"] >= 1 and sizes["val"] >= MIN_VAL
    assert all(sizes[s] <= MOST_SIZES[s] for s in sizes)
    if n >= 80:  # enough for every split's most
        assert sizes == MOST_SIZES
    elif n >= 16:  # every item used, about 50/25/25
        assert sum(sizes.values()) == n and abs(sizes["val"] - n / 4) < 1 and abs(sizes["test"] - n / 4) < 1


def test_fraction_sizes_of_thirty_and_too_few() -> None:
    assert fraction_sizes(30, "data") == {"train": 15, "val": 8, "test": 7}
    assert fraction_sizes(5, "data") == {"train": 1, "val": 4, "test": 0}
    with pytest.raises(UserError, match=r"^data: 4 items are too few to split \(at least 5"):
        fraction_sizes(4, "data")


def test_thirty_tasks_without_sizes_train_and_evaluate(tmp_path: Path, world: Any) -> None:
    example, server = world
    tasks: list[Task] = example["house_tasks"]()[:30]
    config = unsized(example, server, tmp_path / "cache")
    events: list[Event] = []
    result = skillgrad.train(config, benchmark=tasks, scorer=example["score"], out=tmp_path / "run",
                             observers=[events.append])  # fmt: skip

    said = "splits: 15 train, 8 val, 7 test of the 30 tasks (no sizes given: 50/25/25"
    assert events[0].kind == "message" and events[0].fields["text"].startswith(said)
    assert said in (tmp_path / "run" / "train.log").read_text(encoding="utf-8")
    stored = json.loads((tmp_path / "run" / "config.json").read_text(encoding="utf-8"))["benchmark"]
    assert (stored["train_size"], stored["val_size"], stored["test_size"]) == (15, 8, 7)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text(encoding="utf-8"))
    assert result.best_test is not None and summary["test"]["best"] == result.best_test  # a test ran
    assert len(json.loads((tmp_path / "run" / "test" / "v0000.tasks.json").read_text())) == 7

    # evaluate() on the same tasks and config cuts the same test split (and says its sizes too)
    seen: list[Event] = []
    evaluation = skillgrad.evaluate(config, result.best_skill, benchmark=tasks, scorer=example["score"],
                                    out=tmp_path / "eval", observers=[seen.append])  # fmt: skip
    assert evaluation.n == 7 and evaluation.mean_score == result.best_test
    assert seen[0].fields["text"].startswith(said)
    # a resume given no sizes keeps the run's own: the finished run is said, nothing refused
    notes: list[Event] = []
    again = skillgrad.train(config, benchmark=tasks, scorer=example["score"], out=tmp_path / "run",
                            resume=True, observers=[notes.append])  # fmt: skip
    assert again.best_val == result.best_val
    assert "this run is finished, nothing to resume" in notes[-1].fields["text"]


def test_a_size_too_large_from_python_names_the_config_not_a_flag(tmp_path: Path, world: Any) -> None:
    example, server = world
    tasks = example["house_tasks"]()[:30]
    config = unsized(example, server, tmp_path / "cache")
    config["benchmark"] = {"train_size": 40}
    with pytest.raises(UserError) as err:
        skillgrad.train(config, benchmark=tasks, scorer=example["score"], out=tmp_path / "run")
    message = str(err.value)
    assert message == (
        "tasks: benchmark.train_size + val_size + test_size = 40 + 20 (unset) + 0 (unset) = 60 but the "
        "data has 30 items; lower them where they are given (the config), or leave all three unset "
        "to split the 30 items 50/25/25"
    )
    assert "--set" not in message and not (tmp_path / "run").exists()
    # given in a YAML file, the file is named
    yaml_path = tmp_path / "config.yaml"
    yaml_path.write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(UserError, match=rf"where they are given \({yaml_path}\)"):
        skillgrad.train(yaml_path, benchmark=tasks, scorer=example["score"], out=tmp_path / "run")


def test_a_size_too_large_on_the_command_line_names_the_set(tmp_path: Path) -> None:
    data = tmp_path / "tasks.jsonl"
    rows = [{"id": f"q{i}", "question": f"What is {i} + 1?", "answers": [str(i + 1)]} for i in range(30)]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "skillgrad.cli", "train", "--benchmark", "custom", "--data", str(data),
         "--set", "benchmark.scorer=exact", "--set", "benchmark.val_size=26", "--out", str(tmp_path / "run")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "= 40 (unset) + 26 + 0 (unset) = 66 but the data has 30 items" in proc.stderr
    assert "where they are given (--set benchmark.val_size=26)" in proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "run").exists()
