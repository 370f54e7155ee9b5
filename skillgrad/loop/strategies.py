"""The run's decisions, each a small object chosen by its config name, built here and only here
and handed to the trainer: the validation gate and what its tie comes to, the learning-rate
schedule, how patches merge, how merged edits rank, how an analyst proposes edits
(optimizer.edit_mode), what skillgrad itself proposes when a step's answers have the wrong
form (optimizer.form_fix), how the run searches the space of skills (optimizer.search: a
strategy the trainer builds with its context), what a skill's score is over its per-item
results (the mean, or trigger F1 for a description: skillgrad.activation) and how often each
test item runs. A gate, search or parent rule the caller
handed in as an object (`loop/custom_strategies.py`) takes the place of the configured one."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from skillgrad.config import Config, OptimizerConfig
from skillgrad.errors import UserError
from skillgrad.loop.custom_strategies import Custom, label, lacks
from skillgrad.loop.decision.gate import Gate, make_gate, mean_of
from skillgrad.loop.decision.tie_break import TIE_BREAKS, NoTieBreak, TieBreak
from skillgrad.loop.formfix import FORM_FIXES, FormFix, NoFix
from skillgrad.loop.patch_merge import MERGERS, MergedEdit, Patch
from skillgrad.loop.rewrite import ANALYSTS, Analyst
from skillgrad.loop.search.frontier import FrontierSearch
from skillgrad.loop.search.greedy import GreedySearch
from skillgrad.loop.search.parents import PARENTS, ParentRule
from skillgrad.loop.search.protocol import Search, SearchContext, SearchSettings
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
    parent: ParentRule = PARENTS["lexicase"]  # the frontier search's draw of each step's parent
    parent_name: str = "lexicase"  # its name (progress, summary.json)
    gate_name: str | None = None  # gate.json's `gate`: a caller's gate's label; None: optimizer.gate
    # what a tie of the configured gate comes to (a caller's gate decides its ties itself)
    tie_break: TieBreak = NoTieBreak()

    @classmethod
    def from_config(cls, opt: OptimizerConfig, custom: Custom | None = None) -> Strategies:
        """The optimizer section's strategies, each object of `custom` in place of its name's."""
        custom = custom or Custom()
        gate = make_gate(opt.gate, opt.gate_alpha, opt.gate_min_gain, opt.val_repeats)
        own_gate = custom.gate_for(opt.val_repeats)
        return cls(
            gate=own_gate or gate,
            schedule=SCHEDULES[opt.lr_schedule],
            merger=MERGERS[opt.merge](),
            ranker=RANKERS[opt.rank](),
            analyst=ANALYSTS[opt.edit_mode],
            search=custom.search or SEARCHES[opt.search],
            form_fix=FORM_FIXES[opt.form_fix],
            parent=custom.rule() or PARENTS[opt.parent],
            parent_name=custom.labels.get("parent", opt.parent),
            gate_name=custom.labels.get("gate"),
            tie_break=NoTieBreak() if own_gate else TIE_BREAKS[opt.tie_break],
        )


SEARCHES: dict[str, Callable[[SearchContext], Search]] = {"greedy": GreedySearch, "frontier": FrontierSearch}


def search_settings(cfg: Config, strategies: Strategies, resamples: bool) -> SearchSettings:
    """What a search strategy reads of the run: from the config, and the parent rule; `resamples`:
    whether asking the target again can answer differently (then no train pass is replayed)."""
    return SearchSettings(
        seed=cfg.train.seed,
        merge_every=cfg.optimizer.merge_every,
        parent=strategies.parent,
        parent_name=strategies.parent_name,
        replays=cfg.cache.enabled and not resamples,
        max_chars=cfg.skill.max_chars,
        effort=cfg.model.effort_for("optimizer"),
    )


def make_search(factory: Callable[[SearchContext], Search], ctx: SearchContext) -> Search:
    """The run's search strategy, built from `ctx`; one that a caller's factory (search=) built
    without every member of the Search protocol is a UserError naming what it lacks."""
    made = factory(ctx)
    if not isinstance(made, Search):
        raise UserError(
            f"search={label(factory)}: what it built ({type(made).__name__}) lacks "
            f"{', '.join(lacks(made, Search))} of skillgrad.Search; implement them"
        )
    return made
