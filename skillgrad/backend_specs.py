"""The backends' descriptions: name -> what the backend is, read without loading it.

Adding a backend = one module under `skillgrad/backends/` (implementing `ChatBackend`, or
`HarnessBackend` for an agent harness; see `skillgrad.backends.interface`) + one `BackendSpec` line in
`BACKENDS` below. Everything else reads the spec: the config's accepted backend names, the
`skillgrad backends` listing, the call-cache key of a rollout, whether the analyst sees traces,
the estimate's turns per task, the Ray workers' package extra and key variable.

This module is pure data (it imports only the leaf modules `values` and `errors`), so
`skillgrad.config` can validate names against it, and nothing here loads a backend or its SDK.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from skillgrad.errors import UserError
from skillgrad.values import Role

BOTH_ROLES: tuple[Role, ...] = ("optimizer", "target")
HARNESS_TURNS = 8  # model turns an agent harness takes per task, for the estimate (each re-reads the context)


@dataclass(frozen=True)
class BackendSpec:
    name: str
    module: str  # the backend module, loaded only when the backend is used
    roles: tuple[Role, ...]
    harness: bool  # True: a real agent harness (tools, workspace) that emits traces; False: a chat model
    extra: str  # pip extra that installs its dependencies ("" when it needs none: codex_exec's is npm's)
    trace_name: str | None = None  # harness name in the analyst's trace heading
    trace_file: str = "trace_steps.txt"  # the rendered trace steps of each rollout
    key_env: str = ""  # the environment variable its API key is read from (Ray workers get it there)
    turns_per_task: int = 1  # model turns per task, for the estimate (a chat target answers in one)
    # (cache-key name, config path) of each setting that shapes a rollout besides task and skill
    cache_keys: tuple[tuple[str, str], ...] = ()
    # a `model.*` switch that must be on, besides model.trace_to_optimizer, for the analyst to read
    # this harness's traces (Claude Code's older key)
    trace_switch: str | None = None
    # with no model configured, the backend runs the small model packaged with skillgrad (a demo)
    packaged_demo_model: bool = False

    def cache_settings(self, cfg: Any) -> dict[str, Any]:
        """The values of `cache_keys` in config `cfg`, as the call-cache key of a rollout holds them."""
        settings = {}
        for key, path in self.cache_keys:
            value = cfg
            for part in path.split("."):
                value = getattr(value, part)
            settings[key] = value
        return settings


BACKENDS: dict[str, BackendSpec] = {
    spec.name: spec
    for spec in (
        BackendSpec(
            "openai_chat",
            "skillgrad.backends.openai_compat",
            BOTH_ROLES,
            False,
            "openai",
            key_env="OPENAI_API_KEY",
        ),
        BackendSpec(
            "anthropic_chat",
            "skillgrad.backends.anthropic_api",
            BOTH_ROLES,
            False,
            "anthropic",
            key_env="ANTHROPIC_API_KEY",
        ),
        BackendSpec(
            "claude_code_exec",
            "skillgrad.backends.claude_code",
            BOTH_ROLES,
            True,
            "claude",
            trace_name="Claude",
            trace_file="claude_trace_steps.txt",
            key_env="ANTHROPIC_API_KEY",
            turns_per_task=HARNESS_TURNS,
            cache_keys=(
                ("tools", "model.claude_code_allowed_tools"),
                ("max_turns", "model.claude_code_max_turns"),
                ("permission_mode", "model.claude_code_permission_mode"),
                ("skill_name", "skill.name"),
            ),
            trace_switch="claude_trace_to_optimizer",
        ),
        BackendSpec(
            "codex_exec",
            "skillgrad.backends.codex_exec",
            BOTH_ROLES,
            True,
            "",
            trace_name="Codex",
            key_env="OPENAI_API_KEY",
            turns_per_task=HARNESS_TURNS,
            cache_keys=(
                ("sandbox", "model.codex_sandbox"),
                ("approval_policy", "model.codex_approval_policy"),
                ("max_turns", "model.codex_max_turns"),
                ("skill_name", "skill.name"),
            ),
        ),
        BackendSpec(
            "local", "skillgrad.backends.local", BOTH_ROLES, False, "local", packaged_demo_model=True
        ),
    )
}
DEFAULT_BACKEND = "local"


def backend_names() -> tuple[str, ...]:
    """The registered names, in registry order (read at call time: a test may register one)."""
    return tuple(BACKENDS)


def spec_for(name: str) -> BackendSpec:
    try:
        return BACKENDS[name]
    except KeyError:
        raise UserError(f"unknown backend {name!r}; allowed values: {', '.join(BACKENDS)}") from None
