"""The validation gate: a pure accept/reject decision, chosen by name in `make_gate`.

A gate compares per-item validation results (`ValResults`: task id -> one score per repeat) of a
candidate with the incumbent's, on the incumbent's items. An outcome that is missing (a run whose
agent failed, `loop/decision/racing.py`) is not there: an item is compared on the outcomes each side has,
and an item either side has none of is left out of the comparison.

Racing and the early stop ask each gate `can_pass`: False only when no outcome of the runs not
made yet (each item ends with `repeats` outcomes) could make it accept, so stopping on it never
rejects a candidate the full validation would accept. The strict gate is monotone in the
candidate's outcomes, so full marks on the rest (`optimistic`) is its exact bound; the paired
gate's statistic is not monotone, and it bounds its p-value instead (`significance.p_value_floor`).

`pool_test` is the test a frontier child passes against its parent (`loop/decision/pool_entry.py`): the same
test on every item, without asking the mean to rise where the test itself tells wins from noise.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from skillgrad.loop.decision.significance import p_value_floor, paired_effect, paired_permutation_test
from skillgrad.loop.state import ValResults

__all__ = ["Gate", "GateDecision", "ValResults", "compared", "make_gate", "mean_of", "optimistic"]


@dataclass(frozen=True)
class GateDecision:
    accepted: bool
    reason: str
    test: str  # what was compared, e.g. "strict mean" or a named significance test
    effect: float  # candidate mean - incumbent mean, over the items compared
    p_value: float | None = None  # None for gates without a significance test
    alpha: float | None = None
    # not kept only because its missing outcomes, counted as failures, reject it (loop/decision/judge.py):
    # no verdict on its edits
    held: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "test": self.test,
            "effect": round(self.effect, 6),
            "p_value": None if self.p_value is None else round(self.p_value, 6),
            "alpha": self.alpha,
        }


class Gate(Protocol):
    """The accept/reject decision: a candidate's per-item validation outcomes (`ValResults`: task
    id -> one score in [0, 1] per repeat) against the incumbent's, and its bound for racing.

    Error contract: pure (no I/O, no state: the same outcomes, the same decision) and total on
    scores in [0, 1]. An item either side has no outcome for is left out of the comparison, and
    nothing left to compare is a rejection, never an exception; it raises only for a programming
    error (a score that is not a number). `can_pass` is True whenever some outcome of the runs not
    made yet could make `decide` accept (racing stops a candidate on False); `pool_test` accepts
    under the null no more often than the gate itself."""

    # Outcomes each item of a validation ends with (optimizer.val_repeats); None: as many as the
    # incumbent's most (a caller that knows better passes it: an incumbent may miss some).
    repeats: int | None

    def decide(self, candidate: Mapping[str, Sequence[float]], incumbent: ValResults) -> GateDecision:
        """Decide on the items both have outcomes for (`compared`)."""
        ...

    def can_pass(self, partial: Mapping[str, Sequence[float]], incumbent: ValResults) -> bool:
        """Whether some outcome of everything `partial` has not run yet (items missing or short of
        `repeats`) could still make `decide` accept. Must be True whenever one could; may be True
        when none can (a looser bound only costs racing calls, never a decision)."""
        ...

    def pool_test(self) -> Gate:
        """The gate a frontier child must pass against its parent on every item (loop/decision/pool_entry.py):
        under the null it accepts no more often than this gate does."""
        ...


def mean_of(results: Mapping[str, Sequence[float]]) -> float:
    """The mean over items of each item's mean over repeats (every item weighs the same; an item
    without outcomes is left out)."""
    means = [sum(v) / len(v) for v in results.values() if v]
    return sum(means) / len(means) if means else 0.0


def compared(
    candidate: Mapping[str, Sequence[float]], incumbent: ValResults
) -> tuple[ValResults, ValResults]:
    """(candidate, incumbent) on the incumbent's items that both have outcomes for."""
    items = [item for item, scores in incumbent.items() if scores and candidate.get(item)]
    return {i: list(candidate[i]) for i in items}, {i: incumbent[i] for i in items}


def planned(incumbent: ValResults, repeats: int | None) -> int:
    """The outcomes each item of a validation ends with."""
    return repeats or max((len(v) for v in incumbent.values()), default=1) or 1


def optimistic(
    partial: Mapping[str, Sequence[float]], incumbent: ValResults, repeats: int | None = None
) -> ValResults:
    """The candidate's known outcomes, completed with full marks for everything still to run."""
    k = planned(incumbent, repeats)
    return {item: [*partial.get(item, []), *[1.0] * (k - len(partial.get(item, [])))] for item in incumbent}


class StrictGate:
    """Accept only a higher mean validation score, higher by at least `min_gain` val items' worth
    (one item's mean going 0 -> 1 is 1/items of the mean, whatever its repeats): a tie keeps the
    shorter, proven skill. With 0/1 scores and one repeat any gain is a whole item; with
    continuous ones (F1) one item +1.00 and another -0.80 out of 12 is a wiggle of 0.017, not the
    0.083 that fixing one item outright is worth (issue 26), and is rejected at any repeats."""

    epsilon = 1e-9
    test = "strict mean"

    def __init__(self, min_gain: float = 1.0, repeats: int | None = None) -> None:
        self.min_gain = min_gain
        self.repeats = repeats

    def decide(self, candidate: Mapping[str, Sequence[float]], incumbent: ValResults) -> GateDecision:
        mine, theirs = compared(candidate, incumbent)
        ours, base = mean_of(mine), mean_of(theirs)
        effect = ours - base
        needed = self.min_gain / max(1, len(theirs))
        on = "" if len(theirs) == len(incumbent) else f" on the {len(theirs)} items both have outcomes for"
        if effect > self.epsilon and effect >= needed - self.epsilon:
            return GateDecision(True, f"validation {ours:.4f} > current {base:.4f}{on}", self.test, effect)
        if effect > self.epsilon:
            reason = (
                f"validation {ours:.4f} > current {base:.4f}{on}, but the gain {effect:.4f} is less "
                f"than {self.min_gain:g} val item(s) fixed outright ({needed:.4f} of {len(theirs)} items)"
            )
            return GateDecision(False, reason, self.test, effect)
        relation = "ties" if abs(effect) <= self.epsilon else "is below"
        reason = f"validation {ours:.4f} {relation} current {base:.4f}{on}"
        return GateDecision(False, reason, self.test, effect)

    def can_pass(self, partial: Mapping[str, Sequence[float]], incumbent: ValResults) -> bool:
        best = optimistic(partial, incumbent, self.repeats)  # monotone: exact
        return self.decide(best, incumbent).accepted

    def pool_test(self) -> Gate:
        # No level to spend on a trade-off: a child enters only with a higher mean, as here.
        return self


class PairedGate:
    """Accept only an improvement that is significant at `alpha`: item-by-item (paired) exact
    permutation test over the repeats of each item, one-sided, with a statistic built for edits
    that fix a few items (see `significance`). With `needs_gain` the mean must rise too; without
    it (the frontier's pool test) significant wins are enough, whatever the mean does."""

    test = "paired permutation (one-sided, exact, stratified by item, sparse-effect likelihood ratio)"

    def __init__(self, alpha: float, repeats: int | None = None, needs_gain: bool = True) -> None:
        self.alpha = alpha
        self.repeats = repeats
        self.needs_gain = needs_gain

    def decide(self, candidate: Mapping[str, Sequence[float]], incumbent: ValResults) -> GateDecision:
        result = paired_permutation_test(candidate, incumbent)
        significant = result.p_value <= self.alpha
        accepted = significant and (result.effect > 0 or not self.needs_gain)
        relation = "<=" if significant else ">"
        reason = (
            f"paired: effect {result.effect:+.4f} over {result.items} items, "
            f"p = {result.p_value:.4f} {relation} alpha {self.alpha}"
        )
        if significant and not accepted:
            reason += ", but the mean does not rise"
        return GateDecision(accepted, reason, self.test, result.effect, result.p_value, self.alpha)

    def can_pass(self, partial: Mapping[str, Sequence[float]], incumbent: ValResults) -> bool:
        # An accept needs a positive effect (linear in the outcomes: full marks bound it exactly)
        # and a p-value at most alpha (bounded below over every outcome of the rest).
        k = planned(incumbent, self.repeats)
        if self.needs_gain and paired_effect(optimistic(partial, incumbent, k), incumbent) <= 0:
            return False
        return p_value_floor(partial, incumbent, k) <= self.alpha

    def pool_test(self) -> Gate:
        return PairedGate(self.alpha, self.repeats, needs_gain=False)


def make_gate(name: str, alpha: float, min_gain: float = 1.0, repeats: int | None = None) -> Gate:
    """The gate named in `optimizer.gate`; the one place config strings become gate objects."""
    gates: dict[str, Gate] = {"strict": StrictGate(min_gain, repeats), "paired": PairedGate(alpha, repeats)}
    return gates[name]
