"""The strict gate's minimum gain: one val item's worth (its mean 0 -> 1), so an F1 wiggle is no
gain (issue 26), whatever `optimizer.val_repeats` is (issue 37)."""

from __future__ import annotations

import random

import pytest

from skillgrad.backends.interface import AgentResult
from skillgrad.benchmarks.contract import Score, Task
from skillgrad.config import OptimizerConfig
from skillgrad.loop.decision.gate import StrictGate, make_gate
from skillgrad.loop.decision.racing import Race, ValUnit, validate
from skillgrad.loop.rollout import Rollout
from skillgrad.loop.strategies import Strategies


def items(*values: float) -> dict[str, list[float]]:
    return {f"t{i}": [v] for i, v in enumerate(values)}


def test_the_issues_one_item_wiggle_is_rejected_and_a_whole_item_is_kept() -> None:
    incumbent_scores = [0.0, 1.0, 0.4, 1.0, 0.5, 0.667, 0.0, 1.0, 0.6, 1.0, 0.0, 0.966]
    incumbent = items(*incumbent_scores)
    wiggle = list(incumbent_scores)
    wiggle[0], wiggle[1] = 1.0, 0.2  # one item +1.00, another -0.80, out of 12
    decision = StrictGate().decide(items(*wiggle), incumbent)
    assert not decision.accepted and decision.effect == pytest.approx(0.2 / 12)
    assert "less than 1 val item(s) fixed outright (0.0833 of 12 items)" in decision.reason
    fixed = list(incumbent_scores)
    fixed[0] = 1.0  # one item fixed outright, nothing lost
    assert StrictGate().decide(items(*fixed), incumbent).accepted
    assert StrictGate(min_gain=0).decide(items(*wiggle), incumbent).accepted  # the old strict gate


def test_zero_one_scores_at_one_repeat_decide_as_before() -> None:
    rng = random.Random(3)
    for _ in range(300):
        n = rng.randint(1, 6)
        inc = {f"t{i}": [float(rng.random() < 0.5)] for i in range(n)}
        cand = {f"t{i}": [float(rng.random() < 0.5)] for i in range(n)}
        assert StrictGate().decide(cand, inc).accepted == StrictGate(min_gain=0).decide(cand, inc).accepted


@pytest.mark.parametrize("k", [1, 2, 3, 8])
def test_the_gain_needed_is_one_items_mean_whatever_the_repeats(k: int) -> None:
    # the issue's case: one item of 12 gains +0.35 F1 on every repeat; accepted at 3 repeats before
    incumbent = {f"t{i}": [0.5] * k for i in range(12)}
    wiggle = {**incumbent, "t0": [0.85] * k}
    decision = StrictGate().decide(wiggle, incumbent)
    assert not decision.accepted and decision.effect == pytest.approx(0.35 / 12)
    assert "less than 1 val item(s) fixed outright (0.0833 of 12 items)" in decision.reason
    fixed = {**incumbent, "t0": [1.0] * k, "t1": [1.0] * k}  # +0.5 twice: one item's worth
    assert StrictGate().decide(fixed, incumbent).accepted
    # 0/1 scores: one more right run of k is 1/k of an item; a whole item is needed
    zeros = {f"t{i}": [0.0] * k for i in range(4)}
    one_run = {**zeros, "t0": [1.0] + [0.0] * (k - 1)}
    assert StrictGate().decide(one_run, zeros).accepted == (k == 1)
    assert StrictGate(min_gain=1 / k).decide(one_run, zeros).accepted


def test_headroom_needs_one_items_worth() -> None:
    assert not StrictGate().can_pass({}, items(1.0, 0.95, 0.97, 1.0))  # 0.08 / 4 < 1/4 to gain
    assert StrictGate().can_pass({}, items(1.0, 0.0, 1.0, 1.0))
    assert StrictGate(min_gain=0).can_pass({}, items(1.0, 0.95, 0.97, 1.0))
    three = {item: scores * 3 for item, scores in items(1.0, 0.5, 0.9, 1.0).items()}
    assert not StrictGate(repeats=3).can_pass({}, three)  # 0.6 / 4 < 1/4, at 3 repeats as at 1


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
    assert Strategies.from_config(OptimizerConfig(val_repeats=3)).gate.repeats == 3  # racing's bound
