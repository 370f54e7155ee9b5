"""A validation's verdict (its gate record is `records.GateRecord`)."""

from __future__ import annotations

from skillgrad.loop.gate import Gate, GateDecision, ValResults, optimistic
from skillgrad.loop.validate import Validation


def judge(gate: Gate, val: Validation, incumbent: ValResults) -> GateDecision:
    """The gate's decision; a raced-out candidate is rejected, with the effect and p-value of full
    marks on every item not run (no outcome of those items could pass: `Gate.can_pass`)."""
    if not val.raced_out:
        return gate.decide(val.results, incumbent)
    bound = gate.decide(optimistic(val.results, incumbent), incumbent)
    reason = (
        f"raced out after {len(val.results)} of {len(incumbent)} items: no outcome of the rest "
        f"can pass (with full marks: {bound.reason})"
    )
    return GateDecision(False, reason, bound.test, bound.effect, bound.p_value, bound.alpha)
