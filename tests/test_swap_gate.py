"""The swap gate (loop/decision/swap_gate.py): a candidate that only swaps worked examples must win
the paired test at `optimizer.gate_alpha`; the strict gate keeps the wins of one or two items that
a swap's draw of examples brings, the paired test does not. The run itself: tests/test_examples_e2e.py
(the form fix's swap, judged under each setting)."""

from __future__ import annotations

import pytest

from skillgrad.config import OptimizerConfig
from skillgrad.loop.custom_strategies import Custom, UserGate
from skillgrad.loop.decision.gate import PairedGate, StrictGate
from skillgrad.loop.decision.swap_gate import swaps_only
from skillgrad.loop.strategies import Strategies
from skillgrad.skilldoc import Edit


def edit(op: str) -> Edit:
    return Edit(op, "t1", "t2", "why")  # type: ignore[arg-type]


def items(*values: float) -> dict[str, list[float]]:
    return {f"t{i}": [v] for i, v in enumerate(values)}


@pytest.mark.parametrize(
    ("ops", "expected"),
    [
        (["replace_example"], True),
        (["replace_example", "replace_example", "replace_example"], True),
        ([], False),
        (["add_example"], False),
        (["remove_example"], False),
        (["replace_example", "add"], False),  # a rule with it: judged by the configured gate
        (["replace_example", "add_example"], False),  # the examples' count changes
    ],
)
def test_only_a_candidate_of_example_swaps_alone_is_a_swap(ops: list[str], expected: bool) -> None:
    assert swaps_only([edit(op) for op in ops]) is expected


def test_the_config_reaches_the_swap_gate() -> None:
    default = Strategies.from_config(OptimizerConfig(gate_alpha=0.1, val_repeats=2))
    assert isinstance(default.gate, StrictGate) and isinstance(default.swap_gate, PairedGate)
    assert (default.swap_gate.alpha, default.swap_gate.repeats) == (0.1, 2)
    assert Strategies.from_config(OptimizerConfig(swap_gate="gate")).swap_gate is None


def test_a_callers_own_gate_judges_swaps_too() -> None:
    """A gate handed in through the API (`Custom`) is the caller's whole decision."""
    own = StrictGate(min_gain=3.0)
    strategies = Strategies.from_config(OptimizerConfig(), Custom(gate=own, labels={"gate": "mine"}))
    assert isinstance(strategies.gate, UserGate) and strategies.gate.inner is own
    assert strategies.swap_gate is None


def test_the_one_and_two_item_wins_the_strict_gate_kept_are_not_significant() -> None:
    """Step 2 of the 1.5B's runs on 12 val items (docs/benchmarks.md): swaps that won 1-0 and 2-0
    with no loss passed the strict gate; the paired test at 0.05 keeps neither, and keeps the
    five wins of a first step's examples."""
    incumbent = items(*[1.0] * 5, *[0.0] * 7)
    paired, strict = PairedGate(0.05), StrictGate()
    for wins, p_value, kept in ((1, 0.5, False), (2, 0.25, False), (4, 0.0625, False), (5, 0.03125, True)):
        candidate = items(*[1.0] * 5, *[1.0] * wins, *[0.0] * (7 - wins))
        decision = paired.decide(candidate, incumbent)
        assert strict.decide(candidate, incumbent).accepted
        assert (decision.accepted, decision.p_value) == (kept, pytest.approx(p_value)), decision.reason
