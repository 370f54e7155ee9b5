"""The generated `housestyle` benchmark: determinism, disjoint splits, scoring and feedback."""

from __future__ import annotations

import pytest

from skillgrad.backends.interface import AgentResult
from skillgrad.benchmarks.catalog import load_benchmark
from skillgrad.benchmarks.housestyle import FAMILIES, RULES, HousestyleBenchmark, create, generate
from skillgrad.config import load_config
from skillgrad.errors import UserError


def _bench(*overrides: str) -> HousestyleBenchmark:
    cfg = load_config(None, ["benchmark.name=housestyle", *overrides])
    bench = load_benchmark(cfg)
    assert isinstance(bench, HousestyleBenchmark)
    return bench


def test_sizes_come_from_the_config() -> None:
    bench = _bench("benchmark.train_size=13", "benchmark.val_size=7", "benchmark.test_size=5")
    assert [len(bench.load(s)) for s in ("train", "val", "test")] == [13, 7, 5]


def test_deterministic_from_the_seed() -> None:
    a = _bench("benchmark.seed=3", "benchmark.test_size=10")
    b = _bench("benchmark.seed=3", "benchmark.test_size=10")
    c = _bench("benchmark.seed=4", "benchmark.test_size=10")
    for split in ("train", "val", "test"):
        assert [t.to_json() for t in a.load(split)] == [t.to_json() for t in b.load(split)]
    assert [t.question + str(t.context) for t in a.load("val")] != [
        t.question + str(t.context) for t in c.load("val")
    ]


def test_a_split_does_not_depend_on_the_other_sizes() -> None:
    small = _bench("benchmark.train_size=4", "benchmark.test_size=10")
    large = _bench("benchmark.train_size=60", "benchmark.test_size=10")
    assert [t.to_json() for t in small.load("test")] == [t.to_json() for t in large.load("test")]


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_splits_are_disjoint(seed: int) -> None:
    bench = _bench(f"benchmark.seed={seed}", "benchmark.train_size=120", "benchmark.val_size=60",
                   "benchmark.test_size=60")  # fmt: skip
    keys = {s: {(t.context, t.question) for t in bench.load(s)} for s in ("train", "val", "test")}
    assert not keys["train"] & keys["val"]
    assert not keys["train"] & keys["test"]
    assert not keys["val"] & keys["test"]
    ids = [t.id for s in ("train", "val", "test") for t in bench.load(s)]
    assert len(ids) == len(set(ids))


def test_every_family_appears_and_answers_follow_its_rule() -> None:
    tasks = _bench("benchmark.train_size=30").load("train")
    assert {t.meta["family"] for t in tasks} == set(FAMILIES)
    for task in tasks:
        assert task.context and task.question and len(task.answers) == 1
        assert task.meta["rule"] == RULES[task.meta["family"]][0]
    by_family = {t.meta["family"]: t for t in tasks}
    assert by_family["yesno"].answers[0] in ("YES", "NO")
    assert by_family["order"].answers[0].startswith("ORD-")
    assert by_family["length"].answers[0].endswith(" cm")
    assert by_family["money"].answers[0].startswith("USD ")


def test_known_items_render_as_the_house_style() -> None:
    items = generate("train", 60, 0)
    date = next(i for i in items if i.family == "date")
    assert date.answer.count("-") == 2 and len(date.answer) == 10
    name = next(i for i in items if i.family == "name")
    surname, first = name.answer.split(", ")
    assert surname.isupper() and f"{first} {surname.title()}" in name.context


def test_exact_match_after_trimming_and_feedback() -> None:
    bench = _bench()
    task = next(t for t in bench.load("val") if t.meta["family"] == "date")
    expected = task.answers[0]
    good = bench.score(task, AgentResult(answer=f"  {expected}\n"))
    assert good.value == 1.0 and good.passed
    bad = bench.score(task, AgentResult(answer=f"The date is {expected}."))
    assert bad.value == 0.0 and not bad.passed
    assert "[date style]" in bad.feedback and repr(expected) in bad.feedback
    assert "The date is" in bad.feedback and "YYYY-MM-DD" in bad.feedback


def test_feedback_can_hide_the_rule_and_contains_mode() -> None:
    bench = _bench("benchmark.options={state_rule: false, match: contains}")
    task = bench.load("val")[0]
    expected = task.answers[0]
    assert bench.score(task, AgentResult(answer=f"It is {expected}.")).passed
    bad = bench.score(task, AgentResult(answer="no idea"))
    assert "House rule" not in bad.feedback and repr(expected) in bad.feedback


def test_agent_failure_scores_zero_without_raising() -> None:
    bench = _bench()
    task = bench.load("val")[0]
    score = bench.score(task, AgentResult(answer="", is_error=True, error="timeout"))
    assert score.value == 0.0 and "timeout" in score.feedback


def test_family_filter_and_bad_options() -> None:
    bench = _bench("benchmark.options={families: [yesno, order]}", "benchmark.val_size=6")
    assert {t.meta["family"] for t in bench.load("val")} == {"yesno", "order"}
    with pytest.raises(UserError, match="benchmark.options"):
        _bench("benchmark.options={colour: red}")
    with pytest.raises(UserError, match="benchmark.options"):
        _bench("benchmark.options={families: [poetry]}")


def test_impossible_size_is_a_user_error() -> None:
    with pytest.raises(UserError, match="val_size"):
        create(load_config(None, ["benchmark.name=housestyle", "benchmark.val_size=2000",
                                  "benchmark.options={families: [yesno]}"])).load("val")  # fmt: skip
