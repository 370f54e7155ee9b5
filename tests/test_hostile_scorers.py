"""Issue 40, item 1: a scorer cannot fake a pass. A Python scorer given to `skillgrad.train` that
returns a value outside [0, 1] (inf, 2.0, 5), NaN, a `passed` that is no bool or passes a value of
0, or something that is no score at all, and a benchmark object whose `score` does the same, fail
that task with the reason in score.json (`scorer_error`) and in the report: no task passes, the
run never stops as `no_failures` or `no_headroom` on them, and it says so in one line at the end."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import skillgrad
from skillgrad import AgentResult, Score, Task
from tests.api_world import FactsWorld, example_namespace, scripted_config
from tests.fakes.openai_server import ScriptedOpenAI

SIZES = {"train_size": 4, "val_size": 4, "test_size": 0, "seed": 0}


@pytest.fixture(scope="module")
def world() -> Iterator[tuple[dict[str, Any], ScriptedOpenAI]]:
    example = example_namespace()
    with ScriptedOpenAI(FactsWorld(example["FACTS"])) as server:
        yield example, server


def run_with(
    tmp_path: Path, world: tuple[dict[str, Any], ScriptedOpenAI], **inputs: Any
) -> tuple[skillgrad.TrainResult, list[skillgrad.Event]]:
    example, server = world
    config = scripted_config(example["CONFIG"], server.base_url, tmp_path / "cache")
    config["benchmark"] = {**config["benchmark"], **SIZES}
    config["train"] = {**config["train"], "batch_size": 4, "minibatch_size": 2}
    events: list[skillgrad.Event] = []
    inputs.setdefault("benchmark", example["house_tasks"]())
    result = skillgrad.train(config, out=tmp_path / "run", observers=[events.append], **inputs)
    return result, events


def scores(out: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted(out.rglob("score.json"))]


def assert_no_fake_pass(result: skillgrad.TrainResult, events: list[skillgrad.Event], why: str) -> None:
    written = scores(result.run_dir)
    assert written and all(s["passed"] is False and s["value"] == 0.0 for s in written)
    assert all(why in s["scorer_error"] and why in s["feedback"] for s in written)
    assert result.baseline_val == result.best_val == 0.0
    assert result.stopped not in ("no_failures", "no_headroom")
    summary = json.loads((result.run_dir / "summary.json").read_text(encoding="utf-8"))
    assert summary["scorer_errors"] == len(written)
    lines = [e.fields["text"] for e in events if e.kind == "message" and "scorer" in e.fields["text"]]
    assert len(lines) == 1 and str(len(written)) in lines[0] and why in lines[0]
    kinds = [e.kind for e in events]
    assert kinds.index("message", len(kinds) - 3) == len(kinds) - 2  # the line before run_end


RETURNS: dict[str, tuple[Callable[[], object], str]] = {
    "inf": (lambda: math.inf, "outside [0, 1]"),
    "2.0": (lambda: 2.0, "outside [0, 1]"),
    "5": (lambda: 5, "outside [0, 1]"),
    "-0.5": (lambda: -0.5, "outside [0, 1]"),
    "nan": (lambda: math.nan, "outside [0, 1]"),
    "Score(nan, passed=True)": (lambda: Score(math.nan, True, "great"), "outside [0, 1]"),
    "Score(0.5, passed='no')": (lambda: Score(0.5, "no", "hm"), "not a bool"),  # type: ignore[arg-type]
    "Score(0.0, passed=True)": (lambda: Score(0.0, True, "??"), "passed=True with the value 0"),
    "'yes'": (lambda: "yes", "expected Score, float or bool"),
    "None": (lambda: None, "expected Score, float or bool"),
}


@pytest.mark.parametrize("returned", list(RETURNS))
def test_a_scorer_function_outside_its_contract_fails_its_tasks(
    tmp_path: Path, world: Any, returned: str
) -> None:
    make, why = RETURNS[returned]

    def scorer(answer: str, task: Task) -> Any:  # defined here, in the test
        return make()

    result, events = run_with(tmp_path, world, scorer=scorer)
    assert_no_fake_pass(result, events, why)


BENCHMARK_RETURNS: dict[str, tuple[Callable[[], object], str]] = {
    "Score(inf, passed=True)": (lambda: Score(math.inf, True, "perfect"), "outside [0, 1]"),
    "Score(nan, passed=True)": RETURNS["Score(nan, passed=True)"],
    "Score(0.5, passed='no')": RETURNS["Score(0.5, passed='no')"],
    "Score(1.0, passed=1)": (lambda: Score(1.0, 1, "one"), "not a bool"),  # type: ignore[arg-type]
    "None": (lambda: None, "not a Score"),
    "0.9": (lambda: 0.9, "not a Score"),
}


class LyingBenchmark:
    """A benchmark object whose `score` returns what `make` builds, whatever the answer."""

    name = "lying"

    def __init__(self, tasks: list[Task], make: Callable[[], object]) -> None:
        self.tasks, self.make = sorted(tasks, key=lambda t: t.id), make

    def load(self, split: str) -> list[Task]:
        start = {"train": 0, "val": 1, "test": 2}[split]
        return self.tasks[start::5][:4]

    def score(self, task: Task, result: AgentResult) -> Any:
        return self.make()


@pytest.mark.parametrize("returned", list(BENCHMARK_RETURNS))
def test_a_benchmark_score_outside_the_contract_fails_its_tasks(
    tmp_path: Path, world: Any, returned: str
) -> None:
    example, _ = world
    make, why = BENCHMARK_RETURNS[returned]
    result, events = run_with(tmp_path, world, benchmark=LyingBenchmark(example["house_tasks"](), make))
    assert_no_fake_pass(result, events, why)
