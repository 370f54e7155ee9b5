"""Usage accounting of one run: paid usage by role and stage (the ledger), by step, and the
budget's reservations of units of work (a rollout, an analyst or a judge call: `reserved`)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

from skillgrad.backends.interface import ChatModel
from skillgrad.budget import BudgetStop, Ledger
from skillgrad.errors import BackendError, BudgetExceeded, StructuredOutputError
from skillgrad.loop.rounds import CallClock
from skillgrad.values import Effort, Message, Reply, Usage

__all__ = ["Accounting", "BudgetStop", "MeteredChatModel", "Reservation", "paid_by"]


def paid_by(exc: BaseException) -> Usage | None:
    """What a failed unit of work paid before it failed (its attempts: a provider bills a failed
    call too), or None when the failure says nothing of it."""
    if isinstance(exc, BackendError | StructuredOutputError | BudgetExceeded):
        return exc.paid
    return None


class Reservation:
    """A reserved unit of work: `record` its usage once (which ends it); a unit left without a
    record is released, or recorded with what its failure says it paid (`Accounting.reserved`)."""

    def __init__(self, accounting: Accounting, role: str, stage: str) -> None:
        self.accounting, self.role, self.stage = accounting, role, stage
        self.done = False

    def record(self, usage: Usage, saved: Usage | None = None) -> None:
        if not self.done:
            self.done = True
            self.accounting.record(self.role, self.stage, usage, saved)


class Accounting:
    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self._lock = threading.Lock()
        self._step: dict[str, Usage] = {}
        self.clock = CallClock()  # when each paid call ran, for the run's sequential rounds

    def reserve(self) -> None:
        """Reserve a unit of work's first call, or raise BudgetStop at a cap (`Ledger.reserve`).
        Prefer `reserved`, which ends the reservation whatever happens."""
        self.ledger.reserve()
        self.clock.start()

    @contextlib.contextmanager
    def reserved(self, role: str, stage: str) -> Iterator[Reservation]:
        """A unit of work paid under `role` and `stage`, its reservation ended on the way out
        however the block leaves: recorded by the block, or with what its exception paid, or
        released."""
        self.reserve()
        unit = Reservation(self, role, stage)
        try:
            yield unit
        except BaseException as exc:
            paid = paid_by(exc)
            if paid is not None:
                unit.record(paid)
            raise
        finally:
            if not unit.done:
                self.release()

    def record(self, role: str, stage: str, usage: Usage, saved: Usage | None) -> None:
        """Paid usage counts against the budget; `saved` is what a cache hit avoided paying.
        Ends the unit's reservation (each call it reserved)."""
        self.ledger.record(role, stage, usage, saved=saved)
        self.ledger.end_unit()
        self.clock.end(paid=usage.calls > 0)
        with self._lock:
            self._step[role] = self._step.get(role, Usage()) + usage

    def release(self) -> None:
        """End a reservation whose unit of work failed without usage to record."""
        self.ledger.end_unit()
        self.clock.end(paid=False)

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
    """A ChatModel whose every call is a unit of work of the run's accounting under one role and
    stage (a judge's calls, made while scoring a rollout): reserved before it starts, so the calls
    in flight cannot pass `budget.max_calls`. Errors propagate as the inner model raises them
    (BudgetStop when no call may start)."""

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
        with self.accounting.reserved(self.role, self.stage) as unit:
            reply = self.inner.complete(messages, schema=schema, effort=effort, stage=stage or self.stage)
            unit.record(reply.usage, reply.saved)
        return reply
