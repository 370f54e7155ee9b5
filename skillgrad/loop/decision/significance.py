"""The paired significance test of the `paired` gate: an exact, one-sided permutation test of
"the candidate scores higher than the incumbent", stratified by validation item.

Null hypothesis: on every item, the candidate's and the incumbent's outcomes come from the same
distribution, so the item's 2k outcomes (k repeats each) are exchangeable between the two skills.
Its null distribution is enumerated exactly: every way to give k of an item's 2k pooled outcomes
to the candidate, convolved across items. Any statistic gives a test of exact level; this one is
chosen for the effect an edit has.

The statistic is a likelihood ratio against a sparse alternative: an edit changes a few items
strongly (a learned rule fixes the items it applies to) and leaves the rest as they were. Given
its pooled outcomes, an item changed with per-repeat odds ratio `psi` has the candidate's total
`a` with probability proportional to its null probability times psi^a (Fisher's noncentral
hypergeometric), so its likelihood ratio is LR(a) = psi^a / E0[psi^A]; each item is changed with
prior probability `SHARE`, and the statistic is the sum over items of log((1 - SHARE) + SHARE *
LR(a)). psi is 30 at k = 3 and psi^k stays 30^3 for any k: a clean sweep (k/k against 0/k)
weighs the same whatever the repeats, so with many repeats an effect spread thinly over every
item still counts. Against the plain sum of differences (the stratified, Mantel-Haenszel-like
statistic) this keeps an item the candidate wins 3/3 to 0/3 from being drowned by items that are
merely noisy: measured in bench/gate_noise.py, power on a target whose items are mostly reliably
right or wrong rises from 37 % to 81 % at k = 3 on 16 items, at the same exact level.

Scores are quantised to hundredths and each item's statistic to 1/GRID, so the test is exact on
any score in [0, 1] (for the quantised statistic). Unlike a sum of differences, this statistic is
not monotone in the candidate's outcomes (a tie on an item the candidate lost adds null spread),
so racing asks `p_value_floor` for a bound that holds whatever the items not run yet give.

Missing outcomes (a run whose agent failed, `loop/decision/racing.py`) are left out of the pairing: an
item is compared on the outcomes each side has (m for the candidate, n for the incumbent; the
relabellings give m of the m + n pooled outcomes to the candidate, still exact under the null),
and an item one side has no outcome for is not compared at all. psi's unit is set by m, so a
clean sweep weighs the same whatever the counts.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

LEVELS = 100  # a score s in [0, 1] counts as round(100 s)
SHARE = 0.1  # prior share of the items an edit changes
SWEEP_LOG_ODDS = 3 * math.log(30.0)  # k x log(psi): psi = 30 at k = 3 (3/3 against 0/3 is about that)
GRID = 1000  # an item's statistic counts as round(GRID x its log likelihood ratio)


def _log_odds(k: int) -> float:
    """log(psi) per quantised unit of an item's total, for k repeats."""
    return SWEEP_LOG_ODDS / (k * LEVELS)


@dataclass(frozen=True)
class PairedTest:
    effect: float  # mean over items of (candidate mean - incumbent mean)
    p_value: float  # one-sided: P(statistic >= observed) under exchangeability
    items: int  # items compared
    informative: int  # items whose pooled outcomes are not all equal


@dataclass(frozen=True)
class _Item:
    observed: int  # the candidate's quantised statistic on the item
    null: Counter[int]  # quantised statistic -> number of relabellings giving it
    relabellings: int


_Pairs = list[tuple[list[int], list[int]]]  # each item's quantised (candidate, incumbent) outcomes


def _quantise(score: float) -> int:
    return round(min(1.0, max(0.0, float(score))) * LEVELS)


def _relabelled_totals(mine: Sequence[int], theirs: Sequence[int]) -> Counter[int]:
    """The candidate's total under every way to give it m of the item's m + n pooled outcomes."""
    return Counter(sum(group) for group in itertools.combinations([*mine, *theirs], len(mine)))


def _item(mine: Sequence[int], theirs: Sequence[int]) -> _Item:
    k = len(mine)
    totals = _relabelled_totals(mine, theirs)
    count = sum(totals.values())
    # psi^a is at most 30^3 (a clean sweep), so nothing here can overflow
    odds = {total: math.exp(total * _log_odds(k)) for total in totals}
    mean = sum(n * odds[total] for total, n in totals.items()) / count

    def statistic(total: int) -> int:
        return round(GRID * math.log((1 - SHARE) + SHARE * odds[total] / mean))

    null: Counter[int] = Counter()
    for total, n in totals.items():
        null[statistic(total)] += n
    return _Item(statistic(sum(mine)), null, count)


def _pairs(candidate: Mapping[str, Sequence[float]], incumbent: Mapping[str, Sequence[float]]) -> _Pairs:
    """Each compared item's quantised (candidate, incumbent) outcomes: the incumbent's items both
    sides have outcomes for (an item without any, on either side, is left out)."""
    pairs = []
    for item, theirs in incumbent.items():
        ours = candidate.get(item) or []
        if ours and theirs:
            pairs.append(([_quantise(s) for s in ours], [_quantise(s) for s in theirs]))
    return pairs


def paired_effect(
    candidate: Mapping[str, Sequence[float]], incumbent: Mapping[str, Sequence[float]]
) -> float:
    """Mean over the compared items of (candidate mean - incumbent mean), on quantised scores."""
    return _effect(_pairs(candidate, incumbent))


def _effect(pairs: _Pairs) -> float:
    total = sum(sum(mine) / len(mine) - sum(theirs) / len(theirs) for mine, theirs in pairs) / LEVELS
    return total / len(pairs) if pairs else 0.0


def _items(pairs: _Pairs) -> list[_Item]:
    # an item whose outcomes are all equal has likelihood ratio 1 under every relabelling: it adds 0
    return [_item(mine, theirs) for mine, theirs in pairs if len({*mine, *theirs}) > 1]


def _tail(items: list[_Item], threshold: int) -> float:
    """P(sum of the items' null statistics >= threshold), exactly. Partial sums that can no longer
    reach the threshold are dropped and those that reach it whatever follows are counted at once."""
    lows = [min(i.null) for i in items]
    highs = [max(i.null) for i in items]
    reached, partial = 0, Counter({0: 1})
    for index, item in enumerate(items):
        low_rest, high_rest = sum(lows[index + 1 :]), sum(highs[index + 1 :])
        later = math.prod(i.relabellings for i in items[index + 1 :])
        grown: Counter[int] = Counter()
        for total, n in partial.items():
            for value, m in item.null.items():
                if total + value + low_rest >= threshold:
                    reached += n * m * later
                elif total + value + high_rest >= threshold:
                    grown[total + value] += n * m
        partial = grown
    reached += sum(n for total, n in partial.items() if total >= threshold)
    return reached / math.prod(i.relabellings for i in items)


def paired_permutation_test(
    candidate: Mapping[str, Sequence[float]], incumbent: Mapping[str, Sequence[float]]
) -> PairedTest:
    """Compare on the incumbent's items (see `_pairs` for the pairing contract)."""
    pairs = _pairs(candidate, incumbent)
    items = _items(pairs)
    p_value = _tail(items, sum(i.observed for i in items))
    return PairedTest(_effect(pairs), p_value, len(pairs), len(items))


def _full_marks_tail(known: Sequence[float], theirs: Sequence[float], repeats: int) -> float:
    """P(A >= a) on one item whose candidate has `known` outcomes and full marks on the rest of
    its `repeats`: the item's own one-sided p-value, which no other outcome of the rest makes
    smaller (for one item every increasing statistic of a gives this p-value, and a sum of
    differences is monotone)."""
    mine = [_quantise(s) for s in known] + [LEVELS] * (repeats - len(known))
    totals = _relabelled_totals(mine, [_quantise(s) for s in theirs])
    return sum(n for total, n in totals.items() if total >= sum(mine)) / sum(totals.values())


def p_value_floor(
    partial: Mapping[str, Sequence[float]], incumbent: Mapping[str, Sequence[float]], repeats: int
) -> float:
    """A lower bound on the p-value over every outcome of what `partial` has not run yet (each
    item ends with `repeats` outcomes); the larger of two. A finished item counts as in the test,
    its p-value over those items p_R.

    - Product: the p-value is at least P(every item's statistic reaches its observed value), that
      is p_R times each unfinished item's own one-sided p-value, and that is least with full marks
      on the item's outcomes still to run (`_full_marks_tail`).
    - Gap: an unfinished item's observed statistic is at most log((1 - SHARE) + SHARE x
      psi^(m h / (m + n))) for the incumbent's n outcomes, h short of full marks in total, and the
      candidate's m (E0[psi^A] >= psi^E0[A], and E0[A] is m / (m + n) of the pooled total; m = n:
      psi^(h / 2)), and its null statistic at least log(1 - SHARE): the p-value is at least the
      finished items' with every such gap added to the observed sum.

    An item the incumbent has full marks (or no outcome) on cannot help (the candidate ties it, or
    its total is the least its relabellings give; or it is not compared), so it adds to neither."""
    done = {item: partial[item] for item in incumbent if len(partial.get(item, ())) >= repeats}
    items = _items(_pairs(done, incumbent))
    observed = sum(i.observed for i in items)
    gap, product = 0, 1.0
    for item, theirs in incumbent.items():
        headroom = len(theirs) * LEVELS - sum(_quantise(s) for s in theirs)
        if item in done or headroom <= 0:
            continue
        product *= _full_marks_tail(partial.get(item, []), theirs, repeats)
        exponent = repeats * headroom / (repeats + len(theirs)) * _log_odds(repeats)
        best = math.log1p(SHARE / (1 - SHARE) * math.exp(exponent))
        gap += math.ceil(GRID * best) + 1  # +1: each side of the gap is rounded to the grid
    return max(_tail(items, observed + gap), _tail(items, observed) * product)
