"""The strategies a Python caller hands in as objects (`skillgrad.train(gate=..., search=...,
parent=..., agent=...)`), and the adapters that hold them to the loop's contracts.

The public protocols are small; each adapter turns what the caller's object may get wrong into
the loop's own error contract, so a caller's bug never looks like one of skillgrad's:

- `Gate` (public): `decide` alone. `UserGate` is the loop's gate (`loop/decision/gate.py`) around it: the
  repeats are `optimizer.val_repeats`; `can_pass` is the object's own when it has one, else True
  (racing then never stops a candidate early, and the `no_headroom` stop never fires: both need a
  bound only the gate can give); the frontier's pool test is the gate itself. What `decide` or
  `can_pass` raises, or a `decide` that returns no `GateDecision`, stops the run as
  `TrainingFailed` naming the gate (summary.json says `stopped: error`).
- `ParentRule` (`search/parents.py`): a rule that raises or returns no member of the frontier
  stops the run the same way (`checked_rule`).
- `Agent` (`backends/interface.py`): `UserAgent` keeps the Agent contract for it: what it raises is
  a failed run of that task (as for any backend: `loop/rollout.py`), a `FatalBackendError`
  excepted, and a reply that is no `AgentResult` is a failed run saying so; a result whose
  usage counts no call is one call of unknown cost (unless it states a cost). It is the target
  alone: not cached unless it names a `cache_identity` (see `session/build.py`).

The run folder records what the config cannot: each object's `label` in `objects.json`, which a
resume checks (`session/resume.check_objects`)."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from skillgrad.backends.interface import Agent
from skillgrad.errors import FatalBackendError, TrainingFailed
from skillgrad.loop.accounting import BudgetStop
from skillgrad.loop.decision.gate import Gate as LoopGate
from skillgrad.loop.decision.gate import GateDecision, ValResults
from skillgrad.loop.search.dominance import Scored
from skillgrad.loop.search.parents import ParentRule
from skillgrad.loop.search.protocol import Search, SearchContext
from skillgrad.values import AgentResult, Task

SearchFactory = Callable[[SearchContext], Search]


@runtime_checkable
class Gate(Protocol):
    """A validation gate: whether a candidate skill replaces the incumbent.

    `decide` gets each side's per-item validation outcomes (task id -> one score in [0, 1] per
    repeat, `optimizer.val_repeats` of them; the incumbent's items, each side with the outcomes it
    has: a run whose agent failed is left out, and an item neither side has any of is not there)
    and returns a `GateDecision`: `accepted`, a one-line `reason` (history.jsonl, gate.json, the
    report), the `test` it made and its `effect` (p_value and alpha where it has them). It is pure:
    the same outcomes give the same decision, and it changes neither mapping.

    Optional: `can_pass(partial, incumbent) -> bool`, False only when no outcome of the runs not
    made yet could make `decide` accept; racing validation and the `no_headroom` stop use it
    (without it both are off for the gate).

    Errors: `decide` and `can_pass` raise nothing. Whatever they raise, or a `decide` that
    returns no GateDecision, stops the run with `TrainingFailed` naming the gate; the finished
    steps are kept (summary.json `stopped: error`) and `resume=True` continues once it is fixed."""

    def decide(
        self, candidate: Mapping[str, Sequence[float]], incumbent: Mapping[str, Sequence[float]]
    ) -> GateDecision: ...


def label(obj: Any) -> str:
    """How the run folder names an object the config cannot: `python:<module>.<qualname>` of a
    function or a class, else of the object's class."""
    named = obj if isinstance(obj, type) or (callable(obj) and hasattr(obj, "__qualname__")) else type(obj)
    module = getattr(named, "__module__", None)
    qualname = getattr(named, "__qualname__", type(obj).__qualname__)
    return f"python:{module}.{qualname}" if module else f"python:{qualname}"


def lacks(obj: Any, protocol: type) -> list[str]:
    """The members of `protocol` (its methods and attributes) that `obj` does not have."""
    names = {*getattr(protocol, "__annotations__", {})}
    names |= {n for n, v in vars(protocol).items() if callable(v) and not n.startswith("_")}
    return sorted(n for n in names if not hasattr(obj, n))


def _copied(results: Mapping[str, Sequence[float]]) -> dict[str, list[float]]:
    return {item: list(scores) for item, scores in results.items()}


def _failed(what: str, exc: Exception) -> TrainingFailed:
    return TrainingFailed(f"{what} raised {type(exc).__name__}: {str(exc)[:300]}; fix it and resume the run")


class UserGate:
    """The loop's gate around a caller's `Gate` (see the module docstring)."""

    def __init__(self, inner: Gate, repeats: int | None, name: str) -> None:
        self.inner, self.repeats, self.name = inner, repeats, name

    def decide(self, candidate: Mapping[str, Sequence[float]], incumbent: ValResults) -> GateDecision:
        try:
            decision = self.inner.decide(_copied(candidate), _copied(incumbent))
        except (BudgetStop, FatalBackendError):
            raise
        except Exception as exc:
            raise _failed(f"gate {self.name}: decide", exc) from exc
        if not isinstance(decision, GateDecision):
            raise TrainingFailed(
                f"gate {self.name}: decide returned {type(decision).__name__}, not a skillgrad.GateDecision"
            )
        return decision

    def can_pass(self, partial: Mapping[str, Sequence[float]], incumbent: ValResults) -> bool:
        bound = getattr(self.inner, "can_pass", None)
        if not callable(bound):
            return True
        try:
            return bool(bound(_copied(partial), _copied(incumbent)))
        except Exception as exc:
            raise _failed(f"gate {self.name}: can_pass", exc) from exc

    def pool_test(self) -> LoopGate:
        return self


def checked_rule(rule: ParentRule, name: str) -> ParentRule:
    """A caller's parent rule held to its contract: the member it returns is one it was given."""

    def draw(members: Sequence[Scored], rng: random.Random, /) -> Scored:
        try:
            drawn = rule(list(members), rng)
        except Exception as exc:
            raise _failed(f"parent rule {name}", exc) from exc
        if not any(drawn is m or drawn == m for m in members):
            raise TrainingFailed(f"parent rule {name} returned {drawn!r}, not one of the frontier's members")
        return drawn

    return draw


class UserAgent:
    """The target role around a caller's `Agent` (see the module docstring)."""

    def __init__(self, inner: Agent, name: str) -> None:
        self.inner, self.label = inner, name
        self.name, self.model = str(inner.name), str(inner.model)

    def run(self, task: Task, skill: str, workspace: Path) -> AgentResult:
        result = self.inner.run(task, skill, workspace)  # what it raises: loop/rollout.py
        if isinstance(result, AgentResult):
            if result.usage.calls == 0:  # said nothing of what it used: one call, at a cost unknown
                cost = result.usage.cost_usd or None
                result = dataclasses.replace(
                    result, usage=dataclasses.replace(result.usage, calls=1, cost_usd=cost)
                )
            return result
        return AgentResult(
            answer="",
            is_error=True,
            error=f"agent {self.label}: run returned {type(result).__name__}, not a skillgrad.AgentResult",
        )


def cache_identity(agent: Agent) -> str | None:
    """What an agent object says identifies its answers (`cache_identity`), or None: not cached."""
    identity = getattr(agent, "cache_identity", None)
    return identity if isinstance(identity, str) and identity else None


@dataclass(frozen=True)
class Custom:
    """What the caller handed in as objects (None: the config's strategy), each by its label.
    `gate` and `parent` are adapted where the strategies are built (`loop/strategies.py`), the
    agent where the roles are (`session/build.py`)."""

    gate: Gate | None = None
    search: SearchFactory | None = None
    parent: ParentRule | None = None
    agent: Agent | None = None
    labels: Mapping[str, str] = field(default_factory=dict)  # argument -> label, as objects.json

    def gate_for(self, repeats: int) -> LoopGate | None:
        return None if self.gate is None else UserGate(self.gate, repeats, self.labels["gate"])

    def rule(self) -> ParentRule | None:
        return None if self.parent is None else checked_rule(self.parent, self.labels["parent"])
