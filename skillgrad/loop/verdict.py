"""A validation's verdict (its gate record is `records.GateRecord`)."""

from __future__ import annotations

from skillgrad.loop.gate import Gate, GateDecision, ValResults, optimistic
from skillgrad.loop.validate import Validation


def judge(gate: Gate, val: Validation, incumbent: ValResults) -> GateDecision:
    """The gate's decision; a raced-out candidate is rejected with the bound that stopped it
    (its effect and p-value are those of the best case: full marks on every item not run)."""
    if not val.raced_out:
        return gate.decide(val.results, incumbent)
    bound = gate.decide(optimistic(val.results, incumbent), incumbent)
    reason = (
        f"raced out after {len(val.results)} of {len(incumbent)} items: even full marks on the "
        f"rest cannot pass ({bound.reason})"
    )
    return GateDecision(False, reason, bound.test, bound.effect, bound.p_value, bound.alpha)
