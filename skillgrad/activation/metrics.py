"""Trigger figures from per-item results, and the gate that keeps a description.

A query's results are its runs' scores (1: loaded exactly when it should be), so its trigger rate
is their mean for a query that should load the skill and one minus it for one that should not.
Counts weigh every query once, whatever its repeats: a query that should load the skill adds its
rate to the true positives and the rest to the false negatives; one that should not adds its rate
to the false positives and the rest to the true negatives. F1 rises with every item's score (a
miss fixed, a wrong trigger avoided), so full marks on what has not run bound it exactly, which
racing needs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from skillgrad.loop.decision.gate import Gate, GateDecision, ValResults, compared, optimistic

EPSILON = 1e-9


@dataclass(frozen=True)
class Confusion:
    tp: float = 0.0
    fp: float = 0.0
    fn: float = 0.0
    tn: float = 0.0

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 0.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 0.0

    @property
    def f1(self) -> float:
        denominator = 2 * self.tp + self.fp + self.fn
        return 2 * self.tp / denominator if denominator else 1.0  # nothing to find, nothing found

    def to_json(self) -> dict[str, Any]:
        figures = {"precision": self.precision, "recall": self.recall, "f1": self.f1}
        counts = {"tp": self.tp, "fp": self.fp, "fn": self.fn, "tn": self.tn}
        return {k: round(v, 4) for k, v in {**counts, **figures}.items()}


def trigger_rate(scores: Sequence[float], should: bool) -> float:
    """The share of a query's runs that loaded the skill."""
    right = sum(scores) / len(scores)
    return right if should else 1.0 - right


def confusion(results: Mapping[str, Sequence[float]], labels: Mapping[str, bool]) -> Confusion:
    """The trigger counts of `results` (items without runs or without a label are left out)."""
    tp = fp = fn = tn = 0.0
    for item, scores in results.items():
        if not scores or item not in labels:
            continue
        rate = trigger_rate(scores, labels[item])
        if labels[item]:
            tp, fn = tp + rate, fn + 1.0 - rate
        else:
            fp, tn = fp + rate, tn + 1.0 - rate
    return Confusion(tp, fp, fn, tn)


class TriggerF1:
    """The run's metric (`Strategies.metric`): trigger F1 over the labelled queries."""

    def __init__(self, labels: Mapping[str, bool]) -> None:
        self.labels = dict(labels)

    def __call__(self, results: Mapping[str, Sequence[float]]) -> float:
        return confusion(results, self.labels).f1


class TriggerGate:
    """Keep a description only when `inner` (the paired gate) accepts it and trigger F1 over the
    incumbent's items (those both have outcomes for) rises."""

    def __init__(self, inner: Gate, f1: TriggerF1) -> None:
        self.inner = inner
        self.f1 = f1
        self.repeats = inner.repeats

    def decide(self, candidate: Mapping[str, Sequence[float]], incumbent: ValResults) -> GateDecision:
        inner = self.inner.decide(candidate, incumbent)
        mine, base = compared(candidate, incumbent)
        ours, theirs = self.f1(mine), self.f1(base)
        rises = ours > theirs + EPSILON
        relation = ">" if rises else ("=" if abs(ours - theirs) <= EPSILON else "<")
        reason = f"trigger F1 {ours:.4f} {relation} current {theirs:.4f}; {inner.reason}"
        accepted = inner.accepted and rises
        return GateDecision(
            accepted, reason, f"trigger F1 rises and {inner.test}", ours - theirs, inner.p_value, inner.alpha
        )

    def can_pass(self, partial: Mapping[str, Sequence[float]], incumbent: ValResults) -> bool:
        if not self.inner.can_pass(partial, incumbent):
            return False
        mine, base = compared(optimistic(partial, incumbent, self.repeats), incumbent)
        return self.f1(mine) > self.f1(base) + EPSILON

    def pool_test(self) -> Gate:
        # A description trains with the greedy search only (config/loading.py refuses frontier).
        return self
