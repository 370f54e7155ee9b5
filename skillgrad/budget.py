"""Spending across BOTH roles: a thread-safe usage ledger with caps, and a pre-run estimate.

Counting rules (the lead's contract with `skillgrad.cache`):
- `record(role, stage, usage, saved=...)`: `usage` is what was PAID; a cache hit pays nothing
  (`CachedChatModel` / `CachedAgent` return zero usage on a hit) and passes the stored usage as
  `saved`. Caps apply to paid usage only; `saved` is reported so a resumed or re-run experiment can
  still show what the work cost.
- Costs: `Usage.cost_usd=None` means unknown (e.g. a local model, or a provider without prices).
  `max_usd` is checked against the sum of KNOWN costs; calls of unknown cost are counted separately
  (`unknown_cost_calls`) so a report can say the dollar figure is a lower bound. `Usage.__add__`
  turns any unknown into an unknown total, which is why buckets keep their own known-cost sum.
- A cap is "reached" when the paid total is >= the cap; the trainer checks after each call or
  rollout and stops at the next safe point, so the overshoot is at most the calls in flight.
- Reservations (`reserve`, `renew`, `end_unit`): a unit of work (a rollout, an analyst or judge
  call) reserves its first call before it starts, and each further attempt it makes (a chat
  model's retry or re-ask, which call `renew` as the ledger is their `CallMeter`) reserves one
  more before it is sent; `budget.max_calls` counts the calls in flight with the paid ones, so
  neither concurrency nor retries can pass it. A unit's reservations are held per thread (the
  unit and its attempts run on one) and end together when its usage is recorded or released.
- Across processes: the ledger is saved with each checkpoint, but a call is paid (and cached)
  before the trainer records it, and a crash loses what was recorded since the last checkpoint;
  a resume then gets those calls back from the cache as *saved*. So every paid call is also
  appended to the run's `PaidJournal` the moment it returns, the checkpoint notes how many lines
  the ledger already covers, and a resumed ledger adds the lines after that mark (as stage
  `before_crash`): paid usage and the caps count every call the provider answered.
"""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from pydantic import ConfigDict, Field, NonNegativeInt, TypeAdapter, ValidationError

from skillgrad.atomic import append_jsonl, fsync_file, read_jsonl_repairing
from skillgrad.config import BudgetConfig
from skillgrad.errors import BudgetExceeded, describe_validation
from skillgrad.values import Usage

RECOVERED_STAGE = "before_crash"
Dollars = Annotated[float, Field(ge=0.0, allow_inf_nan=False)]


class BudgetStop(BudgetExceeded):
    """Raised when no further paid call may start; the trainer stops at a safe point (an
    evaluation lets it through, as the public `BudgetExceeded`)."""


class LedgerFileError(ValueError):
    """A ledger (in state.json) or paid journal that no run wrote; the message says what (one line)."""


@dataclass
class Bucket:
    """Accumulated usage of one role, stage or the whole run (mutable; guarded by the Ledger)."""

    __pydantic_config__ = ConfigDict(extra="forbid")

    input_tokens: NonNegativeInt = 0
    output_tokens: NonNegativeInt = 0
    calls: NonNegativeInt = 0
    known_usd: Dollars = 0.0
    unknown_cost_calls: NonNegativeInt = 0

    def add(self, usage: Usage) -> None:
        self.input_tokens += usage.input_tokens
        self.output_tokens += usage.output_tokens
        self.calls += usage.calls
        if usage.cost_usd is None:
            # A record with unknown cost covers `calls` calls (at least one: it was a record).
            self.unknown_cost_calls += max(usage.calls, 1)
        else:
            self.known_usd += usage.cost_usd

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def usage(self) -> Usage:
        """As a Usage; cost is None when any call's cost was unknown (Usage's convention)."""
        cost = None if self.unknown_cost_calls else self.known_usd
        return Usage(self.input_tokens, self.output_tokens, self.calls, cost)

    def to_json(self) -> dict[str, Any]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "calls": self.calls,
            "known_usd": round(self.known_usd, 6),
            "unknown_cost_calls": self.unknown_cost_calls,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Bucket:
        return cls(
            int(data.get("input_tokens", 0)),
            int(data.get("output_tokens", 0)),
            int(data.get("calls", 0)),
            float(data.get("known_usd", 0.0)),
            int(data.get("unknown_cost_calls", 0)),
        )


def _copy(bucket: Bucket) -> Bucket:
    return dataclasses.replace(bucket)


@dataclass
class LedgerRecord:
    """The ledger as a checkpoint holds it (`Ledger.to_json`), typed: what resume reads."""

    __pydantic_config__ = ConfigDict(extra="forbid")

    journal_mark: NonNegativeInt | None = None
    total: Bucket = field(default_factory=Bucket)
    saved: Bucket = field(default_factory=Bucket)
    by_role: dict[str, Bucket] = field(default_factory=dict)
    by_stage: dict[str, Bucket] = field(default_factory=dict)
    by_role_stage: dict[str, Bucket] = field(default_factory=dict)


@dataclass(frozen=True)
class PaidUsage:
    __pydantic_config__ = ConfigDict(extra="forbid")

    input_tokens: NonNegativeInt = 0
    output_tokens: NonNegativeInt = 0
    calls: NonNegativeInt = 0
    cost_usd: Dollars | None = None


@dataclass(frozen=True)
class PaidEntry:
    """One line of the paid journal, typed."""

    __pydantic_config__ = ConfigDict(extra="forbid")

    role: str
    stage: str | None
    usage: PaidUsage


_LEDGER = TypeAdapter(LedgerRecord)
_ENTRY = TypeAdapter(PaidEntry)


def ledger_record(data: Any) -> LedgerRecord:
    """A checkpoint's ledger, validated; LedgerFileError saying what is wrong."""
    try:
        return _LEDGER.validate_python(data)
    except ValidationError as exc:
        raise LedgerFileError(f"ledger.{describe_validation(exc)}") from None


class PaidJournal:
    """Append-only record of every paid call, written as it returns (see the module docstring).
    Thread safe; the file is created on the first paid call."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._lines: int | None = None

    def add(self, role: str, stage: str | None, usage: Usage) -> None:
        if not (usage.calls or usage.total_tokens or usage.cost_usd):
            return
        with self._lock:
            lines = self._count()
            append_jsonl(self.path, {"role": role, "stage": stage, "usage": usage.to_json()}, fsync=False)
            self._lines = lines + 1
        # Outside the lock: calls that return together share the disk's flushes instead of
        # queueing one fsync each (a killed process loses nothing written; this is for power loss).
        fsync_file(self.path)

    def _count(self) -> int:
        if self._lines is None:
            self._lines = len(read_jsonl_repairing(self.path)) if self.path.exists() else 0
        return self._lines

    def count(self) -> int:
        with self._lock:
            return self._count()

    def check(self) -> int:
        """The number of paid calls the journal holds, each line validated, the file left as it
        is (a torn last line is a crash's and is dropped when the run resumes); LedgerFileError
        (or UserError for a line that is not JSON) naming the line."""
        rows = read_jsonl_repairing(self.path, repair=False) if self.path.exists() else []
        for number, row in enumerate(rows, 1):
            try:
                _ENTRY.validate_python(row)
            except ValidationError as exc:
                raise LedgerFileError(f"line {number}: {describe_validation(exc)}") from None
        return len(rows)

    def entries_after(self, mark: int) -> list[tuple[str, Usage]]:
        """(role, usage) of the lines after the first `mark` ones."""
        with self._lock:
            rows = read_jsonl_repairing(self.path) if self.path.exists() else []
            self._lines = len(rows)
        out = []
        for row in rows[mark:]:
            try:
                out.append((str(row["role"]), Usage.from_json(row["usage"])))
            except (KeyError, TypeError, ValueError):
                continue
        return out


class Ledger:
    """Thread-safe record of paid (and cache-saved) usage by role and stage, with budget caps.
    With a `journal`, `to_json` notes how much of it this ledger covers, for `recover`."""

    def __init__(self, budget: BudgetConfig | None = None, journal: PaidJournal | None = None) -> None:
        self.journal = journal
        self.budget = budget or BudgetConfig.model_validate({})
        self._lock = threading.Lock()
        self._total = Bucket()
        self._saved = Bucket()
        self._roles: dict[str, Bucket] = {}
        self._stages: dict[str, Bucket] = {}
        self._role_stages: dict[str, Bucket] = {}  # "role/stage"
        self._in_flight = 0  # calls reserved and not yet recorded or released
        self._units = threading.local()  # this thread's units of work: calls each holds

    # -- reservations (see the module docstring) ------------------------------------------------

    def _held(self) -> list[int]:
        units: list[int] | None = getattr(self._units, "held", None)
        if units is None:
            units = self._units.held = []
        return units

    def _refuse_at_a_cap(self) -> None:
        """Raise BudgetStop when a cap is reached, the calls in flight counted against max_calls.
        Call with the lock held."""
        reason = self._reason(self._total)
        cap = self.budget.max_calls
        if reason is None and cap is not None and self._total.calls + self._in_flight >= cap:
            reason = f"budget.max_calls reached: {cap} calls made or in flight"
        if reason:
            raise BudgetStop(reason)

    def reserve(self) -> None:
        """Begin a unit of work on this thread with its first call reserved, or raise BudgetStop.
        Token and dollar caps are known only after a call, so the calls in flight can pass them."""
        with self._lock:
            self._refuse_at_a_cap()
            self._in_flight += 1
        self._held().append(1)

    def renew(self) -> None:
        """Reserve one more attempt of this thread's unit of work (a retry, a re-ask), or raise
        BudgetStop: `CallMeter.renew`. Outside a unit it only checks the caps."""
        units = self._held()
        with self._lock:
            self._refuse_at_a_cap()
            if units:
                self._in_flight += 1
        if units:
            units[-1] += 1

    def end_unit(self) -> None:
        """End this thread's innermost unit of work: every call it reserved stops counting as in
        flight (its usage is recorded, or it failed without any)."""
        units = self._held()
        held = units.pop() if units else 0
        with self._lock:
            self._in_flight -= held

    def in_flight(self) -> int:
        with self._lock:
            return self._in_flight

    def record(self, role: str, stage: str, usage: Usage, *, saved: Usage | None = None) -> None:
        """Add one call's (or rollout's) paid `usage`; `saved` is the usage a cache hit avoided."""
        with self._lock:
            for bucket in (
                self._total,
                self._roles.setdefault(role, Bucket()),
                self._stages.setdefault(stage, Bucket()),
                self._role_stages.setdefault(f"{role}/{stage}", Bucket()),
            ):
                bucket.add(usage)
            if saved is not None and (saved.calls or saved.total_tokens or saved.cost_usd):
                self._saved.add(saved)

    # -- reading --------------------------------------------------------------------------------

    def total(self) -> Bucket:
        with self._lock:
            return _copy(self._total)

    def saved(self) -> Bucket:
        with self._lock:
            return _copy(self._saved)

    def by_role(self) -> dict[str, Bucket]:
        with self._lock:
            return {k: _copy(v) for k, v in sorted(self._roles.items())}

    def by_stage(self) -> dict[str, Bucket]:
        with self._lock:
            return {k: _copy(v) for k, v in sorted(self._stages.items())}

    def check(self) -> str | None:
        """None while every cap has room; else a one-line reason naming the cap that was reached."""
        return self._reason(self.total())

    def _reason(self, total: Bucket) -> str | None:
        b = self.budget
        if b.max_usd is not None and total.known_usd >= b.max_usd:
            unknown = total.unknown_cost_calls
            extra = f"; {unknown} calls of unknown cost not included" if unknown else ""
            return f"budget.max_usd reached: spent ${total.known_usd:.4f} of ${b.max_usd:.4f}{extra}"
        if b.max_tokens is not None and total.total_tokens >= b.max_tokens:
            return f"budget.max_tokens reached: {total.total_tokens} tokens of {b.max_tokens}"
        if b.max_calls is not None and total.calls >= b.max_calls:
            return f"budget.max_calls reached: {total.calls} calls of {b.max_calls}"
        return None

    @property
    def exceeded(self) -> bool:
        return self.check() is not None

    def paid_calls(self) -> dict[str, Any]:
        """Paid calls: total, by role, and by role and stage (`role/stage`)."""
        with self._lock:
            return {
                "total": self._total.calls,
                "by_role": {k: v.calls for k, v in sorted(self._roles.items())},
                "by_stage": {k: v.calls for k, v in sorted(self._role_stages.items())},
            }

    # -- persistence (resume) -------------------------------------------------------------------

    def recover(self, mark: int) -> None:
        """Add the journal's calls after `mark`: paid before a crash, never recorded here."""
        if self.journal is None:
            return
        for role, usage in self.journal.entries_after(mark):
            self.record(role, RECOVERED_STAGE, usage)

    def to_json(self) -> dict[str, Any]:
        mark = self.journal.count() if self.journal is not None else None
        with self._lock:
            return {
                "journal_mark": mark,
                "total": self._total.to_json(),
                "saved": self._saved.to_json(),
                "by_role": {k: v.to_json() for k, v in sorted(self._roles.items())},
                "by_stage": {k: v.to_json() for k, v in sorted(self._stages.items())},
                "by_role_stage": {k: v.to_json() for k, v in sorted(self._role_stages.items())},
            }

    def adopt(self, other: Ledger) -> None:
        """Take `other`'s paid and saved usage (a checkpoint's, on resume) as this ledger's own:
        the chat models already metered by this one keep it."""
        with other._lock:
            buckets = other._total, other._saved, other._roles, other._stages, other._role_stages
        with self._lock:
            self._total, self._saved, self._roles, self._stages, self._role_stages = buckets

    @classmethod
    def from_json(
        cls, data: dict[str, Any], budget: BudgetConfig | None = None, journal: PaidJournal | None = None
    ) -> Ledger:
        """Restore a ledger written by `to_json` (caps come from the current config) and add the
        journal's calls it never saw; LedgerFileError for data `to_json` cannot have written."""
        record = ledger_record(data)
        ledger = cls(budget, journal)
        ledger._total, ledger._saved = record.total, record.saved
        ledger._roles, ledger._stages = record.by_role, record.by_stage
        ledger._role_stages = record.by_role_stage
        ledger.recover(record.journal_mark or 0)
        return ledger
