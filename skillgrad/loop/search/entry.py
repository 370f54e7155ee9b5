"""The gate of the frontier's pool: a child enters when it wins val items over its parent, the
configured gate (strict or paired) passes its gain on the items it won, and no member of the pool
dominates it. A `Gate`, so racing validates against the parent's item scores with it and stops a
child once it can no longer enter.

Why only the items it won: a rule that fixes some items and costs others is what the greedy
search throws away on the mean; the pool keeps it, and the final pick (the best mean) and the
frontier's dominance are what keep a weaker skill from winning the run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from skillgrad.loop.gate import Gate, GateDecision, ValResults, mean_of, optimistic
from skillgrad.loop.search.dominance import EPS, Scored, dominator, item_means


def won_items(candidate: Mapping[str, Sequence[float]], parent: ValResults) -> list[str]:
    """The items on which the candidate's mean beats the parent's."""
    ours, theirs = item_means(candidate), item_means(parent)
    return [item for item in parent if item in ours and ours[item] > theirs.get(item, 0.0) + EPS]


class EntryGate:
    """Pool entry for a child of `parent` of `chars` characters; `members` is the pool."""

    def __init__(self, gate: Gate, members: Sequence[Scored], chars: int) -> None:
        self.gate = gate
        self.members = list(members)
        self.chars = chars

    def _rival(self, results: Mapping[str, Sequence[float]]) -> Scored | None:
        newest = max((m.version for m in self.members), default=0) + 1
        return dominator(Scored(newest, item_means(results), self.chars), self.members)

    def decide(self, candidate: Mapping[str, Sequence[float]], incumbent: ValResults) -> GateDecision:
        effect = mean_of({item: candidate[item] for item in incumbent}) - mean_of(incumbent)
        won = won_items(candidate, incumbent)
        test = "pool entry: items won over the parent"
        if not won:
            return GateDecision(False, "wins no val item over its parent", test, effect)
        gain = self.gate.decide({i: candidate[i] for i in won}, {i: incumbent[i] for i in won})
        test = f"pool entry: {gain.test} on the items won"
        if not gain.accepted:
            reason = f"its gain on the {len(won)} item(s) it wins does not pass the gate ({gain.reason})"
            return GateDecision(False, reason, test, effect, gain.p_value, gain.alpha)
        rival = self._rival(candidate)
        if rival is not None:
            reason = f"wins {len(won)} item(s) over its parent, but v{rival.version:04d} dominates it"
            return GateDecision(False, reason, test, effect, gain.p_value, gain.alpha)
        reason = f"enters the pool: wins {len(won)} item(s) over its parent ({gain.reason}); undominated"
        return GateDecision(True, reason, test, effect, gain.p_value, gain.alpha)

    def can_pass(self, partial: Mapping[str, Sequence[float]], incumbent: ValResults) -> bool:
        # Both conditions only get easier with better outcomes, so full marks on the rest bound
        # them exactly; the configured gate on the items won is bounded by "some item is won"
        # (exact for the strict gate, looser for the paired one: a few racing calls, never a decision).
        best = optimistic(partial, incumbent)
        return bool(won_items(best, incumbent)) and self._rival(best) is None
