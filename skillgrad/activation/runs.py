"""What `skillgrad train` builds for `optimizer.target`: the trainer over the tasks (`body`), over
the triggers (`description`), or over the tasks with description steps interleaved (`both`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from skillgrad.activation.agents import activation_agent, activation_settings
from skillgrad.activation.both import Alternating
from skillgrad.activation.description import with_front_matter
from skillgrad.activation.world import ActivationPlan, trigger_world
from skillgrad.backends.interface import Agent
from skillgrad.benchmarks.contract import Benchmark
from skillgrad.budget import Ledger
from skillgrad.config import Config
from skillgrad.loop.custom_strategies import Custom
from skillgrad.loop.event_bus import Events
from skillgrad.loop.stages import Roles
from skillgrad.loop.state import TrainState
from skillgrad.loop.strategies import Strategies
from skillgrad.loop.trainer import Trainer
from skillgrad.run_folder import RunDir


def activation_roles(
    cfg: Config, plan: ActivationPlan | None
) -> Callable[[Agent], tuple[Agent, dict[str, Any]]] | None:
    """`build_roles(activation=...)`: the target for activation runs, and what shapes its runs."""
    if plan is None:
        return None
    return lambda target: (
        activation_agent(cfg, target, plan.distractors),
        activation_settings(cfg, plan.distractors),
    )


def make_trainer(
    cfg: Config,
    benchmark: Benchmark | None,
    roles: Roles,
    run: RunDir,
    events: Events,
    ledger: Ledger,
    skill: str,
    plan: ActivationPlan | None,
    part: TrainState | None = None,
    custom: Custom | None = None,
) -> Trainer:
    """The run's trainer; `part`: a resumed `both` run's description checkpoint; `custom`: the
    strategies the caller handed in as objects (a body run's alone: api/strategy_args.py)."""
    if plan is None:
        assert benchmark is not None
        strategies = Strategies.from_config(cfg.optimizer, custom)
        return Trainer(cfg, benchmark, roles, run, events, ledger, skill, strategies)
    world = trigger_world(cfg, plan, roles, skill)
    if cfg.optimizer.target == "description":
        return Trainer(
            world.cfg, world.benchmark, world.roles, run, events, ledger, world.skill, world.strategies
        )
    assert benchmark is not None, "optimizer.target: both trains the body on the benchmark's tasks"
    both = Alternating(cfg, world, benchmark, roles, run, events, ledger, part)
    strategies = Strategies.from_config(cfg.optimizer)
    skill = with_front_matter(skill, cfg.skill.name)
    return Trainer(cfg, benchmark, roles, run, events, ledger, skill, strategies, interleaved=both)
