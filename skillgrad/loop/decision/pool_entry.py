"""The gate of the frontier's pool: a child enters when the configured gate's pool test passes it
against its parent on every val item, it wins at least one item over its parent, and no member of
the pool dominates it. A `Gate`, so racing validates against the parent's item scores with it and
stops a child once it can no longer enter.

Why every item: choosing the items a child won and then testing its gain on those alone tests
noise that was picked for looking like a gain. A child drawn from its parent's own distribution
(16 items, 3 repeats) then passed the paired gate 40 % of the time at alpha 0.05, and the strict
gate 99 % (bench/gate_noise.py --false-acceptance). The test on every item keeps the level of the
configured gate: the paired pool test (`Gate.pool_test`) is the gate's exact permutation test
without asking the mean to rise, so a child that fixes some items for real and costs others still
enters, at most alpha of the time under the null; the strict gate has no level to spend on a
trade-off, so with it a child needs a higher mean. The won items and dominance then decide where
in the frontier it stands; the final pick (the best mean, passing the gate against the initial
skill) keeps a weaker skill from winning the run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from skillgrad.loop.decision.gate import Gate, GateDecision, ValResults, compared, mean_of, optimistic
from skillgrad.loop.search.dominance import EPS, Scored, dominator, item_means


def won_items(candidate: Mapping[str, Sequence[float]], parent: ValResults) -> list[str]:
    """The items on which the candidate's mean beats the parent's."""
    ours, theirs = item_means(candidate), item_means(parent)
    return [item for item in theirs if item in ours and ours[item] > theirs[item] + EPS]


class EntryGate:
    """Pool entry for a child of `parent` of `chars` characters; `members` is the pool."""

    def __init__(self, gate: Gate, members: Sequence[Scored], chars: int) -> None:
        self.test = gate.pool_test()
        self.repeats = gate.repeats
        self.members = list(members)
        self.chars = chars

    def _rival(self, results: Mapping[str, Sequence[float]]) -> Scored | None:
        newest = max((m.version for m in self.members), default=0) + 1
        return dominator(Scored(newest, item_means(results), self.chars), self.members)

    def decide(self, candidate: Mapping[str, Sequence[float]], incumbent: ValResults) -> GateDecision:
        mine, theirs = compared(candidate, incumbent)
        effect = mean_of(mine) - mean_of(theirs)
        won = won_items(candidate, incumbent)
        verdict = self.test.decide(candidate, incumbent)
        test, p, alpha = f"pool entry: {verdict.test} on every item", verdict.p_value, verdict.alpha
        if not won:
            return GateDecision(False, "wins no val item over its parent", test, effect, p, alpha)
        if not verdict.accepted:
            reason = f"wins {len(won)} item(s), but does not pass the gate on every item ({verdict.reason})"
            return GateDecision(False, reason, test, effect, p, alpha)
        rival = self._rival(candidate)
        if rival is not None:
            reason = f"wins {len(won)} item(s) over its parent, but v{rival.version:04d} dominates it"
            return GateDecision(False, reason, test, effect, p, alpha)
        reason = f"enters the pool: wins {len(won)} item(s) over its parent ({verdict.reason}); undominated"
        return GateDecision(True, reason, test, effect, p, alpha)

    def can_pass(self, partial: Mapping[str, Sequence[float]], incumbent: ValResults) -> bool:
        # "Some item is won" and "undominated" only get easier with better outcomes, so full marks
        # on the rest bound them exactly; the pool test bounds itself (`Gate.can_pass`).
        best = optimistic(partial, incumbent, self.repeats)
        if not won_items(best, incumbent) or self._rival(best) is not None:
            return False
        return self.test.can_pass(partial, incumbent)

    def pool_test(self) -> Gate:
        return self
