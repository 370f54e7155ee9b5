"""skillgrad: train an agent's SKILL.md from scored runs.

The public API (docs/api.md): `train`, `evaluate` and `estimate`, their results, the values a
benchmark or a scorer exchanges, the strategies a caller may hand in as objects, progress events
and the errors they raise. Names load on first use, so
`import skillgrad` (and the CLI's start) stays light.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name -> the module that defines it
_EXPORTS: dict[str, str] = {
    "train": "skillgrad.api.run",
    "evaluate": "skillgrad.api.run",
    "estimate": "skillgrad.api.estimate",
    "Estimate": "skillgrad.api.estimate",
    "RoleEstimate": "skillgrad.api.estimate",
    "TrainResult": "skillgrad.api.results",
    "EvalResult": "skillgrad.api.results",
    "TaskResult": "skillgrad.api.results",
    "Spending": "skillgrad.api.results",
    "RoleUsage": "skillgrad.api.results",
    "Skill": "skillgrad.api.skill",
    "Event": "skillgrad.api.events",
    "EventKind": "skillgrad.api.events",
    "progress_printer": "skillgrad.api.events",
    "Config": "skillgrad.config",
    "Task": "skillgrad.values",
    "Score": "skillgrad.values",
    "AgentResult": "skillgrad.values",
    "Usage": "skillgrad.values",
    "Benchmark": "skillgrad.benchmarks.contract",
    "AgenticBenchmark": "skillgrad.benchmarks.contract",
    "SkillPackage": "skillgrad.package.model",
    "Agent": "skillgrad.backends.interface",
    "Gate": "skillgrad.loop.custom_strategies",
    "GateDecision": "skillgrad.loop.decision.gate",
    "Search": "skillgrad.loop.search.protocol",
    "SearchContext": "skillgrad.loop.search.protocol",
    "SearchSettings": "skillgrad.loop.search.protocol",
    "ParentRule": "skillgrad.loop.search.parents",
    "Scored": "skillgrad.loop.search.dominance",
    "SkillgradError": "skillgrad.errors",
    "UserError": "skillgrad.errors",
    "BudgetExceeded": "skillgrad.errors",
    "BackendError": "skillgrad.errors",
    "FatalBackendError": "skillgrad.errors",
    "StructuredOutputError": "skillgrad.errors",
    "TrainingFailed": "skillgrad.errors",
    "EvaluationFailed": "skillgrad.errors",
    "Interrupted": "skillgrad.errors",
}

__all__ = ["__version__", *_EXPORTS]

if TYPE_CHECKING:
    from skillgrad.api.estimate import Estimate as Estimate
    from skillgrad.api.estimate import RoleEstimate as RoleEstimate
    from skillgrad.api.estimate import estimate as estimate
    from skillgrad.api.events import Event as Event
    from skillgrad.api.events import EventKind as EventKind
    from skillgrad.api.events import progress_printer as progress_printer
    from skillgrad.api.results import EvalResult as EvalResult
    from skillgrad.api.results import RoleUsage as RoleUsage
    from skillgrad.api.results import Spending as Spending
    from skillgrad.api.results import TaskResult as TaskResult
    from skillgrad.api.results import TrainResult as TrainResult
    from skillgrad.api.run import evaluate as evaluate
    from skillgrad.api.run import train as train
    from skillgrad.api.skill import Skill as Skill
    from skillgrad.backends.interface import Agent as Agent
    from skillgrad.benchmarks.contract import AgenticBenchmark as AgenticBenchmark
    from skillgrad.benchmarks.contract import Benchmark as Benchmark
    from skillgrad.config import Config as Config
    from skillgrad.errors import BackendError as BackendError
    from skillgrad.errors import BudgetExceeded as BudgetExceeded
    from skillgrad.errors import EvaluationFailed as EvaluationFailed
    from skillgrad.errors import FatalBackendError as FatalBackendError
    from skillgrad.errors import Interrupted as Interrupted
    from skillgrad.errors import SkillgradError as SkillgradError
    from skillgrad.errors import StructuredOutputError as StructuredOutputError
    from skillgrad.errors import TrainingFailed as TrainingFailed
    from skillgrad.errors import UserError as UserError
    from skillgrad.loop.custom_strategies import Gate as Gate
    from skillgrad.loop.decision.gate import GateDecision as GateDecision
    from skillgrad.loop.search.dominance import Scored as Scored
    from skillgrad.loop.search.parents import ParentRule as ParentRule
    from skillgrad.loop.search.protocol import Search as Search
    from skillgrad.loop.search.protocol import SearchContext as SearchContext
    from skillgrad.loop.search.protocol import SearchSettings as SearchSettings
    from skillgrad.package.model import SkillPackage as SkillPackage
    from skillgrad.values import AgentResult as AgentResult
    from skillgrad.values import Score as Score
    from skillgrad.values import Task as Task
    from skillgrad.values import Usage as Usage


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'skillgrad' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
