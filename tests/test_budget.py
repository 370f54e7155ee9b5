"""Ledger caps across both roles, unknown costs, persistence, and the pre-run estimate."""

from __future__ import annotations

import json
import threading

from skillgrad.backends.base import Usage
from skillgrad.budget import Ledger, estimate
from skillgrad.config import BudgetConfig, Config


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
    assert calls.calls_left() == 3 and ledger.calls_left() is None
    for _ in range(2):
        calls.record("target", "rollout", Usage(calls=1))
    assert calls.check() is None and calls.calls_left() == 1
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


def small_config(target: str = "openai_chat") -> Config:
    return Config.model_validate(
        {
            "model": {"backend": "openai_chat", "target_backend": target, "max_output_tokens": 1000},
            "train": {"epochs": 2, "batch_size": 4, "minibatch_size": 3},
        }
    )


def test_estimate_counts_calls() -> None:
    est = estimate(small_config(), n_train=10, n_val=5, n_test=3, skill_chars=400, task_chars=800)
    # batches of 4, 4, 2 -> 3 steps per epoch; reflect calls per epoch 2 + 2 + 1
    assert est["steps_per_epoch"] == 3 and est["steps"] == 6
    stages = est["by_stage"]
    assert stages["baseline"]["calls"] == 5
    assert stages["rollout"]["calls"] == 20
    assert stages["validate"]["calls"] == 30
    assert stages["test"]["calls"] == 6
    assert stages["reflect"]["calls"] == 10
    assert est["by_role"]["target"]["calls"] == 61 and est["by_role"]["optimizer"]["calls"] == 10
    assert est["total"]["calls"] == 71
    # one rollout: 200 overhead + (400 + 800) / 4 input tokens, 256 output
    assert stages["baseline"]["input_tokens"] == 5 * 500 and stages["baseline"]["output_tokens"] == 5 * 256
    # one analyst call: 200 + (400 + 3 * (800 + 600)) / 4 input, max_output_tokens output
    assert stages["reflect"]["input_tokens"] == 10 * 1350 and stages["reflect"]["output_tokens"] == 10_000
    assert est["total"]["total_tokens"] == est["total"]["input_tokens"] + est["total"]["output_tokens"]


def test_estimate_agent_turns_trace_and_budget_note() -> None:
    cfg = small_config("claude_code_exec")
    cfg.budget.max_calls = 10
    est = estimate(cfg, n_train=4, n_val=2, n_test=0, skill_chars=0, task_chars=0)
    assert est["assumptions"]["agent_turns_per_rollout"] == 8
    assert est["by_stage"]["baseline"]["input_tokens"] == 2 * 8 * 200
    # 2 epochs x ceil(4 / 3) analyst calls, each with the trace block (4000 chars) per task
    assert est["by_stage"]["reflect"]["input_tokens"] == 4 * (200 + 3 * 4600 // 4)
    assert est["budget_check"] and "max_calls" in est["budget_check"][0]
    assert estimate(cfg, 0, 2, 0)["steps"] == 0
