"""What `skillgrad.train` accepts as its strategies: `gate=`, `search=`, `parent=` and `agent=`,
each a name or an object (docs/api.md, "Strategies as objects").

A name is the config's: it is validated as the config validates it and set in the config (so the
run folder's config.json records it and the CLI can resume the run), a bad one a one-line
UserError listing the allowed values. An object is checked against its protocol here, before
anything is written: one that lacks a member is a one-line UserError naming the argument and what
it must implement. An object trains the body alone (`optimizer.target: body`), and an agent
object runs in this process (`train.executor: threads`).
"""

from __future__ import annotations

import typing
from collections.abc import Callable
from typing import Any, TypeAlias

from skillgrad.backend_specs import BACKENDS
from skillgrad.backends.interface import Agent
from skillgrad.config import Config, OptimizerConfig
from skillgrad.config.loading import check_combinations
from skillgrad.errors import UserError
from skillgrad.loop.custom_strategies import Custom, Gate, label, lacks
from skillgrad.loop.search.parents import ParentRule
from skillgrad.loop.search.protocol import Search, SearchContext

GateLike: TypeAlias = "str | Gate"
SearchLike: TypeAlias = "str | Callable[[SearchContext], Search]"
ParentLike: TypeAlias = "str | ParentRule"
AgentLike: TypeAlias = "str | Agent"

_WHAT = {
    "gate": "an object with decide(candidate, incumbent) -> GateDecision (skillgrad.Gate)",
    "search": "a class or function that builds a skillgrad.Search from a SearchContext",
    "parent": "a function (members, rng) -> one of members (skillgrad.ParentRule)",
    "agent": "an object with name, model and run(task, skill, workspace) -> AgentResult (skillgrad.Agent)",
}


def _allowed(key: str) -> tuple[str, ...]:
    return typing.get_args(OptimizerConfig.model_fields[key].annotation)


def _name(cfg: Config, arg: str, value: str) -> None:
    """`value` as the config's optimizer.<arg> (agent: the target backend), checked as a key is."""
    if arg == "agent":
        targets = [name for name, spec in BACKENDS.items() if "target" in spec.roles]
        if value not in targets:
            raise UserError(f"agent={value!r}: allowed values: {', '.join(targets)}, or {_WHAT[arg]}")
        cfg.model.target_backend = value
        return
    if value not in _allowed(arg):
        raise UserError(f"{arg}={value!r}: allowed values: {', '.join(_allowed(arg))}, or {_WHAT[arg]}")
    setattr(cfg.optimizer, arg, value)
    check_combinations(cfg, f"{arg}={value!r}")


def _refused(arg: str, obj: Any, missing: list[str] | None = None) -> UserError:
    lacking = f" (it lacks {', '.join(missing)})" if missing else ""
    return UserError(f"{arg}=: {type(obj).__name__} is not {_WHAT[arg]}{lacking}")


def _checked(arg: str, obj: Any) -> None:
    """A one-line UserError when `obj` cannot be the `arg` it was handed in as."""
    if arg == "gate" and not callable(getattr(obj, "decide", None)):
        raise _refused(arg, obj, ["decide"])
    if arg == "agent":
        if not isinstance(obj, Agent):
            raise _refused(arg, obj, lacks(obj, Agent))
        if not (isinstance(obj.name, str) and isinstance(obj.model, str)):
            raise UserError(f"agent=: {type(obj).__name__}'s name and model must be strings")
    built = not isinstance(obj, type) and isinstance(obj, Search)  # a class has the members too
    if arg in ("search", "parent") and (not callable(obj) or built):
        raise _refused(arg, obj)
    if arg == "search" and isinstance(obj, type):
        missing = [n for n in lacks(obj, Search) if n != "prefetches"]  # an attribute may come in __init__
        if missing:
            raise _refused(arg, obj, missing)


def as_strategies(
    cfg: Config,
    *,
    gate: GateLike | None = None,
    search: SearchLike | None = None,
    parent: ParentLike | None = None,
    agent: AgentLike | None = None,
) -> Custom:
    """Names set in `cfg`; the objects, checked, with their labels (the run folder's objects.json)."""
    given: dict[str, Any] = {"gate": gate, "search": search, "parent": parent, "agent": agent}
    objects: dict[str, Any] = {}
    for arg, value in given.items():
        if isinstance(value, str):
            _name(cfg, arg, value)
        elif value is not None:
            _checked(arg, value)
            objects[arg] = value
    if not objects:
        return Custom()
    first = next(iter(objects))
    if cfg.optimizer.target != "body":
        raise UserError(
            f"{first}=: an object trains the body alone, not optimizer.target {cfg.optimizer.target!r}; "
            "pass its name, or set optimizer.target: body"
        )
    if "agent" in objects and cfg.train.executor != "threads":
        raise UserError(
            f"agent=: an agent object runs in this process, not on train.executor {cfg.train.executor!r}; "
            "set train.executor: threads"
        )
    if "parent" in objects and "search" not in objects and cfg.optimizer.search != "frontier":
        raise UserError(
            f"parent=: the {cfg.optimizer.search} search draws no parent; pass search='frontier' "
            "(or set optimizer.search: frontier)"
        )
    labels = {arg: label(obj) for arg, obj in objects.items()}
    return Custom(**objects, labels=labels)
