"""The run's decisions, each a small object chosen by its config name, built here and only here
and handed to the trainer: the validation gate, the learning-rate schedule, how patches merge,
how merged edits rank, and how an analyst proposes edits (optimizer.edit_mode)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from skillgrad.config import OptimizerConfig
from skillgrad.loop.gate import Gate, make_gate
from skillgrad.loop.merge import MERGERS, MergedEdit, Patch
from skillgrad.loop.rewrite import ANALYSTS, Analyst
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

    @classmethod
    def from_config(cls, opt: OptimizerConfig) -> Strategies:
        return cls(
            gate=make_gate(opt.gate, opt.gate_alpha, opt.gate_min_gain),
            schedule=SCHEDULES[opt.lr_schedule],
            merger=MERGERS[opt.merge](),
            ranker=RANKERS[opt.rank](),
            analyst=ANALYSTS[opt.edit_mode],
        )
