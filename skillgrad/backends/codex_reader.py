"""Codex as an analyst that reads a folder (`ReadingChatModel.investigate`, see `reading`).

Found by running the pinned CLI (0.169.0) against a scripted API: the session runs with `--cd` the
folder and `--sandbox read-only`, so its shell reads (`cat`, `sed -n`, `grep -n`) and nothing
else: a write is refused by the file system ("Read-only file system"), `apply_patch` is rejected
("writing is blocked by read-only sandbox"), and the network is cut. The sandbox still lets a
command read outside the folder (Claude Code's reader cannot); its HOME and CODEX_HOME are private
and empty, and the API key is kept out of the commands' environment (`codex_args`). Tool calls
are counted from the events and the session is stopped past `ReadingBounds.turns` of them (the CLI
has no turn limit of its own); its turns are counted as its tool calls plus the answer.
"""

from __future__ import annotations

import json
import shlex
import tempfile
from pathlib import Path
from typing import Any

from skillgrad.backends.codex_args import base_argv, cli_env, reader_args, strict_schema, toml_str
from skillgrad.backends.codex_process import TOOL_ITEMS, CodexRun, run_cli
from skillgrad.backends.common import split_messages
from skillgrad.backends.reading import ReadingBounds, SessionOutcome, SessionRunner, ToolUse
from skillgrad.config import Config
from skillgrad.traces.codex import steps_from_codex_events
from skillgrad.values import Effort, Message, Role, Usage

SHELL_TOOL = "shell"
_SHELLS = ("bash", "sh", "zsh")


def shell_script(command: str) -> str:
    """The script of `/bin/bash -lc '<script>'` (how the CLI reports a command), else the command."""
    try:
        argv = shlex.split(command)
    except ValueError:
        return command
    if len(argv) == 3 and argv[0].rsplit("/", 1)[-1] in _SHELLS and argv[1] in ("-c", "-lc"):
        return argv[2]
    return command


def _tool_use(item: dict[str, Any]) -> ToolUse:
    kind = str(item.get("type"))
    status = str(item.get("status") or "")
    if kind == "command_execution":
        exit_code = item.get("exit_code")
        failed = status not in ("completed", "in_progress") or (isinstance(exit_code, int) and exit_code != 0)
        output = str(item.get("aggregated_output") or "")
        return ToolUse.of(
            SHELL_TOOL, {"command": shell_script(str(item.get("command") or ""))}, output, failed
        )
    details = {k: v for k, v in item.items() if k not in ("id", "type", "status")}
    return ToolUse.of(kind, details, "", status != "completed")


def tool_uses(events: list[dict[str, Any]]) -> list[ToolUse]:
    """Every tool call of the session, its last report (completed, else started) in order."""
    items: dict[str, dict[str, Any]] = {}
    for event in events:
        item = event.get("item")
        if not isinstance(item, dict) or event.get("type") not in ("item.started", "item.completed"):
            continue
        if item.get("type") in TOOL_ITEMS:
            items[str(item.get("id"))] = item
    return [_tool_use(item) for item in items.values()]


def _run_once(
    cli: str,
    cfg: Config,
    role: Role,
    folder: Path,
    messages: list[Message],
    schema: dict[str, Any] | None,
    effort: Effort | None,
    bounds: ReadingBounds,
    seconds_left: float,
) -> CodexRun:
    system, prompt = split_messages(messages)
    with tempfile.TemporaryDirectory(prefix="skillgrad-codex-") as root:
        argv = base_argv(cli, cfg, role, folder, "read-only", effort) + reader_args()
        if system:
            argv += ["-c", f"developer_instructions={toml_str(system)}"]
        if schema is not None:
            schema_file = Path(root) / "schema.json"
            schema_file.write_text(json.dumps(strict_schema(schema)), encoding="utf-8")
            argv += ["--output-schema", str(schema_file)]
        return run_cli(
            argv + ["-"],
            env=cli_env(cfg, role, Path(root)),
            cwd=folder,
            prompt=prompt,
            timeout_s=seconds_left,
            max_tool_calls=bounds.turns,
        )


def session_runner(
    cli: str,
    cfg: Config,
    role: Role,
    folder: Path,
    bounds: ReadingBounds,
    schema: dict[str, Any] | None,
    effort: Effort | None,
) -> SessionRunner:
    def run(messages: list[Message], seconds_left: float) -> SessionOutcome:
        codex = _run_once(cli, cfg, role, folder, messages, schema, effort, bounds, seconds_left)
        session = steps_from_codex_events(codex.events, folder)
        uses = tool_uses(codex.events)
        usage = session.usage or Usage(calls=1, cost_usd=None)
        outcome = SessionOutcome(None, usage, tool_uses=uses, turns=len(uses) + 1)
        if codex.hit_tool_limit:
            outcome.bound = (
                f"used its {bounds.turns} tool calls (optimizer.reflection_turns) reading its workspace "
                "without answering; raise optimizer.reflection_turns"
            )
        elif codex.failure is not None and "timed out" in codex.failure:
            outcome.bound = (
                f"ran past optimizer.reflection_timeout_s={bounds.timeout_s:g}s while reading its "
                "workspace; raise optimizer.reflection_timeout_s"
            )
        elif codex.failure or session.is_error:
            outcome.failure = "; ".join([codex.failure or "", *session.errors]).strip("; ")
        else:
            outcome.answer = session.final_answer
        return outcome

    return run
