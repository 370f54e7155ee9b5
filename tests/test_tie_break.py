"""The tie break (optimizer.tie_break): a tie goes to the candidate whose val answers hold the
expected form where the incumbent's do not, and nowhere the form cannot be what the scores miss."""

from __future__ import annotations

import pytest

from skillgrad.loop.decision.gate import PairedGate, StrictGate
from skillgrad.loop.decision.racing import Race, Validation, validate
from skillgrad.loop.decision.tie_break import TIE_BREAKS, FormTieBreak, NoTieBreak, TieReachable
from skillgrad.loop.shapes import OPTION, answer_shape, shared_shape
from skillgrad.loop.state import TrainState
from skillgrad.values import Task
from tests.test_gate import fake_runner

ITEMS = [f"t{i}" for i in range(12)]


def scores(value: float, n: int = 12) -> dict[str, list[float]]:
    return {item: [value] for item in ITEMS[:n]}


def forms(held: int, n: int = 12) -> dict[str, list[bool]]:
    return {item: [i < held] for i, item in enumerate(ITEMS[:n])}


def decide(
    candidate: dict[str, list[float]],
    incumbent: dict[str, list[float]],
    mine: dict[str, list[bool]],
    theirs: dict[str, list[bool]],
    gate=None,
    **val,
):
    gate = gate or StrictGate()
    validation = Validation(candidate, 12, 1, **{"raced_out": False, **val})
    return FormTieBreak().decide(gate.decide(candidate, incumbent), validation, incumbent, mine, theirs)


def test_a_tie_at_zero_goes_to_the_candidate_whose_answers_hold_the_form() -> None:
    decision = decide(scores(0.0), scores(0.0), forms(12), forms(0))
    assert decision.accepted and decision.effect == 0
    assert "ties current 0.0000; the tie goes to the candidate" in decision.reason
    assert "form on 12 of 12 val items, the current skill's on 0" in decision.reason
    assert decision.test == "strict mean, tie broken by form"
    # the paired gate's tie too
    assert decide(scores(0.0), scores(0.0), forms(12), forms(0), gate=PairedGate(0.05)).accepted


@pytest.mark.parametrize(
    ("mine", "theirs", "accepted"),
    [
        (forms(6), forms(0), True),
        (forms(5), forms(0), False),
        (forms(12), forms(7), False),
        (forms(0), forms(12), False),
    ],
)
def test_the_candidate_must_hold_the_form_on_half_the_items_more(mine, theirs, accepted) -> None:
    assert decide(scores(0.0), scores(0.0), mine, theirs).accepted is accepted


def test_no_tie_no_break_and_a_gain_stays_a_gain() -> None:
    lower = {**scores(0.0), "t0": [1.0]}
    assert not decide(scores(0.0), lower, forms(12), forms(0)).accepted  # below: a loss is a loss
    win = decide(lower, scores(0.0), forms(12), forms(0))
    assert win.accepted and "tie" not in win.reason


def test_the_break_stays_out_where_the_form_is_not_what_the_scores_miss() -> None:
    # an answer out of the form that scored: the scorer reads answers out of any form (GSM8K)
    half = {item: [1.0 if i < 6 else 0.0] for i, item in enumerate(ITEMS)}
    off_passed = {item: [i >= 3] for i, item in enumerate(ITEMS)}
    assert not decide(half, half, forms(12), off_passed).accepted
    assert not decide(scores(0.0), scores(0.0), forms(12), {}).accepted  # validated before forms were kept
    assert not decide(scores(0.0), scores(0.0), forms(12), forms(0, n=11)).accepted  # an item without forms
    assert not decide(scores(0.0), scores(0.0), forms(12), forms(0), raced_out=True).accepted
    assert not decide(scores(0.0), scores(0.0), forms(12), forms(0), missing={"t1": [0]}).accepted
    assert not decide({}, {}, {}, {}).accepted  # nothing compared


def test_none_keeps_the_incumbent_and_races_with_the_gate_itself() -> None:
    gate = StrictGate()
    none = TIE_BREAKS["none"]
    assert isinstance(none, NoTieBreak) and none.racing_gate(gate, scores(0.0), forms(0)) is gate
    tie = gate.decide(scores(0.0), scores(0.0))
    assert none.decide(tie, Validation(scores(0.0), 12, 1, False), scores(0.0), forms(12), forms(0)) is tie


def test_racing_goes_on_while_a_tie_is_reachable_and_stops_once_it_is_not() -> None:
    gate = StrictGate()
    incumbent = {"t0": [1.0], "t1": [1.0], "t2": [0.0], "t3": [0.0]}
    out_of_form = {"t0": [True], "t1": [True], "t2": [False], "t3": [False]}
    raced = FormTieBreak().racing_gate(gate, incumbent, out_of_form)
    one_miss = {"t0": [0.0], "t2": [0.0]}  # full marks on the rest: 0.5 = a tie, not a gain
    assert not gate.can_pass(one_miss, incumbent) and raced.can_pass(one_miss, incumbent)
    two_misses = {"t0": [0.0], "t1": [0.0], "t2": [0.0]}  # at best 0.25
    assert not raced.can_pass(two_misses, incumbent)
    assert raced.decide(one_miss, incumbent) == gate.decide(one_miss, incumbent)
    assert raced.repeats == gate.repeats and raced.pool_test() is gate.pool_test()
    # a candidate failing just the incumbent's failures (half the items, all out of the form)
    # ties it: the paired gate's racing stops it after four of them, the tie break's runs it on
    # (the strict gate needs a wave of every failure, more than a third: it never splits here)
    paired = PairedGate(0.05)
    sixteen = [Task(id=f"t{i}", question="q") for i in range(16)]
    failing = {t.id: [0.0 if i % 2 else 1.0] for i, t in enumerate(sixteen)}
    same = {(t.id, 0): failing[t.id][0] for t in sixteen}
    early = validate(sixteen, 1, {}, fake_runner(same, []), Race(paired, failing, 2))
    assert early.raced_out and early.calls == 4
    out_where_failing = {item: [score[0] > 0] for item, score in failing.items()}
    full_race = Race(FormTieBreak().racing_gate(paired, failing, out_where_failing), failing, 2)
    full = validate(sixteen, 1, {}, fake_runner(same, []), full_race)
    assert not full.raced_out and full.calls == 16


def test_racing_bounds_with_the_gate_alone_where_no_tie_could_be_broken() -> None:
    gate, form = StrictGate(), FormTieBreak()
    incumbent = scores(0.0)
    assert form.racing_gate(gate, incumbent, forms(12)) is gate  # the incumbent holds the form
    assert form.racing_gate(gate, incumbent, forms(7)) is gate  # out of it on 5 of 12: < half
    assert form.racing_gate(gate, incumbent, {}) is gate  # no shared form, or none recorded
    scored_out = {**forms(0), "t0": [False]}
    assert form.racing_gate(gate, {**incumbent, "t0": [1.0]}, scored_out) is gate  # the scorer reads any form
    assert isinstance(form.racing_gate(gate, incumbent, forms(6)), TieReachable)


def test_the_shared_shape_of_real_expected_answers() -> None:
    assert shared_shape(["(A)", "(C)", "(B)"]) == OPTION  # BBH multiple choice
    assert shared_shape(["12", "1,234", "7"]) == answer_shape("42")  # GSM8K's bare numbers
    assert shared_shape(["Yes", "No", "Yes"]) == "a yes/no word"
    assert shared_shape(["Paris", "the Eiffel Tower", "1889"]) is None  # SearchQA's spans
    assert shared_shape(["(A)"]) is None  # one answer is no convention


def test_a_tie_won_over_the_best_makes_the_candidate_the_best() -> None:
    state = TrainState()
    assert state.accept("rule", 0.0, 1) is True and state.best_version == 1
    state.best_version = 0  # the best is an earlier version: a tie with it is no new best
    assert state.accept("rule 2", 0.0, 2) is False and state.best_version == 0
