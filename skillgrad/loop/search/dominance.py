"""Item-by-item dominance between scored skills, the frontier it defines, and who wins which item.

A skill's score on an item is its mean over the item's repeats. `a` dominates `b` when it scores
at least as well on every item and better on one; on a tie on every item the smaller skill (fewer
characters; then the earlier one) dominates, so the frontier keeps one of identical scorers and
pushes against bloat.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

EPS = 1e-9  # scores closer than this are equal


def item_means(results: Mapping[str, Sequence[float]]) -> dict[str, float]:
    """Each item's mean over its repeats (an item without outcomes is left out)."""
    return {item: sum(scores) / len(scores) for item, scores in results.items() if scores}


@dataclass(frozen=True)
class Scored:
    """A skill as dominance sees it: its version, per-item means and size."""

    version: int
    means: Mapping[str, float]
    chars: int

    @property
    def mean(self) -> float:
        return sum(self.means.values()) / len(self.means) if self.means else 0.0

    @property
    def rank(self) -> tuple[int, int]:
        """Who wins a tie on every item: the smaller skill, then the earlier one."""
        return (self.chars, self.version)


def dominates(a: Scored, b: Scored) -> bool:
    """True when `a` is at least as good as `b` on every item of `b` and better on one, or ties
    it on every item and is smaller (then earlier)."""
    diffs = [a.means.get(item, 0.0) - score for item, score in b.means.items()]
    if any(d < -EPS for d in diffs):
        return False
    return any(d > EPS for d in diffs) or a.rank < b.rank


def dominator(candidate: Scored, members: Sequence[Scored]) -> Scored | None:
    """The first member that dominates `candidate`, or None."""
    return next((m for m in members if m.version != candidate.version and dominates(m, candidate)), None)


def frontier(members: Sequence[Scored]) -> list[Scored]:
    """The members no other member dominates, in version order."""
    return sorted((m for m in members if dominator(m, members) is None), key=lambda m: m.version)


def winners(members: Sequence[Scored], item: str) -> list[Scored]:
    """The members with the top score on `item`."""
    top = max(m.means.get(item, 0.0) for m in members)
    return [m for m in members if m.means.get(item, 0.0) >= top - EPS]
