"""The run's decisions, each a small object chosen by its config name, built here and only here
and handed to the trainer: the validation gate, the learning-rate schedule, how patches merge,
how merged edits rank, how an analyst proposes edits (optimizer.edit_mode), what skillgrad itself
proposes when a step's answers have the wrong form (optimizer.form_fix), how the run searches
the space of skills (optimizer.search: a strategy the trainer builds with its context), what a
skill's score is over its per-item results (the mean, or trigger F1 for a description:
skillgrad.activation) and how often each test item runs."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from skillgrad.config import OptimizerConfig
from skillgrad.loop.formfix import FORM_FIXES, FormFix, NoFix
from skillgrad.loop.gate import Gate, make_gate, mean_of
from skillgrad.loop.merge import MERGERS, MergedEdit, Patch
from skillgrad.loop.rewrite import ANALYSTS, Analyst
from skillgrad.loop.search.base import Search, SearchContext
from skillgrad.loop.search.frontier import FrontierSearch
from skillgrad.loop.search.greedy import GreedySearch
from skillgrad.loop.selection import RANKERS, SCHEDULES, Schedule


class Merger(Protocol):
    def merge(self, patches: list[Patch]) -> list[MergedEdit]: ...


class Ranker(Protocol):
    def rank(self, edits: list[MergedEdit]) -> list[MergedEdit]: ...


@dataclass(frozen=True)
class Strategies:
    gate: Gate
    schedule: Schedule
    merger: Merger
    ranker: Ranker
    analyst: Analyst
    search: Callable[[SearchContext], Search]
    # A skill's score over its per-item results (val and test): what the run reports and keeps the best of.
    metric: Callable[[Mapping[str, Sequence[float]]], float] = mean_of
    test_repeats: int = 1  # runs of each test item per tested skill
    form_fix: FormFix = NoFix()  # skillgrad's own edits for a step whose answers have the wrong form

    @classmethod
    def from_config(cls, opt: OptimizerConfig) -> Strategies:
        return cls(
            gate=make_gate(opt.gate, opt.gate_alpha, opt.gate_min_gain, opt.val_repeats),
            schedule=SCHEDULES[opt.lr_schedule],
            merger=MERGERS[opt.merge](),
            ranker=RANKERS[opt.rank](),
            analyst=ANALYSTS[opt.edit_mode],
            search=SEARCHES[opt.search],
            form_fix=FORM_FIXES[opt.form_fix],
        )


SEARCHES: dict[str, Callable[[SearchContext], Search]] = {"greedy": GreedySearch, "frontier": FrontierSearch}
