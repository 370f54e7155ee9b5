"""The strict gate's minimum gain: one outcome's worth, so an F1 wiggle is no gain (issue 26)."""

from __future__ import annotations

import random

import pytest

from skillgrad.backends.base import AgentResult
from skillgrad.benchmarks.base import Score, Task
from skillgrad.config import OptimizerConfig
from skillgrad.loop.gate import StrictGate, make_gate, outcome_worth
from skillgrad.loop.rollout import Rollout
from skillgrad.loop.strategies import Strategies
from skillgrad.loop.validate import Race, ValUnit, validate


def items(*values: float) -> dict[str, list[float]]:
    return {f"t{i}": [v] for i, v in enumerate(values)}


def test_the_issues_one_item_wiggle_is_rejected_and_a_whole_item_is_kept() -> None:
    incumbent_scores = [0.0, 1.0, 0.4, 1.0, 0.5, 0.667, 0.0, 1.0, 0.6, 1.0, 0.0, 0.966]
    incumbent = items(*incumbent_scores)
    wiggle = list(incumbent_scores)
    wiggle[0], wiggle[1] = 1.0, 0.2  # one item +1.00, another -0.80, out of 12
    decision = StrictGate().decide(items(*wiggle), incumbent)
    assert not decision.accepted and decision.effect == pytest.approx(0.2 / 12)
    assert "less than 1 outcome(s)' worth (0.0833" in decision.reason
    fixed = list(incumbent_scores)
    fixed[0] = 1.0  # one item fixed outright, nothing lost
    assert StrictGate().decide(items(*fixed), incumbent).accepted
    assert StrictGate(min_gain=0).decide(items(*wiggle), incumbent).accepted  # the old strict gate


def test_zero_one_scores_decide_as_before_with_and_without_repeats() -> None:
    rng = random.Random(3)
    for _ in range(300):
        k, n = rng.choice([1, 2, 3]), rng.randint(1, 6)
        inc = {f"t{i}": [float(rng.random() < 0.5) for _ in range(k)] for i in range(n)}
        cand = {f"t{i}": [float(rng.random() < 0.5) for _ in range(k)] for i in range(n)}
        before = StrictGate(min_gain=0).decide(cand, inc).accepted
        assert StrictGate().decide(cand, inc).accepted == before
    assert outcome_worth({"a": [1.0, 0.0, 1.0], "b": [0.0, 0.0, 0.0]}) == pytest.approx(1 / 6)


def test_headroom_needs_one_outcomes_worth() -> None:
    assert not StrictGate().can_pass({}, items(1.0, 0.95, 0.97, 1.0))  # 0.08 / 4 < 1/4 to gain
    assert StrictGate().can_pass({}, items(1.0, 0.0, 1.0, 1.0))
    assert StrictGate(min_gain=0).can_pass({}, items(1.0, 0.95, 0.97, 1.0))


def fake_runner(scores: dict[tuple[str, int], float]):
    def run_units(units: list[ValUnit]) -> list[Rollout]:
        return [
            Rollout(u.task, AgentResult(answer=""), Score(scores[(u.task.id, u.repeat)], True, ""))
            for u in units
        ]

    return run_units


def test_racing_decides_as_full_validation_on_continuous_scores() -> None:
    rng = random.Random(9)
    gate = make_gate("strict", 0.05, 1.0)
    tasks = [Task(id=f"t{i}", question="q") for i in range(8)]
    values = [0.0, 0.25, 0.5, 0.8, 1.0]
    for _ in range(80):
        inc = {t.id: [rng.choice(values)] for t in tasks}
        scores = {(t.id, 0): rng.choice(values) for t in tasks}
        full = validate(tasks, 1, {}, fake_runner(scores))
        raced = validate(tasks, 1, {}, fake_runner(scores), Race(gate, inc, 3))
        accepted = gate.decide(full.results, inc).accepted
        assert accepted == (not raced.raced_out and gate.decide(raced.results, inc).accepted)


def test_the_config_key_reaches_the_gate() -> None:
    gate = Strategies.from_config(OptimizerConfig(gate_min_gain=2.0)).gate
    assert isinstance(gate, StrictGate) and gate.min_gain == 2.0
    assert not gate.decide(items(1.0, 1.0, 0.0, 0.0), items(1.0, 0.0, 0.0, 0.0)).accepted  # 1 of 2 needed
    assert gate.decide(items(1.0, 1.0, 1.0, 0.0), items(1.0, 0.0, 0.0, 0.0)).accepted
