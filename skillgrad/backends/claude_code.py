"""`claude_code_exec`: Claude Code (through the official claude-agent-sdk) for both roles.

Target (Agent): each task runs the real CLI in its own workspace with the skill installed as a
project skill, `task.md` (and `context.md`) as files, a tool allow-list, bounded turns and wall time.
Optimizer (ChatModel): the CLI with no tools in an empty temp dir, structured output through
`--json-schema` (the SDK's `output_format`), re-asked through `structured.complete_structured`;
in a reflection workspace (`investigate`, see `claude_reader`) with Read, Grep and Glob only.
Both roles are bounded by `model.claude_code_timeout_s` per CLI session (a long analyst prompt at
high effort can outlast the plain-API `model.timeout_s`).

Isolation, found by running the bundled CLI (2.1.x):
- `setting_sources=["project"]` is needed for `.claude/skills` in the workspace to be discovered;
  with it the CLI would also list skills of ancestor folders and bundled skills, so `skills=[name]`
  narrows the list to ours. Project settings of an enclosing git repository are not loaded.
- CLAUDE.md files of ancestor folders still load under the project source and auto-memory is kept
  per project: both are switched off through the CLI's environment (`CLAUDE_CODE_DISABLE_*`).
  User settings are never loaded, but the user's login (config dir) stays usable.
- `--no-session-persistence`: no transcript is written under ~/.claude/projects.
- As root the CLI refuses `--dangerously-skip-permissions`; the allow-list in the default permission
  mode works, and `bypassPermissions` needs `IS_SANDBOX=1`, set only in that mode.
The CLI's environment and one session's run are `claude_session`'s.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import tempfile
from collections import deque
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skillgrad.backends import claude_reader
from skillgrad.backends import workspace as workspace_files
from skillgrad.backends.claude_session import (
    BACKEND,
    STDERR_LINES,
    cli_env,
    common_options,
    is_transient,
    key_hint,
    run_session,
)
from skillgrad.backends.cli_chat import CliChat
from skillgrad.backends.common import split_messages
from skillgrad.backends.containment import ContainedCli
from skillgrad.backends.identity import cli_identity
from skillgrad.backends.lifeline import ParentBoundCli
from skillgrad.backends.reading import Investigation, ReadingBounds, investigate
from skillgrad.config import Config
from skillgrad.lazy import lazy_import
from skillgrad.templates import render
from skillgrad.values import AgentResult, Effort, Message, Role, Task, TraceStep, Usage

if TYPE_CHECKING:
    import claude_agent_sdk as sdk
else:
    sdk = lazy_import("claude_agent_sdk")  # loaded on first use

DEFAULT_MODEL = "claude-code-default"  # shown when the CLI picks its own default model


# ---------------------------------------------------------------------------------------------
# availability, environment, options


def bundled_cli() -> Path | None:
    """The CLI the SDK ships in its package folder. Found through the import system's spec, so
    looking (`skillgrad backends`, a run's set-up) does not execute the SDK's package (with mcp,
    about a second)."""
    spec = importlib.util.find_spec("claude_agent_sdk")
    folders = list(spec.submodule_search_locations or []) if spec else []
    for folder in folders:
        path = Path(folder) / "_bundled" / "claude"
        if path.is_file():
            return path
    return None


def find_cli(cfg: Config) -> str | None:
    configured = cfg.model.claude_code_cli_path
    if configured:
        path = cfg.resolve_path(configured)
        return str(path) if path.is_file() and os.access(path, os.X_OK) else None
    bundled = bundled_cli()
    return str(bundled) if bundled else shutil.which("claude")


def availability(cfg: Config) -> tuple[bool, str]:
    """Usable when the CLI exists (configured, bundled with the SDK, or on PATH). No network."""
    cli = find_cli(cfg)
    if cli:
        keyed = any(cfg.model.api_key_for(r) for r in ("optimizer", "target")) or os.environ.get(
            "ANTHROPIC_API_KEY"
        )
        login = (
            ""
            if keyed
            else "; no ANTHROPIC_API_KEY or model.api_key: relies on a logged-in CLI (claude login)"
        )
        return True, f"CLI {cli}{login}"
    if cfg.model.claude_code_cli_path:
        return (
            False,
            f"model.claude_code_cli_path {cfg.model.claude_code_cli_path!r} is not an executable file",
        )
    return (
        False,
        "no Claude Code CLI: reinstall claude-agent-sdk (it bundles one) or set model.claude_code_cli_path",
    )


# ---------------------------------------------------------------------------------------------
# target role


def prepare_workspace(workspace: Path, task: Task, skill: str, skill_name: str) -> None:
    """Install the skill as a project skill and write the task (context in its own file)."""
    workspace_files.prepare_workspace(workspace, task, skill, skill_name, ".claude/skills")


def _tool_names(allowed: list[str]) -> list[str]:
    """Base tool names of an allow-list whose rules may carry patterns, e.g. `Bash(git *)`."""
    names = [rule.split("(", 1)[0].strip() for rule in allowed]
    return list(dict.fromkeys([n for n in names if n] + ["Skill"]))


class ClaudeCodeAgent:
    """The target role. Never raises for one task's failure (see backends/interface.py)."""

    name = BACKEND
    skills_dir = ".claude/skills"  # where Claude Code discovers a workspace's project skills

    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
        self.model = cfg.model.model_for("target") or DEFAULT_MODEL
        cli = find_cli(cfg)
        # Every process the agent starts ends with its task; it sees no other process (containment.py).
        self.launcher = ContainedCli(cli, os.environ) if cli else None

    def options(
        self,
        workspace: Path,
        stderr: deque[str],
        skills: list[str] | None = None,
        max_turns: int | None = None,
    ) -> sdk.ClaudeAgentOptions:
        """`skills`: the workspace's skills the CLI lists (default: ours); `max_turns` default
        `model.claude_code_max_turns`."""
        m = self.cfg.model
        common = common_options(self.cfg, "target", stderr)
        if self.launcher is not None:
            common["cli_path"] = self.launcher.path
        return sdk.ClaudeAgentOptions(
            cwd=str(workspace),
            system_prompt={"type": "preset", "preset": "claude_code"},  # the real Claude Code prompt
            tools=_tool_names(m.claude_code_allowed_tools),
            allowed_tools=list(m.claude_code_allowed_tools),
            permission_mode=m.claude_code_permission_mode,
            setting_sources=["project"],
            skills=skills if skills is not None else [self.cfg.skill.name],
            max_turns=max_turns or m.claude_code_max_turns,
            effort=m.effort_for("target"),
            **common,
        )

    def run(self, task: Task, skill: str, workspace: Path) -> AgentResult:
        workspace = Path(workspace).resolve()
        try:
            workspace.mkdir(parents=True, exist_ok=True)
            prepare_workspace(workspace, task, skill, self.cfg.skill.name)
        except OSError as exc:
            failed = f"could not prepare the workspace {workspace}: {exc}"
            return AgentResult("", is_error=True, error=failed, usage=Usage(), workspace=workspace)
        prompt = render("skillgrad.backends", "claude_code_prompt", skill_name=self.cfg.skill.name)
        return self.run_prompt(prompt, workspace, [self.cfg.skill.name])

    def run_prompt(
        self, prompt: str, workspace: Path, skills: list[str], max_turns: int | None = None
    ) -> AgentResult:
        """One session on `prompt` in a prepared `workspace` that lists `skills`. With `max_turns`
        the session is cut there and that is no failure (an activation probe: skillgrad.activation);
        otherwise `model.claude_code_max_turns` bounds it and reaching it fails the task."""
        stderr: deque[str] = deque(maxlen=STDERR_LINES)
        events, session, failure = run_session(
            prompt,
            self.options(workspace, stderr, skills, max_turns),
            self.cfg.model.claude_code_timeout_s,
            stderr,
            key_hint(self.cfg, "target"),
        )
        if max_turns is not None and session.terminal_reason == "max_turns":
            failure, session.is_error = None, False  # the probe ended where it was told to
        error = failure or ("; ".join(session.errors) if session.is_error else None)
        if failure:  # the optimizer should see why the run stopped, as the trace's last step
            if not session.finished:  # the parser's closing note says the same, less precisely
                session.steps.pop()
            session.steps.append(TraceStep("text", failure, is_error=True))
        # Without a result record the tokens spent are unknown, so is the cost.
        usage = session.usage or Usage(calls=1, cost_usd=None)
        return AgentResult(
            answer=session.final_answer.strip(),
            trace=session.steps,
            usage=usage,
            is_error=bool(error),
            error=error,
            raw=events,
            workspace=workspace,
        )


# ---------------------------------------------------------------------------------------------
# optimizer role


class ClaudeCodeChat(CliChat):
    """The optimizer role (and a chat model in general) on the Claude Code CLI: without tools
    (`complete`), or reading a reflection workspace with Read, Grep and Glob (`investigate`)."""

    name = BACKEND
    default_model = DEFAULT_MODEL
    reading_tools = "Read, Grep and Glob (Grep with -n gives line numbers; Read takes offset and limit)"

    def __init__(self, cfg: Config, role: Role) -> None:
        super().__init__(cfg, role)
        cli = find_cli(cfg)
        # A session ends with the trainer: a SIGKILLed run leaves no analyst paying on (lifeline.py).
        self.launcher = ParentBoundCli(cli) if cli else None
        self.key_hint = key_hint(cfg, role)

    def _common(self, stderr: deque[str]) -> dict[str, Any]:
        common = common_options(self.cfg, self.role, stderr)
        if self.launcher is not None:
            common["cli_path"] = self.launcher.path
        return common

    def options(
        self, cwd: str, system: str, schema: dict[str, Any] | None, effort: Effort | None, stderr: deque[str]
    ) -> sdk.ClaudeAgentOptions:
        return sdk.ClaudeAgentOptions(
            cwd=cwd,
            system_prompt=system,
            tools=[],
            setting_sources=[],
            output_format={"type": "json_schema", "schema": schema} if schema is not None else None,
            max_turns=3,  # the answer, plus the CLI's own reminder to call StructuredOutput
            effort=effort,
            **self._common(stderr),
        )

    def _attempt(
        self, messages: list[Message], schema: dict[str, Any] | None, effort: Effort | None
    ) -> tuple[str | None, Usage, str]:
        system, prompt = split_messages(messages)
        stderr: deque[str] = deque(maxlen=STDERR_LINES)
        with tempfile.TemporaryDirectory(prefix="skillgrad-cc-") as cwd:
            options = self.options(cwd, system, schema, effort, stderr)
            timeout = self.cfg.model.claude_code_timeout_s
            _, session, failure = run_session(prompt, options, timeout, stderr, self.key_hint)
        usage = session.usage or Usage(calls=1, cost_usd=None)
        if is_transient(failure, session):
            return None, usage, failure or "; ".join(session.errors)
        if session.structured_output is not None:
            return json.dumps(session.structured_output), usage, ""
        return session.final_answer, usage, ""

    def investigate(
        self,
        messages: list[Message],
        *,
        folder: Path,
        bounds: ReadingBounds,
        schema: dict[str, Any] | None = None,
        effort: Effort | None = None,
        stage: str,
    ) -> Investigation:
        """The answer after reading `folder` with Read, Grep and Glob (see `backends.reading`)."""
        run = claude_reader.session_runner(self._common, Path(folder), bounds, schema, effort, self.key_hint)
        return investigate(
            run,
            messages,
            schema,
            bounds,
            backend=self.name,
            stage=stage,
            retries=self.cfg.model.max_retries,
            json_retries=self.cfg.model.json_retries,
            backoff_s=self.retry_backoff_s,
            meter=self.meter,
        )


def new_run_state() -> None:
    """No per-run state: each session starts its own CLI process."""


def identity(cfg: Config, role: Role) -> dict[str, Any]:
    """The CLI a role's sessions run, by its version, and the SDK that drives it (it builds the
    CLI's command line and options; see `backends.identity`)."""
    try:
        sdk_version: str | None = metadata.version("claude-agent-sdk")
    except metadata.PackageNotFoundError:
        sdk_version = None
    return {**cli_identity(find_cli(cfg)), "sdk": sdk_version}


__all__ = ["cli_env"]  # the CLI's environment, re-exported from claude_session


def create_chat(cfg: Config, role: Role, state: None = None) -> ClaudeCodeChat:
    return ClaudeCodeChat(cfg, role)


def create_agent(cfg: Config, state: None = None) -> ClaudeCodeAgent:
    return ClaudeCodeAgent(cfg)
