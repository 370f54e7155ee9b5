"""Backend name -> its loaded module (checked against its protocol), availability, and the
backends of one run.

What each backend is (roles, harness, cache-key settings, turns per task) is its `BackendSpec` in
`skillgrad.backend_specs`, read without loading anything; the module itself implements
`ChatBackend` (or `HarnessBackend`) of `skillgrad.backends.interface`. Chat backends used as a target
are wrapped in `ChatAgent` here, so the trainer only ever sees the two role protocols.
"""

from __future__ import annotations

import importlib
from typing import Any, cast

from skillgrad.backend_specs import BACKENDS, BackendSpec, spec_for
from skillgrad.backends.interface import (
    Agent,
    CallMeter,
    ChatBackend,
    ChatModel,
    HarnessBackend,
    MeteredModel,
)
from skillgrad.config import Config
from skillgrad.errors import UserError
from skillgrad.values import Role

__all__ = [
    "BACKENDS",
    "BackendSpec",
    "Backends",
    "availability",
    "identity",
    "load_backend",
    "make_agent",
    "make_chat",
]

_MEMBERS = ("availability", "new_run_state", "create_chat", "create_agent")


def load_backend(spec: BackendSpec) -> ChatBackend:
    """Import the backend's module (ImportError when its package is missing) and check that it
    implements its protocol: `HarnessBackend` for a harness, else `ChatBackend`."""
    module = importlib.import_module(spec.module)
    protocol = HarnessBackend if spec.harness else ChatBackend
    if not isinstance(module, protocol):
        missing = [m for m in _MEMBERS if hasattr(protocol, m) and not callable(getattr(module, m, None))]
        raise TypeError(
            f"backend {spec.name!r}: module {spec.module} does not implement {protocol.__name__} "
            f"(missing: {', '.join(missing)})"
        )
    return module


def install_hint(spec: BackendSpec, exc: ImportError) -> str:
    """What to install for a backend whose module did not import: its extra first (the package
    named in the ImportError may be any of the extra's dependencies, e.g. httpx2 of `openai`)."""
    missing = exc.name or str(exc)
    if not spec.extra:  # its module needs nothing beyond skillgrad's own dependencies
        return f"skillgrad's dependency {missing} is not installed: pip install --force-reinstall skillgrad"
    return f"it needs the {spec.extra} extra: pip install 'skillgrad[{spec.extra}]' (missing: {missing})"


def availability(cfg: Config, name: str) -> tuple[bool, str]:
    spec = spec_for(name)
    try:
        module = load_backend(spec)
    except ImportError as exc:
        return False, install_hint(spec, exc)
    ok, reason = module.availability(cfg)
    return bool(ok), str(reason)


def _usable_module(cfg: Config, name: str, role: Role) -> ChatBackend:
    ok, reason = availability(cfg, name)
    if not ok:
        raise UserError(f"backend {name!r} ({role} role) is not usable here: {reason}")
    return load_backend(spec_for(name))


class Backends:
    """The backends of one run. Each backend module's `new_run_state()` is called once per run
    and its object handed to every factory call, so both roles can share it (the local backend
    loads its model once) without any process-global state. `meter`, the run's budget, is given
    to every chat model that reserves its own retries through one (`MeteredModel`)."""

    def __init__(self, cfg: Config, meter: CallMeter | None = None) -> None:
        self.cfg = cfg
        self.meter = meter
        self._states: dict[str, Any] = {}

    def _state(self, name: str, module: ChatBackend) -> Any:
        if name not in self._states:
            self._states[name] = module.new_run_state()
        return self._states[name]

    def chat(self, role: Role, *, temperature: float | None = None) -> ChatModel:
        """The optimizer role's ChatModel (role='optimizer'), or a chat target's model;
        `temperature` overrides model.temperature (the optimizer's extra proposals)."""
        cfg = self.cfg
        if temperature is not None:
            cfg = cfg.model_copy(deep=True)
            cfg.model.temperature = temperature
        name = cfg.model.backend_for(role)
        module = _usable_module(cfg, name, role)
        return self._metered(module.create_chat(cfg, role, self._state(name, module)))

    def _metered(self, model: ChatModel) -> ChatModel:
        if isinstance(model, MeteredModel):
            model.meter = self.meter
        return model

    def agent(self) -> Agent:
        """The target role as an Agent: a harness directly, a chat backend through ChatAgent."""
        name = self.cfg.model.backend_for("target")
        if not spec_for(name).harness:
            from skillgrad.backends.chat_agent import ChatAgent

            return ChatAgent(
                self.chat("target"),
                effort=self.cfg.model.effort_for("target"),
                examples=self.cfg.model.chat_examples,
            )
        module = cast(HarnessBackend, _usable_module(self.cfg, name, "target"))  # load_backend checked it
        return module.create_agent(self.cfg, self._state(name, module))


def identity(cfg: Config, role: Role) -> dict[str, Any]:
    """What identifies the model that answers a role beyond its name (a model file, a CLI's
    version), from the backend module's optional `identity(cfg, role)`; {} where it has none."""
    module = load_backend(spec_for(cfg.model.backend_for(role)))
    describe = getattr(module, "identity", None)
    return dict(describe(cfg, role)) if callable(describe) else {}


def make_chat(cfg: Config, role: Role) -> ChatModel:
    """One role's ChatModel on its own (tests, tools); a run builds both through `Backends`."""
    return Backends(cfg).chat(role)


def make_agent(cfg: Config) -> Agent:
    return Backends(cfg).agent()
