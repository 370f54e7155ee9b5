"""A validation's verdict and its gate record (steps/NNNN/gate.json)."""

from __future__ import annotations

from typing import Any

from skillgrad.config import Config
from skillgrad.loop.gate import Gate, GateDecision, ValResults, mean_of, optimistic
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


def gate_record(
    decision: GateDecision | None, val: Validation | None, current: float, cfg: Config
) -> dict[str, Any]:
    """What gate.json says: the decision, the test with its effect and p-value, and what the
    validation cost (None/0 where no candidate was validated)."""
    opt = cfg.optimizer
    record: dict[str, Any] = {
        "accepted": bool(decision and decision.accepted),
        "reason": decision.reason if decision else "no edit applied",
        "gate": opt.gate,
        "candidate_score": mean_of(val.results) if val else None,
        "current_score": current,
        "cached": bool(val and val.calls == 0),
        "test": None,
        "effect": None,
        "p_value": None,
        "alpha": None,
        "validation": opt.validation,
        "repeats": opt.val_repeats,
        "items_validated": len(val.results) if val else 0,
        "raced_out": bool(val and val.raced_out),
        "waves": val.waves if val else 0,
        "calls": val.calls if val else 0,
    }
    if decision is not None:
        record.update(decision.to_json())
    return record
