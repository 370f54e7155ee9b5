"""The paired significance test of the `paired` gate: an exact, one-sided permutation test of
"the candidate scores higher than the incumbent", stratified by validation item.

Null hypothesis: on every item, the candidate's and the incumbent's outcomes come from the same
distribution, so the item's 2k outcomes (k repeats each) are exchangeable between the two skills.
The statistic is the sum over items of (candidate total - incumbent total); its null
distribution is enumerated exactly: every way to give k of an item's 2k pooled outcomes to the
candidate, convolved across items. With k = 1 this is the paired sign-flip test.

Scores are quantised to hundredths first, so the statistic is an integer and the test is exact
on any score in [0, 1]. Raising any candidate outcome never raises the p-value (for every
relabelling the observed statistic grows at least as much as the relabelled one), which is what
makes racing's "full marks on the rest" bound exact.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

LEVELS = 100  # a score s in [0, 1] counts as round(100 s)


@dataclass(frozen=True)
class PairedTest:
    effect: float  # mean over items of (candidate mean - incumbent mean)
    p_value: float  # one-sided: P(statistic >= observed) under exchangeability
    items: int  # items compared
    informative: int  # items whose pooled outcomes are not all equal


def _quantise(score: float) -> int:
    return round(min(1.0, max(0.0, float(score))) * LEVELS)


def _item_null(pool: Sequence[int], k: int) -> Counter[int]:
    """Counts of the item's statistic over every choice of k pooled outcomes for the candidate."""
    total = sum(pool)
    return Counter(2 * sum(group) - total for group in itertools.combinations(pool, k))


def _convolve(left: Counter[int], right: Counter[int]) -> Counter[int]:
    out: Counter[int] = Counter()
    for a, ca in left.items():
        for b, cb in right.items():
            out[a + b] += ca * cb
    return out


def paired_permutation_test(
    candidate: Mapping[str, Sequence[float]], incumbent: Mapping[str, Sequence[float]]
) -> PairedTest:
    """Compare on the incumbent's items; every item needs the same number of outcomes on both
    sides (ValueError otherwise: an unpaired comparison is a caller bug, not a statistic)."""
    observed = 0
    effect = 0.0
    null: Counter[int] = Counter({0: 1})
    informative = 0
    for item, theirs in incumbent.items():
        ours = candidate.get(item)
        if ours is None or len(ours) != len(theirs) or not theirs:
            raise ValueError(f"item {item!r}: candidate and incumbent need the same number of outcomes")
        k = len(theirs)
        mine, other = [_quantise(s) for s in ours], [_quantise(s) for s in theirs]
        observed += sum(mine) - sum(other)
        effect += (sum(mine) - sum(other)) / (k * LEVELS)
        pool = mine + other
        if len(set(pool)) > 1:  # an item whose outcomes are all equal adds only zeros
            informative += 1
            null = _convolve(null, _item_null(pool, k))
    total = sum(null.values())
    tail = sum(count for value, count in null.items() if value >= observed)
    n = len(incumbent)
    return PairedTest(effect / n if n else 0.0, tail / total, n, informative)
