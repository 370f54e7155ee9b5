"""skillgrad's one bounded retry loop, for every chat model's transport retries (the SDK backends
run their SDK with `max_retries=0`; a harness CLI session and a reading session are retried the
same way).

Each attempt may be billed: an answered call, and also one the client gave up on (a timeout, a
cut connection: the provider may have done the work). So each attempt after a call's first is
reserved through the run's `CallMeter` before it is sent (it raises BudgetExceeded when the budget
has no room), the usage of every attempt is summed into the call's usage, and a call that fails
for good carries what its attempts cost as the error's `paid`. Attempts are sequential: a call
never has more than one on the wire.
"""

from __future__ import annotations

import email.utils
import math
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from skillgrad.backends.interface import CallMeter
from skillgrad.errors import BackendError, BudgetExceeded
from skillgrad.values import Usage

INITIAL_BACKOFF_S = 0.5  # the SDKs' own first pause (doubling, jittered), kept as they had it
MAX_BACKOFF_S = 8.0
MAX_RETRY_AFTER_S = 120.0  # a server asking for a longer pause is not retried (as the SDKs do)
# An attempt that ended without an answer (a timeout, a cut connection) may have been billed: one
# call of unknown cost.
UNANSWERED = Usage(calls=1, cost_usd=None)


@dataclass
class AttemptFailed(Exception):
    """Raised by one attempt: what it may have cost, whether another attempt may follow (after
    `retry_after_s` when the server asked for that pause, else the backoff), and the error the
    call fails with after `attempts` attempts that cost `paid` in all."""

    cost: Usage
    retry: bool
    error: Callable[[int, Usage], BackendError]
    retry_after_s: float | None = None


def backoff_s(attempt: int, initial_s: float = INITIAL_BACKOFF_S, cap_s: float = MAX_BACKOFF_S) -> float:
    """The pause after the `attempt`-th failure (1-based): doubling from `initial_s`, at most
    `cap_s`, less up to a quarter at random so concurrent calls do not retry in step."""
    return min(initial_s * 2.0 ** (attempt - 1), cap_s) * (1 - 0.25 * random.random())


def retry_after_s(headers: Mapping[str, str]) -> float | None:
    """The pause a server asked for (`retry-after-ms`, or `retry-after` in seconds or as a date)."""
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / scale
        except ValueError:
            if name == "retry-after-ms":
                continue
            try:
                seconds = email.utils.parsedate_to_datetime(value).timestamp() - time.time()
            except (TypeError, ValueError, OverflowError, IndexError):
                return None
        return None if math.isnan(seconds) else min(seconds, MAX_RETRY_AFTER_S + 1)
    return None


def status_retry(status: int, headers: Mapping[str, str]) -> tuple[bool, float | None]:
    """(whether an error answer is retried, the pause its server asked for), as the SDKs decide:
    the server's `x-should-retry`, else 408, 409, 429 and 5xx; never when it asks to wait longer
    than MAX_RETRY_AFTER_S."""
    after = retry_after_s(headers)
    if after is not None and after > MAX_RETRY_AFTER_S:
        return False, None
    after = after if after is not None and after > 0 else None
    flag = headers.get("x-should-retry")
    if flag in ("true", "false"):
        return flag == "true", after
    return status in (408, 409, 429) or status >= 500, after


def renew(meter: CallMeter | None, spent: Usage) -> None:
    """Reserve the next attempt; a refusal carries what the attempts before it cost."""
    if meter is None:
        return
    try:
        meter.renew()
    except BudgetExceeded as stop:
        stop.paid = spent
        raise


def with_retries(
    attempt: Callable[[], tuple[str, Usage]],
    *,
    retries: int,
    meter: CallMeter | None,
    backoff: Callable[[int], float] = backoff_s,
) -> tuple[str, Usage]:
    """(text, usage of every attempt) of the first attempt that answers, at most `retries` after
    the first, `backoff(n)` seconds after the n-th failure. `attempt` raises AttemptFailed for a
    failure; a BackendError or BudgetExceeded it raises itself (a refused key) ends the call at
    once, carrying the attempts' cost as well."""
    spent = Usage()
    for number in range(1, retries + 2):
        if number > 1:
            renew(meter, spent)
        try:
            text, used = attempt()
        except AttemptFailed as failed:
            spent = spent + failed.cost
            if not failed.retry or number > retries:
                raise failed.error(number, spent) from None
            pause = failed.retry_after_s
            time.sleep(backoff(number) if pause is None else pause)
            continue
        except BackendError as exc:
            exc.paid = spent + exc.paid
            raise
        except BudgetExceeded as stop:
            stop.paid = spent + (stop.paid or Usage())
            raise
        return text, spent + used
    raise AssertionError("unreachable: the last attempt returns or raises")
