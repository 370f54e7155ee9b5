"""Which frontier member the next step starts from (`optimizer.parent`), each rule a function of
the frontier and a seeded random generator, chosen by name in `PARENTS`.

- `best`: the highest validation mean (a tie: the smaller skill, then the earlier).
- `pareto`: drawn with a weight for the items the member wins: an item whose top score k members
  share counts 1/k to each (alone: 1); an item every member ties on counts for none. GEPA's rule,
  except that a shared win still counts (on pass/fail items a strict "alone" starves the member
  that wins most items together with others).
- `lexicase`: the items in a random order; keep the members with the top score on each in turn
  until one is left (a tie after every item: drawn among those left).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Protocol

from skillgrad.loop.search.dominance import Scored, winners


class ParentRule(Protocol):
    """How the frontier search picks a step's parent (`optimizer.parent`, or `parent=` an object):
    `rule(members, rng)` returns one of `members` (the frontier: the pool's members no other
    dominates, each a `Scored` with its version, per-item val means and size), drawn with `rng`
    alone, so a resumed run draws what the uninterrupted one drew (a seeded generator of the step:
    `parent_rng`). A rule of the caller's that raises, or returns no member, stops the run with
    `TrainingFailed` naming it (loop/custom_strategies.py)."""

    def __call__(self, members: Sequence[Scored], rng: random.Random, /) -> Scored: ...


def best(members: Sequence[Scored], rng: random.Random) -> Scored:
    return min(members, key=lambda m: (-m.mean, m.rank))


def item_weights(members: Sequence[Scored]) -> dict[int, float]:
    """Version -> the items it wins (shared wins split; items all tie on left out)."""
    weights = {m.version: 0.0 for m in members}
    items = sorted({item for m in members for item in m.means})
    for item in items:
        top = winners(members, item)
        if len(top) < len(members):
            for m in top:
                weights[m.version] += 1 / len(top)
    return weights


def pareto(members: Sequence[Scored], rng: random.Random) -> Scored:
    ordered = sorted(members, key=lambda m: m.version)
    weights = item_weights(ordered)
    if not any(weights.values()):
        return rng.choice(ordered)
    return rng.choices(ordered, weights=[weights[m.version] for m in ordered])[0]


def lexicase(members: Sequence[Scored], rng: random.Random) -> Scored:
    left = sorted(members, key=lambda m: m.version)
    items = sorted({item for m in members for item in m.means})
    rng.shuffle(items)
    for item in items:
        if len(left) == 1:
            break
        left = winners(left, item)
    return left[0] if len(left) == 1 else rng.choice(left)


PARENTS: dict[str, ParentRule] = {"best": best, "pareto": pareto, "lexicase": lexicase}


def parent_rng(seed: int, step: int) -> random.Random:
    """The generator of `step`'s draw: a function of the run's seed and the step alone, so a
    resumed run draws exactly what the uninterrupted one drew."""
    return random.Random(f"{seed}:parent:{step}")
