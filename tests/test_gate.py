"""The gates, the paired significance test and racing's bound, as pure functions."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from skillgrad.backends.interface import AgentResult
from skillgrad.benchmarks.contract import Score, Task
from skillgrad.loop.decision.gate import PairedGate, StrictGate, make_gate, mean_of, optimistic
from skillgrad.loop.decision.racing import Race, ValUnit, next_wave, race_order, validate
from skillgrad.loop.decision.significance import (
    GRID,
    SHARE,
    SWEEP_LOG_ODDS,
    p_value_floor,
    paired_permutation_test,
)
from skillgrad.loop.rollout import Rollout


def results(*rows: list[float]) -> dict[str, list[float]]:
    return {f"t{i}": list(row) for i, row in enumerate(rows)}


def test_strict_gate_compares_means_and_rejects_ties() -> None:
    gate = StrictGate()
    incumbent = results([1.0], [0.0], [0.0], [1.0])
    assert gate.decide(results([1.0], [1.0], [0.0], [1.0]), incumbent).accepted
    tie = gate.decide(results([0.0], [1.0], [0.0], [1.0]), incumbent)
    assert not tie.accepted and "ties" in tie.reason and tie.effect == 0
    assert not gate.decide(results([0.0], [0.0], [0.0], [1.0]), incumbent).accepted
    assert mean_of(results([1.0, 0.0], [1.0, 1.0])) == 0.75  # items weigh the same


def test_paired_test_exact_p_values() -> None:
    # k = 1: the sign-flip test. Five items each won outright: p = 1/32; ties add nothing.
    won = results(*[[1.0]] * 5, *[[0.0]] * 3)
    lost = results(*[[0.0]] * 5, *[[0.0]] * 3)
    test = paired_permutation_test(won, lost)
    assert test.p_value == pytest.approx(1 / 32) and test.informative == 5
    assert test.effect == pytest.approx(5 / 8)
    # k = 3: one item 3/3 against 0/3 alone: 1 of C(6,3) = 20 relabellings is as extreme.
    assert paired_permutation_test(results([1, 1, 1]), results([0, 0, 0])).p_value == pytest.approx(1 / 20)
    # An identical candidate: p = P(T >= 0) >= 1/2, never significant.
    same = results([1, 0, 1], [0, 0, 1], [1, 1, 1])
    assert paired_permutation_test(same, same).p_value >= 0.5


def brute_force_p(candidate: dict[str, list[float]], incumbent: dict[str, list[float]]) -> float:
    """Every relabelling of every item, enumerated jointly, with the statistic as the module
    docstring defines it: the sum over items of log((1 - SHARE) + SHARE * LR), each rounded to 1/GRID."""
    per_item, observed = [], 0
    for item, theirs in incumbent.items():
        if not theirs or not candidate.get(item):
            continue  # a side without outcomes: the item is not compared
        pool = candidate[item] + theirs
        k = len(candidate[item])  # the candidate's m of the m + n pooled outcomes
        totals = [sum(pool[i] for i in g) for g in itertools.combinations(range(len(pool)), k)]
        odds = math.exp(SWEEP_LOG_ODDS / k)  # psi, per repeat
        mean = sum(odds**t for t in totals) / len(totals)
        scores = [
            round(GRID * math.log((1 - SHARE) + SHARE * odds**t / mean))
            for t in [*totals, sum(candidate[item])]
        ]
        per_item.append(scores[:-1])
        observed += scores[-1]
    stats = [sum(c) for c in itertools.product(*per_item)]
    return sum(1 for t in stats if t >= observed) / len(stats)


def test_paired_test_matches_brute_force_and_partial_credit() -> None:
    rng = random.Random(7)
    for _ in range(20):
        k = rng.choice([1, 2])
        n = rng.randint(1, 4)
        cand = {f"t{i}": [rng.choice([0.0, 0.25, 1.0]) for _ in range(k)] for i in range(n)}
        inc = {f"t{i}": [rng.choice([0.0, 0.5, 1.0]) for _ in range(k)] for i in range(n)}
        assert paired_permutation_test(cand, inc).p_value == pytest.approx(brute_force_p(cand, inc))


def test_missing_outcomes_are_left_out_of_the_pairing() -> None:
    rng = random.Random(17)
    for _ in range(30):
        n = rng.randint(1, 4)
        cand = {f"t{i}": [rng.choice([0.0, 0.25, 1.0]) for _ in range(rng.randint(0, 3))] for i in range(n)}
        inc = {f"t{i}": [rng.choice([0.0, 0.5, 1.0]) for _ in range(rng.randint(0, 3))] for i in range(n)}
        test = paired_permutation_test(cand, inc)
        assert test.p_value == pytest.approx(brute_force_p(cand, inc))
        assert test.items == sum(1 for i in inc if inc[i] and cand[i])
    # errors in the incumbent's runs hand the candidate nothing: were they zeros, this would pass
    incumbent = results([1.0, 1.0, 1.0], [1.0], [1.0, 1.0, 1.0], [])
    candidate = results([1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0])
    for gate in (StrictGate(repeats=3), PairedGate(0.05, repeats=3)):
        decision = gate.decide(candidate, incumbent)
        assert not decision.accepted and decision.effect == 0
        zeros = results([1.0] * 3, [1.0, 0.0, 0.0], [1.0] * 3, [0.0] * 3)
        assert isinstance(gate, PairedGate) or gate.decide(candidate, zeros).accepted


def test_the_statistic_is_not_monotone_so_racing_uses_a_floor() -> None:
    # A tie on an item the candidate lost adds null spread: raising an outcome can raise p.
    incumbent = {"t0": [1.0, 0.0], "t1": [0.0, 0.0]}
    lower, higher = {"t0": [0.0, 0.0], "t1": [1.0, 1.0]}, {"t0": [1.0, 0.0], "t1": [1.0, 1.0]}
    p_higher = paired_permutation_test(higher, incumbent).p_value
    assert p_higher > paired_permutation_test(lower, incumbent).p_value


def completions(
    partial: dict[str, list[float]], incumbent: dict[str, list[float]], values: list[float], k: int
):
    free = [(i, r) for i in incumbent for r in range(len(partial.get(i, [])), k)]
    for fill in itertools.product(values, repeat=len(free)):
        done = {item: list(partial.get(item, [])) for item in incumbent}
        for (item, _), value in zip(free, fill, strict=True):
            done[item].append(value)
        yield done


@pytest.mark.parametrize("values", [[0.0, 1.0], [0.0, 0.5, 1.0]])
def test_the_p_value_floor_holds_for_every_outcome_of_the_rest(values: list[float]) -> None:
    rng = random.Random(13)
    for _ in range(40):
        k, n = rng.choice([(1, 4), (2, 3), (3, 2)])
        # the incumbent misses a run now and then (its agent failed): fewer outcomes than k
        inc = {f"t{i}": [rng.choice(values) for _ in range(k - (rng.random() < 0.3))] for i in range(n)}
        cand = {f"t{i}": [rng.choice(values) for _ in range(k)] for i in range(n)}
        partial = {item: scores[: rng.randint(0, k)] for item, scores in cand.items()}
        floor = p_value_floor(partial, inc, k)
        fulls = completions(partial, inc, values, k)
        lowest = min(paired_permutation_test(full, inc).p_value for full in fulls)
        assert floor <= lowest + 1e-12
        assert p_value_floor(cand, inc, k) == pytest.approx(paired_permutation_test(cand, inc).p_value)


def test_paired_gate_needs_significance_and_records_it() -> None:
    gate = PairedGate(alpha=0.05)
    incumbent = results(*[[0.0, 0.0, 0.0]] * 4)
    small = gate.decide(results([1.0, 1.0, 1.0], *[[0.0] * 3] * 3), incumbent)  # p = 1/20
    assert small.accepted and small.p_value == pytest.approx(0.05) and small.alpha == 0.05
    noisy = gate.decide(results([1.0, 0.0, 0.0], *[[0.0] * 3] * 3), incumbent)  # p = 1/2
    assert not noisy.accepted and noisy.effect > 0 and "p = 0.5000" in noisy.reason
    assert noisy.to_json()["test"].startswith("paired permutation")
    # the strict gate keeps what it is told to: a third of an item here
    assert StrictGate(min_gain=1 / 3).decide(results([1.0, 0.0, 0.0], *[[0.0] * 3] * 3), incumbent).accepted


def test_paired_gate_false_accepts_at_most_alpha_under_noise() -> None:
    rng = random.Random(11)
    probs = [rng.random() for _ in range(16)]
    gate = make_gate("paired", 0.05)
    accepted = 0
    for _ in range(400):
        draw = lambda: {f"t{i}": [float(rng.random() < p) for _ in range(3)] for i, p in enumerate(probs)}  # noqa: E731
        accepted += gate.decide(draw(), draw()).accepted
    assert accepted / 400 <= 0.05 + 0.02  # sampling slack of 400 trials


def test_optimistic_completion_and_headroom() -> None:
    incumbent = results([1.0, 1.0], [0.0, 1.0])
    assert optimistic({"t0": [0.0, 1.0]}, incumbent) == {"t0": [0.0, 1.0], "t1": [1.0, 1.0]}
    strict = StrictGate()
    assert not strict.can_pass({}, incumbent)  # half an item to gain: less than one item's worth
    assert StrictGate(min_gain=0.5).can_pass({}, incumbent)
    assert strict.can_pass({}, results([1.0, 1.0], [0.0, 0.0]))
    assert not strict.can_pass({}, results([1.0], [1.0]))  # at the maximum: nothing can pass
    # the repeats a validation runs, not the incumbent's (it may miss some): 1/3 of an item to
    # fill on t1, a whole one from 0/1 known with 2 runs to go on t0
    short = results([0.0], [1.0, 1.0, 0.0])
    assert optimistic({}, short, 3) == results([1.0] * 3, [1.0] * 3)
    assert StrictGate(repeats=3).can_pass({"t0": [0.0]}, short)
    assert not PairedGate(0.05).can_pass({}, results([0.0], [1.0]))  # 1 item: p >= 1/2
    # The incumbent fails one item of 16: fixing it 3/3 from 0/3 can pass (p = 1/20); from 1/3,
    # 3/3 is p = 4/20 at best, so the run has no headroom left (full marks on 16 items notwithstanding).
    paired = PairedGate(0.05)
    assert paired.can_pass({}, results([0.0] * 3, *[[1.0] * 3] * 15))
    assert not paired.can_pass({}, results([1.0, 0.0, 0.0], *[[1.0] * 3] * 15))


def test_race_order_puts_the_incumbents_weakest_items_first() -> None:
    tasks = [Task(id=f"t{i}", question="q") for i in range(5)]
    incumbent = {"t0": [1.0, 1.0], "t1": [0.0, 0.0], "t2": [1.0, 0.0], "t3": [0.0, 0.0], "t4": [1.0, 1.0]}
    assert [t.id for t in race_order(tasks, incumbent)] == ["t1", "t3", "t2", "t0", "t4"]


def test_a_wave_is_the_shortest_prefix_whose_failure_rejects_when_it_is_at_most_a_third() -> None:
    tasks = [Task(id=f"t{i}", question="q") for i in range(16)]
    strict = StrictGate()
    # The incumbent failed 3 items: failing those 3 already rules the candidate out.
    three_failed = {t.id: [0.0 if i < 3 else 1.0] for i, t in enumerate(tasks)}
    race = Race(strict, three_failed, 2)
    empty = {t.id: [] for t in tasks}
    assert [t.id for t in next_wave(tasks, empty, 1, race, 2)] == ["t0", "t1", "t2"]
    assert next_wave(tasks, empty, 1, race, 1) == tasks  # no wave may follow
    # Failed on 6 of 16: the rejecting prefix (6) is more than a third, so one wave.
    six_failed = {t.id: [0.0 if i < 6 else 1.0] for i, t in enumerate(tasks)}
    assert next_wave(tasks, empty, 1, Race(strict, six_failed, 2), 2) == tasks
    assert len(next_wave(tasks, empty, 1, Race(strict, {**six_failed, "t5": [1.0]}, 2), 2)) == 5
    # With results known, the bound counts them: one fix already known needs one more miss.
    one_fixed = {**empty, "t0": [1.0], "t1": [0.0], "t2": [0.0]}
    assert [t.id for t in next_wave(tasks[3:], one_fixed, 1, Race(strict, three_failed, 3), 2)] == ["t3"]


def test_racing_rejects_a_candidate_that_fixes_none_of_the_incumbents_failures_after_those_items() -> None:
    tasks = [Task(id=f"t{i}", question="q") for i in range(16)]
    incumbent = {t.id: [0.0 if i in (4, 9, 13) else 1.0] for i, t in enumerate(tasks)}
    scores = {(t.id, 0): 0.0 if i in (4, 9, 13, 2) else 1.0 for i, t in enumerate(tasks)}
    log: list[list[ValUnit]] = []
    val = validate(tasks, 1, {}, fake_runner(scores, log), Race(StrictGate(), incumbent, 2))
    assert val.raced_out and val.calls == 3 and val.waves == 1
    assert [u.task.id for u in log[0]] == ["t4", "t9", "t13"]
    # One that fixes one of them runs the rest in a second wave and is judged on every item.
    scores[("t9", 0)] = 1.0
    log.clear()
    val = validate(tasks, 1, {}, fake_runner(scores, log), Race(StrictGate(), incumbent, 2))
    assert not val.raced_out and val.calls == 16 and [len(w) for w in log] == [3, 13]


def fake_runner(scores: dict[tuple[str, int], float], log: list[list[ValUnit]]):
    def run_units(units: list[ValUnit]) -> list[Rollout]:
        log.append(units)
        return [
            Rollout(u.task, AgentResult(answer=""), Score(scores[(u.task.id, u.repeat)], True, ""))
            for u in units
        ]

    return run_units


@pytest.mark.parametrize("gate_name", ["strict", "paired"])
def test_racing_decides_exactly_as_full_validation_with_fewer_calls(gate_name: str) -> None:
    rng = random.Random(5)
    gate = make_gate(gate_name, 0.05)
    tasks = [Task(id=f"t{i}", question="q") for i in range(8)]
    saved = 0
    for _ in range(60):
        k = rng.choice([1, 2])
        level = rng.random()
        inc = {t.id: [float(rng.random() < level) for _ in range(k)] for t in tasks}
        scores = {(t.id, r): float(rng.random() < rng.random()) for t in tasks for r in range(k)}
        full_log: list[list[ValUnit]] = []
        full = validate(tasks, k, {}, fake_runner(scores, full_log))
        race_log: list[list[ValUnit]] = []
        raced = validate(tasks, k, {}, fake_runner(scores, race_log), Race(gate, inc, 4))
        assert gate.decide(full.results, inc).accepted == (
            not raced.raced_out and gate.decide(raced.results, inc).accepted
        )
        if raced.raced_out:
            assert not gate.decide(full.results, inc).accepted  # the bound never rejects a winner
        assert raced.calls <= full.calls == 8 * k
        saved += full.calls - raced.calls
    assert saved > 0


def test_validation_reuses_known_results() -> None:
    tasks = [Task(id=f"t{i}", question="q") for i in range(4)]
    log: list[list[ValUnit]] = []
    scores = {(t.id, r): 1.0 for t in tasks for r in range(2)}
    val = validate(tasks, 2, {"t0": [1.0, 0.0], "t1": [1.0]}, fake_runner(scores, log))
    ran = [(u.task.id, u.repeat) for wave in log for u in wave]
    assert ran == [("t1", 1), ("t2", 0), ("t2", 1), ("t3", 0), ("t3", 1)]
    assert val.results["t0"] == [1.0, 0.0] and val.calls == 5
