"""Overlap bookkeeping and early stop as pure units: what `PrefetchedRollouts` hands out, when a run stops."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from skillgrad.backends.interface import AgentResult
from skillgrad.benchmarks.contract import Score, Task
from skillgrad.loop.decision.gate import StrictGate
from skillgrad.loop.prefetch import PrefetchedRollouts
from skillgrad.loop.rollout import Rollout
from skillgrad.loop.state import TrainState
from skillgrad.loop.stopping import stop_reason
from skillgrad.skilldoc import SkillDoc


def rollouts(*passed: bool) -> list[Rollout]:
    return [
        Rollout(Task(id=f"t{i}", question="q"), AgentResult(answer=""), Score(float(p), p, ""))
        for i, p in enumerate(passed)
    ]


def test_ahead_hands_out_only_rollouts_made_with_the_right_skill() -> None:
    with ThreadPoolExecutor(max_workers=2) as pool:
        ahead = PrefetchedRollouts(pool)
        release = threading.Event()

        def slow() -> list[Rollout]:
            release.wait(5)
            return rollouts(True)

        ahead.start(2, "candidate", slow)
        ahead.start(2, "other", lambda: rollouts(False))  # a step keeps its first start
        release.set()
        assert ahead.take(2, "incumbent") == (None, True)  # made with a rejected skill: redo
        assert ahead.take(2, "candidate") == (None, False)  # taken once: gone
        ahead.start(3, "candidate", lambda: rollouts(True, False))
        assert ahead.peek(3, "candidate") is not None and ahead.peek(3, "incumbent") is None
        taken, discarded = ahead.take(3, "candidate")
        assert taken is not None and [r.score.passed for r in taken] == [True, False] and not discarded
        assert ahead.take(4, "candidate") == (None, False)  # never started


def test_ahead_reraises_what_the_rollouts_raised() -> None:
    def broken() -> list[Rollout]:
        raise RuntimeError("budget")

    with ThreadPoolExecutor(max_workers=1) as pool:
        ahead = PrefetchedRollouts(pool)
        ahead.start(1, "s", broken)
        with pytest.raises(RuntimeError, match="budget"):
            ahead.take(1, "s")
        ahead.start(2, "s", broken)
        ahead.drain()  # nobody will use them: errors are dropped, nothing left in flight


def batch(*ids: str) -> list[Task]:
    return [Task(id=i, question="q") for i in ids]


def test_stop_reasons() -> None:
    gate = StrictGate()
    state = TrainState(current_text="skill", current_score=0.5)
    incumbent = {"v1": [1.0], "v2": [0.0]}
    remaining = [(3, 1, batch("a", "b")), (4, 2, batch("c"))]
    assert stop_reason(gate, state, incumbent, remaining, None) is None
    # Every remaining task already passed with this very skill: nothing left to learn from.
    state.train_passed[SkillDoc("skill").content_hash] = ["a", "b", "c"]
    code, sentence = stop_reason(gate, state, incumbent, remaining, None) or ("", "")
    assert code == "no_failures" and "nothing to learn from" in sentence
    state.train_passed = {SkillDoc("other skill").content_hash: ["a", "b", "c"]}
    assert stop_reason(gate, state, incumbent, remaining, None) is None  # passes of another skill
    # The incumbent at full marks: a strict gate can never accept again.
    state.current_score = 1.0
    code, sentence = stop_reason(gate, state, {"v1": [1.0], "v2": [1.0]}, remaining, None) or ("", "")
    assert code == "no_headroom" and "no candidate can pass" in sentence
