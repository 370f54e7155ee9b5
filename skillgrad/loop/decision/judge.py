"""The decision on a validation as it ran, and what its score is (its gate record is
`step_records.GateRecord`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from skillgrad.loop.decision.gate import Gate, GateDecision, ValResults, optimistic
from skillgrad.loop.decision.racing import Validation

Metric = Callable[[Mapping[str, Sequence[float]]], float]


def judge(gate: Gate, val: Validation, incumbent: ValResults) -> GateDecision:
    """The gate's decision on the outcomes the candidate has (its missing ones left out).

    A raced-out candidate is rejected, with the effect and p-value of full marks on every item not
    run (no outcome of those items could pass: `Gate.can_pass`). A candidate with missing outcomes
    is kept only when it also passes with them counted as failures: an error its skill causes
    (a loop to the turn limit, a timeout) must not earn a pass by leaving an item out. When only
    that reading rejects it, the decision is `held`: not kept, but not rejected on its merits, so
    its edits stay allowed (and its missing runs run again if it comes back)."""
    if val.raced_out:
        bound = gate.decide(optimistic(val.results, incumbent, gate.repeats), incumbent)
        reason = (
            f"raced out after {len(val.results)} of {len(incumbent)} items: no outcome of the rest "
            f"can pass (with full marks: {bound.reason})"
        )
        return GateDecision(False, reason, bound.test, bound.effect, bound.p_value, bound.alpha)
    decision = gate.decide(val.results, incumbent)
    if not val.missing:
        return decision
    left_out = f"{val.missing_count} run(s) whose agent failed left out"
    if not decision.accepted:
        return replace(decision, reason=f"{decision.reason} ({left_out})")
    failures = {
        item: [*scores, *[0.0] * len(val.missing.get(item, ()))] for item, scores in val.results.items()
    }
    strict = gate.decide(failures, incumbent)
    if strict.accepted:
        return replace(
            decision, reason=f"{decision.reason} ({left_out}; it passes with them as failures too)"
        )
    reason = (
        f"held: passes with {left_out} ({decision.reason}), but not with them as failures "
        f"({strict.reason}); the errors decide, so it is not kept and its edits stay allowed"
    )
    return replace(decision, accepted=False, reason=reason, held=True)


@dataclass(frozen=True)
class RacedOut:
    """What the score of a raced-out candidate is: it ran on `items` of `of` val items, scored
    `score` over those, and its full validation could have scored at most `bound`."""

    items: int
    of: int
    score: float
    bound: float

    def to_json(self) -> dict[str, Any]:
        return {
            "items": self.items,
            "of": self.of,
            "score": round(self.score, 6),
            "bound": round(self.bound, 6),
        }

    @classmethod
    def from_json(cls, data: Any) -> RacedOut | None:
        """The record a reader finds (None for anything that is not one)."""
        if not isinstance(data, dict):
            return None
        items, of, score, bound = (data.get(k) for k in ("items", "of", "score", "bound"))
        numbers = [x for x in (score, bound) if isinstance(x, int | float) and not isinstance(x, bool)]
        if not (isinstance(items, int) and isinstance(of, int) and len(numbers) == 2):
            return None
        return cls(items, of, float(numbers[0]), float(numbers[1]))


def scored(
    metric: Metric, gate: Gate, val: Validation, incumbent: ValResults
) -> tuple[float | None, RacedOut | None]:
    """(the candidate's validation score, None) for a full validation; (None, what it is) for a
    raced-out one, whose mean over the items it ran on is no validation score."""
    if not val.raced_out:
        return metric(val.results), None
    bound = metric(optimistic(val.results, incumbent, gate.repeats))
    return None, RacedOut(len(val.results), len(incumbent), metric(val.results), bound)
