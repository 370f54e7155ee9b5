"""The validation gate: a pure accept/reject decision, chosen by name in `GATES`.

A gate compares per-item validation results (`ValResults`: task id -> one score per repeat) of a
candidate with the incumbent's, on the incumbent's items. Racing and the early stop ask each gate
`can_pass`: False only when no outcome of the items not run yet could make it accept, so stopping
on it never rejects a candidate the full validation would accept. The strict gate is monotone in
the candidate's outcomes, so full marks on the rest (`optimistic`) is its exact bound; the paired
gate's statistic is not monotone, and it bounds its p-value instead (`significance.p_value_floor`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from skillgrad.loop.significance import p_value_floor, paired_effect, paired_permutation_test
from skillgrad.loop.state import ValResults

__all__ = ["Gate", "GateDecision", "ValResults", "make_gate", "mean_of", "optimistic"]


@dataclass(frozen=True)
class GateDecision:
    accepted: bool
    reason: str
    test: str  # what was compared, e.g. "strict mean" or a named significance test
    effect: float  # candidate mean - incumbent mean
    p_value: float | None = None  # None for gates without a significance test
    alpha: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "test": self.test,
            "effect": round(self.effect, 6),
            "p_value": None if self.p_value is None else round(self.p_value, 6),
            "alpha": self.alpha,
        }


class Gate(Protocol):
    def decide(self, candidate: Mapping[str, Sequence[float]], incumbent: ValResults) -> GateDecision:
        """Decide on the incumbent's items; the candidate must have as many outcomes per item."""
        ...

    def can_pass(self, partial: Mapping[str, Sequence[float]], incumbent: ValResults) -> bool:
        """Whether some outcome of everything `partial` has not run yet (items missing or short of
        repeats) could still make `decide` accept. Must be True whenever one could; may be True
        when none can (a looser bound only costs racing calls, never a decision)."""
        ...


def mean_of(results: Mapping[str, Sequence[float]]) -> float:
    """The mean over items of each item's mean over repeats (every item weighs the same)."""
    means = [sum(v) / len(v) for v in results.values() if v]
    return sum(means) / len(means) if means else 0.0


def optimistic(partial: Mapping[str, Sequence[float]], incumbent: ValResults) -> ValResults:
    """The candidate's known outcomes, completed with full marks for everything still to run."""
    return {
        item: list(partial.get(item, [])) + [1.0] * (len(scores) - len(partial.get(item, [])))
        for item, scores in incumbent.items()
    }


class StrictGate:
    """Accept only a strictly higher mean validation score: a tie keeps the shorter, proven skill."""

    epsilon = 1e-9

    def decide(self, candidate: Mapping[str, Sequence[float]], incumbent: ValResults) -> GateDecision:
        ours = mean_of({item: candidate[item] for item in incumbent})
        theirs = mean_of(incumbent)
        effect = ours - theirs
        if effect > self.epsilon:
            return GateDecision(True, f"validation {ours:.4f} > current {theirs:.4f}", "strict mean", effect)
        relation = "ties" if abs(effect) <= self.epsilon else "is below"
        return GateDecision(
            False, f"validation {ours:.4f} {relation} current {theirs:.4f}", "strict mean", effect
        )

    def can_pass(self, partial: Mapping[str, Sequence[float]], incumbent: ValResults) -> bool:
        return self.decide(optimistic(partial, incumbent), incumbent).accepted  # monotone: exact


class PairedGate:
    """Accept only an improvement that is significant at `alpha`: item-by-item (paired) exact
    permutation test over the repeats of each item, one-sided, with a statistic built for edits
    that fix a few items (see `significance`)."""

    test = "paired permutation (one-sided, exact, stratified by item, sparse-effect likelihood ratio)"

    def __init__(self, alpha: float) -> None:
        self.alpha = alpha

    def decide(self, candidate: Mapping[str, Sequence[float]], incumbent: ValResults) -> GateDecision:
        result = paired_permutation_test(candidate, incumbent)
        accepted = result.effect > 0 and result.p_value <= self.alpha
        relation = "<=" if result.p_value <= self.alpha else ">"
        reason = (
            f"paired: effect {result.effect:+.4f} over {result.items} items, "
            f"p = {result.p_value:.4f} {relation} alpha {self.alpha}"
        )
        return GateDecision(accepted, reason, self.test, result.effect, result.p_value, self.alpha)

    def can_pass(self, partial: Mapping[str, Sequence[float]], incumbent: ValResults) -> bool:
        # An accept needs a positive effect (linear in the outcomes: full marks bound it exactly)
        # and a p-value at most alpha (bounded below over every outcome of the rest).
        if paired_effect(optimistic(partial, incumbent), incumbent) <= 0:
            return False
        return p_value_floor(partial, incumbent) <= self.alpha


def make_gate(name: str, alpha: float) -> Gate:
    """The gate named in `optimizer.gate`; the one place config strings become gate objects."""
    gates: dict[str, Gate] = {"strict": StrictGate(), "paired": PairedGate(alpha)}
    return gates[name]
