"""The trigger world: what the trainer is given to train the description instead of the body.

Its benchmark is the trigger set (`TriggerBenchmark`), its target the activation agent (the
skill unnamed among the distractors, or a router), its analyst the description analyst, its
metric trigger F1, its gate the paired gate plus "F1 rises", its val and test repeats
`benchmark.trigger_repeats`. Everything else (rollouts, racing validation, the call cache, the
run folder, resume, the report) is the trainer's own. `plan_activation` checks the user's input
before any run folder exists.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from skillgrad.activation.analyst import DescriptionAnalyst
from skillgrad.activation.description import description_limit, with_front_matter
from skillgrad.activation.distractors import Distractor, load_distractors
from skillgrad.activation.metrics import TriggerF1, TriggerGate
from skillgrad.activation.triggers import TriggerBenchmark, should_trigger, split_triggers, trigger_pool
from skillgrad.benchmarks.contract import Benchmark
from skillgrad.config import Config
from skillgrad.loop.decision.gate import make_gate
from skillgrad.loop.stages import Roles, TrainingFailed
from skillgrad.loop.strategies import Strategies
from skillgrad.values import Split, Task


@dataclass(frozen=True)
class ActivationPlan:
    """The run's trigger splits and distractors, read and checked up front."""

    splits: dict[Split, list[Task]]
    distractors: list[Distractor]


def plan_activation(cfg: Config, benchmark: Benchmark | None) -> ActivationPlan | None:
    """None when the run trains the body only; UserError for unusable trigger input."""
    if cfg.optimizer.target == "body":
        return None
    distractors = load_distractors(cfg)
    return ActivationPlan(split_triggers(trigger_pool(cfg, benchmark), cfg), distractors)


def input_paths(cfg: Config) -> list[tuple[str, Path, bool]]:
    """The paths an activation run reads, each as (its key, the path, whether it is a folder), for
    the caller to check as it checks every path argument before a run starts."""
    if cfg.optimizer.target == "body":
        return []
    b = cfg.benchmark
    rows: list[tuple[str, str | None, bool]] = [
        ("benchmark.triggers", b.triggers, False),
        ("benchmark.trigger_negatives", None if b.triggers else b.trigger_negatives, False),
        ("benchmark.distractor_skills", b.distractor_skills, True),
    ]
    return [(key, cfg.resolve_path(value), folder) for key, value, folder in rows if value]


def needs_tasks(cfg: Config) -> bool:
    """Whether the run reads the benchmark's tasks (a description run with its own trigger file does not)."""
    return not (cfg.optimizer.target == "description" and cfg.benchmark.triggers)


@dataclass(frozen=True)
class TriggerWorld:
    cfg: Config  # the config as the description's trainer reads it (trigger_config)
    benchmark: TriggerBenchmark
    roles: Roles
    strategies: Strategies
    skill: str  # the initial skill, its description on one front-matter line


def trigger_config(cfg: Config, splits: dict[Split, list[Task]]) -> Config:
    """The user's config with the trigger set's sizes and repeats, the paired gate, and one analyst
    per batch (a description is written from all of a step's queries)."""
    view = cfg.model_copy(deep=True)
    view.benchmark.train_size = len(splits["train"])
    view.benchmark.val_size = len(splits["val"])
    view.benchmark.test_size = len(splits["test"])
    view.optimizer.val_repeats = cfg.benchmark.trigger_repeats
    view.optimizer.gate = "paired"
    view.optimizer.reask_dropped = False  # a description is rewritten whole: nothing to ask afresh
    # its analyst reads the queries and a session's first tool calls, not a workspace of sessions
    view.optimizer.reflection = "digest"
    view.train.minibatch_size = cfg.train.batch_size
    # a query's answer is whether the skill loads: no form to fix, no worked examples to show
    view.optimizer.form_fix, view.optimizer.form_summary, view.skill.max_examples = "none", False, 0
    return view


def trigger_world(cfg: Config, plan: ActivationPlan, roles: Roles, skill: str) -> TriggerWorld:
    if roles.trigger_agent is None:
        raise TrainingFailed("optimizer.target needs the activation agent, but no such role was built")
    view = trigger_config(cfg, plan.splits)
    installed = [cfg.skill.name, *(d.name for d in plan.distractors)]
    benchmark = TriggerBenchmark(plan.splits, cfg.skill.name, installed, roles.target_is_harness)
    labels = {t.id: should_trigger(t) for tasks in plan.splits.values() for t in tasks}
    f1 = TriggerF1(labels)
    base = Strategies.from_config(view.optimizer)
    strategies = replace(
        base,
        gate=TriggerGate(
            make_gate("paired", cfg.optimizer.gate_alpha, repeats=view.optimizer.val_repeats), f1
        ),
        analyst=DescriptionAnalyst(cfg.skill.name, plan.distractors, description_limit(cfg)),
        metric=f1,
        test_repeats=cfg.benchmark.trigger_repeats,
    )
    world_roles = replace(roles, agent=roles.trigger_agent, judge=None)
    return TriggerWorld(view, benchmark, world_roles, strategies, with_front_matter(skill, cfg.skill.name))
