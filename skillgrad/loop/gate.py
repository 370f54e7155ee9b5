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


def outcome_worth(incumbent: ValResults) -> float:
    """What one outcome (one repeat of one val item) going from 0 to 1 adds to the mean: the
    smallest gain 0/1 scores can show, so a gate that asks for it changes nothing for them."""
    repeats = max((len(v) for v in incumbent.values()), default=1) or 1
    return 1.0 / (max(1, len(incumbent)) * repeats)


class StrictGate:
    """Accept only a higher mean validation score, higher by at least `min_gain` outcomes' worth
    (`outcome_worth`): a tie keeps the shorter, proven skill. With 0/1 scores any gain is a whole
    outcome; with continuous ones (F1) one item +1.00 and another -0.80 out of 12 is a wiggle of
    0.017, not the 0.083 that fixing one item outright is worth (issue 26), and is rejected."""

    epsilon = 1e-9
    test = "strict mean"

    def __init__(self, min_gain: float = 1.0) -> None:
        self.min_gain = min_gain

    def decide(self, candidate: Mapping[str, Sequence[float]], incumbent: ValResults) -> GateDecision:
        ours = mean_of({item: candidate[item] for item in incumbent})
        theirs = mean_of(incumbent)
        effect = ours - theirs
        needed = self.min_gain * outcome_worth(incumbent)
        if effect > self.epsilon and effect >= needed - self.epsilon:
            return GateDecision(True, f"validation {ours:.4f} > current {theirs:.4f}", self.test, effect)
        if effect > self.epsilon:
            reason = (
                f"validation {ours:.4f} > current {theirs:.4f}, but the gain {effect:.4f} is less than "
                f"{self.min_gain:g} outcome(s)' worth ({needed:.4f}: one val item fixed outright)"
            )
            return GateDecision(False, reason, self.test, effect)
        relation = "ties" if abs(effect) <= self.epsilon else "is below"
        return GateDecision(
            False, f"validation {ours:.4f} {relation} current {theirs:.4f}", self.test, effect
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


def make_gate(name: str, alpha: float, min_gain: float = 1.0) -> Gate:
    """The gate named in `optimizer.gate`; the one place config strings become gate objects."""
    gates: dict[str, Gate] = {"strict": StrictGate(min_gain), "paired": PairedGate(alpha)}
    return gates[name]
