"""`codex_exec`: the Codex CLI (`@openai/codex` from npm, pinned to PINNED_VERSION) for both roles.

Target (Agent): each task runs `codex exec --json` in its own workspace under the run folder, the
skill installed where the pinned CLI discovers repository skills (`.agents/skills/<name>/SKILL.md`)
and named in the prompt as `$<name>`, which makes the CLI inject its body (a real skill
invocation); `task.md` / `context.md` as for Claude Code. Bounded by `model.codex_timeout_s` wall
time and `model.codex_max_turns` tool calls (the CLI has no turn limit of its own).
Optimizer (ChatModel): the CLI in an empty temp dir, read-only, with the shell and the optional
tools switched off (the pinned CLI keeps `apply_patch`, which the read-only sandbox refuses, and
`request_user_input`), the system prompt as `developer_instructions`, structured output through
`--output-schema`, re-asked through `structured.complete_structured`. A tool call stops the session
and counts as a reply without JSON, so it is re-asked too. In a reflection workspace
(`investigate`, see `codex_reader`) the shell stays, under the read-only sandbox.

Isolation, found by running the pinned CLI (0.169.0): every session gets a private, temporary HOME
and CODEX_HOME, so the user's config, history, memories, rules and skills (`$CODEX_HOME/skills`,
`~/.agents/skills`) are never read; only with `model.codex_reuse_login` is the user's `auth.json`
copied in. The command line, the environment and the endpoint are built in `codex_args`.
Sandbox: `model.codex_sandbox` (default `workspace-write`, which works as root in a container with
Landlock); the agent is checked once per run with `codex sandbox`, and a sandbox that cannot start
is a one-line error naming the key and the fix.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from skillgrad.backends import codex_reader
from skillgrad.backends.cli_chat import CliChat
from skillgrad.backends.codex_args import (
    PASSTHROUGH,
    api_key,
    base_argv,
    cli_env,
    optimizer_args,
    strict_schema,
    toml_str,
)
from skillgrad.backends.codex_process import CodexRun, run_cli
from skillgrad.backends.common import split_messages
from skillgrad.backends.identity import cli_identity, cli_version
from skillgrad.backends.reading import Investigation, ReadingBounds, investigate
from skillgrad.backends.workspace import prepare_workspace
from skillgrad.config import Config
from skillgrad.errors import UserError
from skillgrad.templates import render
from skillgrad.traces.codex import CodexSession, steps_from_codex_events
from skillgrad.values import AgentResult, Effort, Message, Role, Task, TraceStep, Usage

BACKEND = "codex_exec"
PINNED_VERSION = "0.169.0"  # what `.ci/run` installs and the tests drive
DEFAULT_MODEL = "codex-default"  # shown when the CLI picks its own default model
SKILLS_DIR = ".agents/skills"
_SANDBOX_CHECK_S = 60.0


# ---------------------------------------------------------------------------------------------
# availability, environment, argv


def find_cli(cfg: Config) -> str | None:
    configured = cfg.model.codex_cli_path
    if configured:
        path = cfg.resolve_path(configured)
        return str(path) if path.is_file() and os.access(path, os.X_OK) else None
    return shutil.which("codex")


def availability(cfg: Config) -> tuple[bool, str]:
    """Usable when the CLI exists (model.codex_cli_path or `codex` on PATH) and runs. No network."""
    cli = find_cli(cfg)
    if cli is None:
        if cfg.model.codex_cli_path:
            return False, f"model.codex_cli_path {cfg.model.codex_cli_path!r} is not an executable file"
        return False, (
            f"no Codex CLI on PATH: npm install -g @openai/codex@{PINNED_VERSION} or set model.codex_cli_path"
        )
    version, problem = cli_version(cli)
    if version is None:
        return False, f"the Codex CLI {cli} does not run ({problem})"
    found = (
        f"CLI {cli} ({version}"
        + ("" if PINNED_VERSION in version else f"; tested with {PINNED_VERSION}")
        + ")"
    )
    if any(api_key(cfg, r) for r in ("optimizer", "target")):
        return True, found
    if cfg.model.codex_reuse_login:
        return True, f"{found}; no OPENAI_API_KEY or model.api_key: reuses the Codex login (auth.json)"
    return True, f"{found}; no OPENAI_API_KEY or model.api_key (a keyless model.base_url server only)"


def check_sandbox(cli: str, mode: str) -> str | None:
    """None when the CLI's sandbox starts here in `mode`, else why not (one line)."""
    if mode == "danger-full-access":
        return None
    with tempfile.TemporaryDirectory(prefix="skillgrad-codex-sbx-") as root:
        env = {k: os.environ[k] for k in PASSTHROUGH if k in os.environ}
        env.update(HOME=root, CODEX_HOME=root)
        argv = [cli, "sandbox", "-c", f"sandbox_mode={toml_str(mode)}", "--", "true"]
        try:
            proc = subprocess.run(
                argv, cwd=root, env=env, capture_output=True, text=True, timeout=_SANDBOX_CHECK_S
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"{type(exc).__name__}: {exc}"
    if proc.returncode == 0:
        return None
    lines = [ln.strip() for ln in proc.stderr.splitlines() if ln.strip() and "PATH aliases" not in ln]
    return " | ".join(lines[-3:])[:400] or f"exit code {proc.returncode}"


def _cli_or_error(cfg: Config) -> str:
    cli = find_cli(cfg)
    if cli is None:
        raise UserError(f"backend {BACKEND!r} is not usable here: {availability(cfg)[1]}")
    return cli


def _session(run: CodexRun, workspace: Path | None) -> CodexSession:
    session = steps_from_codex_events(run.events, workspace)
    if run.failure:  # the optimizer should see why the session stopped, as the trace's last step
        session.steps.append(TraceStep("text", run.failure, is_error=True))
        session.is_error = True
        session.errors = [run.failure, *session.errors]
    return session


# ---------------------------------------------------------------------------------------------
# target role


class CodexAgent:
    """The target role. Never raises for one task's failure (see backends/interface.py)."""

    name = BACKEND
    skills_dir = SKILLS_DIR

    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
        self.cli = _cli_or_error(cfg)
        self.model = cfg.model.model_for("target") or DEFAULT_MODEL
        problem = check_sandbox(self.cli, cfg.model.codex_sandbox)
        if problem:
            raise UserError(
                f"model.codex_sandbox={cfg.model.codex_sandbox}: the Codex sandbox cannot start here "
                f"({problem}); in a container that is already isolated set "
                "model.codex_sandbox=danger-full-access"
            )

    def run(self, task: Task, skill: str, workspace: Path) -> AgentResult:
        workspace = Path(workspace).resolve()
        try:
            workspace.mkdir(parents=True, exist_ok=True)
            prepare_workspace(workspace, task, skill, self.cfg.skill.name, SKILLS_DIR)
        except OSError as exc:
            failed = f"could not prepare the workspace {workspace}: {exc}"
            return AgentResult("", is_error=True, error=failed, workspace=workspace)
        prompt = render("skillgrad.backends", "codex_prompt", skill_name=self.cfg.skill.name)
        return self.run_prompt(prompt, workspace, [self.cfg.skill.name])

    def run_prompt(
        self, prompt: str, workspace: Path, skills: list[str], max_turns: int | None = None
    ) -> AgentResult:
        """One session on `prompt` in a prepared `workspace` (the CLI lists every skill under
        SKILLS_DIR, so `skills` is only what is there). With `max_turns` the session is stopped
        at that many tool calls and that is no failure (an activation probe:
        skillgrad.activation); otherwise `model.codex_max_turns` bounds it and reaching it fails."""
        m = self.cfg.model
        effort = m.effort_for("target")
        with tempfile.TemporaryDirectory(prefix="skillgrad-codex-") as root:
            argv = base_argv(self.cli, self.cfg, "target", workspace, m.codex_sandbox, effort) + ["-"]
            env = cli_env(self.cfg, "target", Path(root))
            run = run_cli(
                argv,
                env=env,
                cwd=workspace,
                prompt=prompt,
                timeout_s=m.codex_timeout_s,
                max_tool_calls=max_turns or m.codex_max_turns,
            )
        stopped = max_turns is not None and run.hit_tool_limit
        if stopped:
            run.failure = None
        session = _session(run, workspace)
        if stopped:  # the probe ended where it was told to, without a turn.completed
            session.is_error, session.errors = False, []
        return AgentResult(
            answer=session.final_answer.strip(),
            trace=session.steps,
            # Without turn.completed the tokens spent are unknown, so is the cost.
            usage=session.usage or Usage(calls=1, cost_usd=None),
            is_error=session.is_error,
            error="; ".join(session.errors) if session.is_error else None,
            raw=run.events,
            workspace=workspace,
        )


# ---------------------------------------------------------------------------------------------
# optimizer role


class CodexChat(CliChat):
    """The optimizer role (and a chat model in general) on the Codex CLI: without tools
    (`complete`), or reading a reflection workspace under the read-only sandbox (`investigate`)."""

    name = BACKEND
    default_model = DEFAULT_MODEL
    reading_tools = "read-only shell commands: `grep -n`, `sed -n 'A,Bp' FILE`, `head`, `tail`, `cat`, `ls`"

    def __init__(self, cfg: Config, role: Role) -> None:
        super().__init__(cfg, role)
        self.cli = _cli_or_error(cfg)

    def _once(
        self, messages: list[Message], schema: dict[str, Any] | None, effort: Effort | None
    ) -> CodexRun:
        system, prompt = split_messages(messages)
        with tempfile.TemporaryDirectory(prefix="skillgrad-codex-") as root:
            cwd = Path(root) / "empty"
            cwd.mkdir()
            argv = base_argv(self.cli, self.cfg, self.role, cwd, "read-only", effort) + optimizer_args()
            if system:
                argv += ["-c", f"developer_instructions={toml_str(system)}"]
            if schema is not None:
                schema_file = Path(root) / "schema.json"
                schema_file.write_text(json.dumps(strict_schema(schema)), encoding="utf-8")
                argv += ["--output-schema", str(schema_file)]
            return run_cli(
                argv + ["-"],
                env=cli_env(self.cfg, self.role, Path(root)),
                cwd=cwd,
                prompt=prompt,
                timeout_s=self.cfg.model.codex_timeout_s,
                max_tool_calls=0,
            )

    def _attempt(
        self, messages: list[Message], schema: dict[str, Any] | None, effort: Effort | None
    ) -> tuple[str | None, Usage, str]:
        run = self._once(messages, schema, effort)
        session = _session(run, None)
        usage = session.usage or Usage(calls=1, cost_usd=None)
        if run.hit_tool_limit:  # it tried a tool: re-asked as a bad reply
            return session.final_answer, usage, ""
        if not session.is_error:
            return session.final_answer, usage, ""
        return None, usage, "; ".join(session.errors)

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
        """The answer after reading `folder` in the read-only sandbox (see `backends.reading`)."""
        run = codex_reader.session_runner(self.cli, self.cfg, self.role, Path(folder), bounds, schema, effort)
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
    """The CLI a role's sessions run, by its version (see `backends.identity`)."""
    return cli_identity(find_cli(cfg))


def create_chat(cfg: Config, role: Role, state: None = None) -> CodexChat:
    return CodexChat(cfg, role)


def create_agent(cfg: Config, state: None = None) -> CodexAgent:
    return CodexAgent(cfg)
