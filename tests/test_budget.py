"""Ledger caps across both roles, unknown costs, persistence (the estimate: tests/test_estimate.py)."""

from __future__ import annotations

import json
import threading

from skillgrad.backends.interface import Usage
from skillgrad.budget import Ledger
from skillgrad.config import BudgetConfig


def budget(**kw: float | int) -> BudgetConfig:
    return BudgetConfig.model_validate(kw)


def test_usd_cap_counts_both_roles() -> None:
    ledger = Ledger(budget(max_usd=1.0))
    ledger.record("target", "rollout", Usage(10, 10, 1, 0.6))
    assert ledger.check() is None and not ledger.exceeded
    ledger.record("optimizer", "reflect", Usage(10, 10, 1, 0.4))
    reason = ledger.check()
    assert reason is not None and reason.startswith("budget.max_usd reached")


def test_token_and_call_caps() -> None:
    ledger = Ledger(budget(max_tokens=100))
    ledger.record("target", "rollout", Usage(50, 49, 1, None))
    assert ledger.check() is None
    ledger.record("optimizer", "reflect", Usage(1, 0, 1, None))
    assert "max_tokens" in (ledger.check() or "")
    calls = Ledger(budget(max_calls=3))
    for _ in range(2):
        calls.record("target", "rollout", Usage(calls=1))
    assert calls.check() is None
    calls.record("optimizer", "reflect", Usage(calls=1))
    assert "max_calls" in (calls.check() or "")


def test_unknown_costs_are_excluded_and_counted() -> None:
    ledger = Ledger(budget(max_usd=0.5))
    ledger.record("target", "rollout", Usage(1000, 1000, 2, None))
    ledger.record("optimizer", "reflect", Usage(10, 10, 1, 0.25))
    total = ledger.total()
    assert total.known_usd == 0.25 and total.unknown_cost_calls == 2
    assert total.usage().cost_usd is None and ledger.check() is None
    ledger.record("optimizer", "reflect", Usage(10, 10, 1, 0.25))
    assert "2 calls of unknown cost" in (ledger.check() or "")


def test_cache_hits_do_not_count_against_caps() -> None:
    ledger = Ledger(budget(max_calls=1))
    zero = Usage(0, 0, 0, 0.0)
    for _ in range(5):
        ledger.record("target", "rollout", zero, saved=Usage(10, 10, 1, 0.1))
    assert ledger.check() is None
    assert ledger.saved().calls == 5 and ledger.total().calls == 0


def test_totals_by_role_and_stage_thread_safe() -> None:
    ledger = Ledger()

    def work() -> None:
        for _ in range(500):
            ledger.record("target", "rollout", Usage(1, 1, 1, 0.001))
            ledger.record("optimizer", "reflect", Usage(2, 0, 1, 0.002))

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert ledger.total().calls == 8000
    assert ledger.by_role()["target"].input_tokens == 4000
    assert ledger.by_stage()["reflect"].input_tokens == 8000
    assert ledger.check() is None  # no caps configured


def test_serialise_and_restore() -> None:
    ledger = Ledger(budget(max_calls=10))
    ledger.record("target", "baseline", Usage(5, 6, 1, None))
    ledger.record("optimizer", "reflect", Usage(7, 8, 2, 0.5), saved=None)
    ledger.record("target", "rollout", Usage(), saved=Usage(1, 1, 1, 0.1))
    data = json.loads(json.dumps(ledger.to_json()))
    restored = Ledger.from_json(data, budget(max_calls=3))
    assert restored.to_json() == ledger.to_json()
    assert "max_calls" in (restored.check() or "")  # caps come from the (new) config
