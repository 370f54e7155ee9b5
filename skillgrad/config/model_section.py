"""The `model` section: which backend and model each role uses, and their settings."""

from __future__ import annotations

from typing import Literal

from pydantic import (
    Field,
    SecretStr,
)

from skillgrad.backend_specs import DEFAULT_BACKEND, spec_for
from skillgrad.config.fields import DAY_S, MAX_PARALLEL, MAX_TOKENS, MAX_TURNS, BackendName, Section
from skillgrad.values import Effort


class ModelConfig(Section):
    """The two roles' models (the optimizer, which reflects and edits; the target, the agent under
    training), their backends, and each backend's own settings."""

    backend: BackendName = DEFAULT_BACKEND
    """Backend of both roles unless a role is pinned (`--backend NAME`)."""
    optimizer_backend: BackendName | None = None
    """Pins the optimizer's backend (`--optimizer-backend NAME`)."""
    target_backend: BackendName | None = None
    """Pins the target's backend (`--target-backend NAME`)."""
    optimizer_model: str | None = None
    """The optimizer's model id (each backend has a default)."""
    target_model: str | None = None
    """The target's model id (each backend has a default)."""
    reasoning_effort: Effort | None = "medium"
    """Reasoning effort of models that take one; per role: `optimizer_reasoning_effort`,
    `target_reasoning_effort`."""
    optimizer_reasoning_effort: Effort | None = None
    """The optimizer's reasoning effort (null: `reasoning_effort`)."""
    target_reasoning_effort: Effort | None = None
    """The target's reasoning effort (null: `reasoning_effort`)."""
    base_url: str | None = None
    """OpenAI-compatible or Anthropic endpoint; per role: `optimizer_base_url`, `target_base_url`."""
    optimizer_base_url: str | None = None
    """The optimizer's endpoint (null: `base_url`)."""
    target_base_url: str | None = None
    """The target's endpoint (null: `base_url`)."""
    api_key: SecretStr | None = None
    """A secret, never written anywhere; per role: `optimizer_api_key`, `target_api_key`; else
    the SDK's environment variable (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`)."""
    optimizer_api_key: SecretStr | None = None
    """The optimizer's key (null: `api_key`)."""
    target_api_key: SecretStr | None = None
    """The target's key (null: `api_key`)."""
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    """Sampling temperature of chat backends."""
    max_output_tokens: int = Field(1024, ge=16, le=MAX_TOKENS)
    """Max tokens per reply."""
    optimizer_max_output_tokens: int | None = Field(None, ge=16, le=MAX_TOKENS)
    """The optimizer's max tokens per reply (null: `max_output_tokens`)."""
    target_max_output_tokens: int | None = Field(None, ge=16, le=MAX_TOKENS)
    """The target's max tokens per reply (null: `max_output_tokens`)."""
    timeout_s: float = Field(120.0, gt=0, le=DAY_S)
    """Per-request timeout of chat backends."""
    max_retries: int = Field(4, ge=0, le=20)
    """Transport retries with backoff (429, 5xx, timeouts), skillgrad's own (the SDKs' are off):
    each a call `budget.max_calls` reserves and counts."""
    json_retries: int = Field(2, ge=0, le=10)
    """Re-asks after a reply that is not schema-valid JSON; then a `StructuredOutputError`
    naming the stage."""
    chat_examples: Literal["turns", "text"] = "turns"
    """How a chat target receives the skill's worked examples (its examples section, a package's
    examples.md): `turns`, as earlier user and assistant turns before the task (few-shot, as DSPy
    sends demos; each example's task without the closing "Reply with the answer only.", which the
    task's own turn says; skillgrad.backends.chat_agent.chat_messages builds them); `text`, in the
    system prompt as written. A harness target reads the skill's files: its examples are always text."""
    trace_to_optimizer: bool = True
    """Show a harness target's trace steps (Claude Code, Codex) to the optimizer."""
    claude_trace_to_optimizer: bool = True
    """The Claude Code key: false hides Claude Code's trace steps (both keys must be true
    for Claude Code)."""
    claude_code_cli_path: str | None = None
    """Use this `claude` binary instead of the one claude-agent-sdk bundles."""
    claude_code_allowed_tools: list[str] = Field(
        default_factory=lambda: ["Read", "Glob", "Grep", "Bash", "Write", "Edit"]
    )
    """Tools the Claude Code target may use (auto-approved)."""
    claude_code_permission_mode: Literal["default", "acceptEdits", "bypassPermissions", "dontAsk"] = "default"
    """Claude Code's permission mode (`bypassPermissions` needs `IS_SANDBOX=1` as root)."""
    claude_code_max_turns: int = Field(20, ge=1, le=MAX_TURNS)
    """Max Claude Code turns per task."""
    claude_code_timeout_s: float = Field(600.0, gt=0, le=DAY_S)
    """Wall-time limit of a Claude Code task (a timeout fails the task: it runs again per
    `train.rollout_retries`, then is missing on val and test; the run goes on)."""
    codex_cli_path: str | None = None
    """Use this `codex` binary instead of the one on PATH."""
    codex_sandbox: Literal["read-only", "workspace-write", "danger-full-access"] = "workspace-write"
    """The sandbox of a Codex task (`danger-full-access` only where the container is the
    sandbox)."""
    codex_approval_policy: Literal["never", "on-request", "on-failure"] = "never"
    """Codex's approval policy (nobody answers in `exec`: a request for approval is a refusal)."""
    codex_max_turns: int = Field(20, ge=1, le=MAX_TURNS)
    """Max tool calls per Codex task; the session is stopped at the next one."""
    codex_timeout_s: float = Field(600.0, gt=0, le=DAY_S)
    """Wall-time limit of a Codex session."""
    codex_reuse_login: bool = False
    """Copy your Codex `auth.json` into the private `CODEX_HOME` (to use a ChatGPT login)."""
    local_model: str | None = None
    """`local` backend: a GGUF path or a Hugging Face `owner/repo:file.gguf`; null: the packaged
    SmolLM2-135M."""
    local_threads: int = Field(1, ge=1, le=MAX_PARALLEL)
    """Generation threads of the local model (1 holds its speed on a busy 2-core machine)."""
    local_ctx: int = Field(4096, ge=512, le=1_048_576)
    """Context size of the local model (part of every call-cache key of the local backend, with
    the model file's path, size and mtime)."""

    def backend_for(self, role: str) -> BackendName:
        value = self.optimizer_backend if role == "optimizer" else self.target_backend
        return value or self.backend

    def traces_to_optimizer(self, backend: str) -> bool:
        """Whether the analyst reads the trace steps of a target on `backend`: a harness that
        emits traces, with model.trace_to_optimizer and the backend's own switch (if any) on."""
        spec = spec_for(backend)
        switch = getattr(self, spec.trace_switch) if spec.trace_switch else True
        return spec.harness and self.trace_to_optimizer and bool(switch)

    def analyst_sees_traces(self) -> bool:
        """The one decision, for trainer and estimate alike: the analyst reads the target's traces."""
        return self.traces_to_optimizer(self.backend_for("target"))

    def model_for(self, role: str) -> str | None:
        return self.optimizer_model if role == "optimizer" else self.target_model

    def effort_for(self, role: str) -> Effort | None:
        value = self.optimizer_reasoning_effort if role == "optimizer" else self.target_reasoning_effort
        return value or self.reasoning_effort

    def max_output_tokens_for(self, role: str) -> int:
        value = self.optimizer_max_output_tokens if role == "optimizer" else self.target_max_output_tokens
        return value or self.max_output_tokens

    def base_url_for(self, role: str) -> str | None:
        value = self.optimizer_base_url if role == "optimizer" else self.target_base_url
        return value or self.base_url

    def api_key_for(self, role: str) -> str | None:
        value = self.optimizer_api_key if role == "optimizer" else self.target_api_key
        secret = value or self.api_key
        return secret.get_secret_value() if secret else None
