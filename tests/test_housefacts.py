"""The generated `housefacts` benchmark: disjoint even splits, seeds, scoring and fact-first feedback."""

from __future__ import annotations

import pytest

from skillgrad.backends.interface import AgentResult
from skillgrad.benchmarks.catalog import load_benchmark
from skillgrad.benchmarks.housefacts import FACTS, HOUSE, HousefactsBenchmark
from skillgrad.config import load_config
from skillgrad.errors import UserError


def _bench(*overrides: str) -> HousefactsBenchmark:
    bench = load_benchmark(load_config(None, ["benchmark.name=housefacts", *overrides]))
    assert isinstance(bench, HousefactsBenchmark)
    return bench


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_splits_are_disjoint_balanced_and_seeded(seed: int) -> None:
    sizes = ["benchmark.train_size=30", "benchmark.val_size=30", "benchmark.test_size=30"]
    bench = _bench(f"benchmark.seed={seed}", *sizes)
    questions = {s: [t.question for t in bench.load(s)] for s in ("train", "val", "test")}
    assert all(len(q) == len(set(q)) == 30 for q in questions.values())
    assert not set(questions["train"]) & set(questions["val"])
    assert not set(questions["val"]) & set(questions["test"])
    assert not set(questions["train"]) & set(questions["test"])
    for split in ("train", "val", "test"):
        facts = [t.meta["fact"] for t in bench.load(split)]
        assert {facts.count(f) for f in FACTS} == {5}  # facts in rotation
    other = _bench(f"benchmark.seed={seed + 10}", *sizes)
    assert [t.question for t in other.load("val")] != questions["val"]
    assert [t.to_json() for t in _bench(f"benchmark.seed={seed}", *sizes).load("val")] == [
        t.to_json() for t in bench.load("val")
    ]


def test_no_task_states_its_fact() -> None:
    bench = _bench("benchmark.train_size=40", "benchmark.val_size=40", "benchmark.test_size=40")
    for split in ("train", "val", "test"):
        for task in bench.load(split):
            assert task.context is None
            assert HOUSE[task.meta["fact"]].value.casefold() not in task.question.casefold()


def test_score_and_feedback() -> None:
    bench = _bench("benchmark.val_size=6")
    task = next(t for t in bench.load("val") if t.meta["fact"] == "support")
    hit = bench.score(task, AgentResult("You can write to HELP@quokka.dev any time."))
    assert hit.passed and hit.value == 1.0
    miss = bench.score(task, AgentResult("Ask your manager."))
    assert not miss.passed and miss.value == 0.0
    assert miss.feedback.startswith(HOUSE["support"].statement)  # the fact first, as a sentence
    bare = _bench("benchmark.val_size=6", "benchmark.options={state_fact: false}")
    feedback = bare.score(task, AgentResult("Ask your manager.")).feedback
    assert HOUSE["support"].statement not in feedback and "'help@quokka.dev'" in feedback
    assert "Ask your manager." in feedback
    failed = bench.score(task, AgentResult("", is_error=True, error="timeout"))
    assert not failed.passed and "timeout" in failed.feedback


def test_options_pick_facts_and_sizes_are_checked() -> None:
    bench = _bench("benchmark.val_size=8", "benchmark.options={facts: [staging, build]}")
    assert {t.meta["fact"] for t in bench.load("val")} == {"staging", "build"}
    with pytest.raises(UserError, match="lower benchmark.val_size"):
        _bench("benchmark.val_size=500").load("val")
    with pytest.raises(UserError, match="facts"):
        _bench("benchmark.options={facts: [nope]}")
