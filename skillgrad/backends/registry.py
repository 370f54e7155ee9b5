"""Backend name -> module, the roles it serves, and whether it is usable here.

Each backend module exposes:
- `availability(cfg) -> tuple[bool, str]`: usable here?, and the reason when not (missing package,
  CLI not found, no credentials). Must not make network calls.
- `create_chat(cfg, role) -> ChatModel` for backends serving the optimizer role (and chat targets).
- `create_agent(cfg) -> Agent` for agent harnesses (claude_code_exec, codex_exec).
- `cache_settings(cfg) -> dict` for agent harnesses: the settings that shape a rollout (call-cache key).
- optionally `new_run_state()`: one object per run, then passed as a third / second argument to
  the factories above (see `Backends`). Chat backends used as a
  target are wrapped in `ChatAgent` here, so the trainer only ever sees the two protocols.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType

from skillgrad.backends.base import Agent, ChatModel
from skillgrad.config import Config
from skillgrad.errors import UserError
from skillgrad.values import Role


@dataclass(frozen=True)
class BackendSpec:
    name: str
    module: str
    roles: tuple[Role, ...]
    harness: bool  # True: a real agent harness (tools, workspace); False: a chat model
    extra: str  # pip extra that installs its dependencies ("" when it needs none: codex_exec's is npm's)
    trace_name: str | None = None  # harness name in the analyst's trace heading
    trace_file: str = "trace_steps.txt"  # the rendered trace steps of each rollout
    key_env: str = ""  # the environment variable its API key is read from (Ray workers get it there)

    def load(self) -> ModuleType:
        return importlib.import_module(self.module)


BACKENDS: dict[str, BackendSpec] = {
    spec.name: spec
    for spec in (
        BackendSpec(
            "openai_chat",
            "skillgrad.backends.openai_compat",
            ("optimizer", "target"),
            False,
            "openai",
            key_env="OPENAI_API_KEY",
        ),
        BackendSpec(
            "anthropic_chat",
            "skillgrad.backends.anthropic_api",
            ("optimizer", "target"),
            False,
            "anthropic",
            key_env="ANTHROPIC_API_KEY",
        ),
        BackendSpec(
            "claude_code_exec",
            "skillgrad.backends.claude_code",
            ("optimizer", "target"),
            True,
            "claude",
            trace_name="Claude",
            trace_file="claude_trace_steps.txt",
            key_env="ANTHROPIC_API_KEY",
        ),
        BackendSpec(
            "codex_exec",
            "skillgrad.backends.codex_exec",
            ("optimizer", "target"),
            True,
            "",
            trace_name="Codex",
            key_env="OPENAI_API_KEY",
        ),
        BackendSpec("local", "skillgrad.backends.local", ("optimizer", "target"), False, "local"),
    )
}


def spec_for(name: str) -> BackendSpec:
    try:
        return BACKENDS[name]
    except KeyError:
        raise UserError(f"unknown backend {name!r}; allowed values: {', '.join(BACKENDS)}") from None


def availability(cfg: Config, name: str) -> tuple[bool, str]:
    spec = spec_for(name)
    try:
        module = spec.load()
    except ImportError as exc:
        return False, f"{exc.name or exc} is not installed: pip install 'skillgrad[{spec.extra}]'"
    ok, reason = module.availability(cfg)
    return bool(ok), str(reason)


def _usable_module(cfg: Config, name: str, role: Role) -> ModuleType:
    spec = spec_for(name)
    ok, reason = availability(cfg, name)
    if not ok:
        raise UserError(f"backend {name!r} ({role} role) is not usable here: {reason}")
    return spec.load()


class Backends:
    """The backends of one run. A backend module that defines `new_run_state()` gets one such
    object per run, passed to its factories, so both roles can share it (the local backend loads
    its model once) without any process-global state."""

    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
        self._states: dict[str, object] = {}

    def _factory_args(self, module: ModuleType) -> tuple[object, ...]:
        if not hasattr(module, "new_run_state"):
            return ()
        if module.__name__ not in self._states:
            self._states[module.__name__] = module.new_run_state()
        return (self._states[module.__name__],)

    def chat(self, role: Role, *, temperature: float | None = None) -> ChatModel:
        """The optimizer role's ChatModel (role='optimizer'), or a chat target's model;
        `temperature` overrides model.temperature (the optimizer's extra proposals)."""
        cfg = self.cfg
        if temperature is not None:
            cfg = cfg.model_copy(deep=True)
            cfg.model.temperature = temperature
        module = _usable_module(cfg, cfg.model.backend_for(role), role)
        chat: ChatModel = module.create_chat(cfg, role, *self._factory_args(module))
        return chat

    def agent(self) -> Agent:
        """The target role as an Agent: a harness directly, a chat backend through ChatAgent."""
        name = self.cfg.model.backend_for("target")
        if spec_for(name).harness:
            module = _usable_module(self.cfg, name, "target")
            agent: Agent = module.create_agent(self.cfg, *self._factory_args(module))
            return agent
        from skillgrad.backends.chat_agent import ChatAgent

        return ChatAgent(self.chat("target"), effort=self.cfg.model.effort_for("target"))


def make_chat(cfg: Config, role: Role) -> ChatModel:
    """One role's ChatModel on its own (tests, tools); a run builds both through `Backends`."""
    return Backends(cfg).chat(role)


def make_agent(cfg: Config) -> Agent:
    return Backends(cfg).agent()
