"""Usage accounting of one run: paid usage by role and stage (the ledger), by step, and the
budget's reservations of units of work (a rollout or an analyst call)."""

from __future__ import annotations

import threading
from typing import Any

from skillgrad.backends.base import ChatModel
from skillgrad.budget import Ledger
from skillgrad.errors import BudgetExceeded
from skillgrad.loop.rounds import CallClock
from skillgrad.values import Effort, Message, Reply, Usage


class BudgetStop(BudgetExceeded):
    """Raised inside a stage when the budget is exhausted; the trainer stops at a safe point (an
    evaluation lets it through, as the public `BudgetExceeded`)."""


class Accounting:
    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self._lock = threading.Lock()
        self._step: dict[str, Usage] = {}
        self._in_flight = 0  # reserved units of work not yet recorded
        self.clock = CallClock()  # when each paid call ran, for the run's sequential rounds

    def reserve(self) -> None:
        """Reserve one unit of work, or raise BudgetStop at a cap. Units in flight count against
        `budget.max_calls`, so concurrency cannot overshoot it; token and dollar caps are known
        only after a call, so they can be passed by the calls in flight."""
        with self._lock:
            reason = self.ledger.check()
            cap = self.ledger.budget.max_calls
            if reason is None and cap is not None and self.ledger.total().calls + self._in_flight >= cap:
                reason = f"budget.max_calls reached: {cap} calls made or in flight"
            if reason:
                raise BudgetStop(reason)
            self._in_flight += 1
        self.clock.start()

    def record(self, role: str, stage: str, usage: Usage, saved: Usage | None) -> None:
        """Paid usage counts against the budget; `saved` is what a cache hit avoided paying.
        Ends the unit's reservation."""
        self.ledger.record(role, stage, usage, saved=saved)
        self.clock.end(paid=usage.calls > 0)
        with self._lock:
            self._step[role] = self._step.get(role, Usage()) + usage
            self._in_flight -= 1

    def record_unreserved(self, role: str, stage: str, usage: Usage, saved: Usage | None) -> None:
        """Count a call made inside a reserved unit of work (a judge grading a rollout): it counts
        against the budget from now on, but it was not reserved, so it ends no reservation."""
        self.ledger.record(role, stage, usage, saved=saved)
        with self._lock:
            self._step[role] = self._step.get(role, Usage()) + usage

    def release(self) -> None:
        """End a reservation whose unit of work failed without usage to record."""
        self.clock.end(paid=False)
        with self._lock:
            self._in_flight -= 1

    def start_step(self) -> None:
        with self._lock:
            self._step = {}

    def step_usage(self) -> dict[str, Any]:
        with self._lock:
            return {role: u.to_json() for role, u in sorted(self._step.items())}

    def usage_so_far(self) -> dict[str, Any]:
        """Paid usage by role, as Usage JSON (cost None while any call's price is unknown)."""
        return {role: bucket.usage().to_json() for role, bucket in self.ledger.by_role().items()}


class MeteredChatModel:
    """A ChatModel whose calls are counted by the run's accounting under one role and stage (a
    judge's calls, made while scoring a rollout). Errors propagate as the inner model raises them."""

    def __init__(self, inner: ChatModel, accounting: Accounting, role: str, stage: str) -> None:
        self.inner = inner
        self.accounting = accounting
        self.role = role
        self.stage = stage
        self.name = inner.name
        self.model = inner.model

    def complete(
        self,
        messages: list[Message],
        *,
        schema: dict[str, Any] | None = None,
        effort: Effort | None = None,
        stage: str = "",
    ) -> Reply:
        reply = self.inner.complete(messages, schema=schema, effort=effort, stage=stage or self.stage)
        self.accounting.record_unreserved(self.role, self.stage, reply.usage, reply.saved)
        return reply
