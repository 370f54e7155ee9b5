"""One Claude Code CLI session through the official claude-agent-sdk, shared by the target
(`claude_code.ClaudeCodeAgent`), the optimizer without tools (`claude_code.ClaudeCodeChat`) and
the optimizer that reads a workspace (`claude_reader`): the CLI's environment and common options,
running a session to its end or its time limit, and telling a transient failure from a final one.
Environment variables reach the CLI only through `ClaudeAgentOptions.env`; os.environ is untouched.
"""

from __future__ import annotations

import contextlib
import re
from collections import deque
from typing import TYPE_CHECKING, Any

import anyio

from skillgrad.backends.claude_events import sdk_message_to_event
from skillgrad.backends.common import fatal_error, is_fatal_status, key_source
from skillgrad.config import Config
from skillgrad.lazy import lazy_import
from skillgrad.traces.claude import ParsedSession, steps_from_events
from skillgrad.values import Role

if TYPE_CHECKING:
    import claude_agent_sdk as sdk
else:
    sdk = lazy_import("claude_agent_sdk")  # loaded on first use

BACKEND = "claude_code_exec"
STDERR_LINES = 20
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
_TRANSIENT_STATUS = re.compile(r"\b(429|5\d\d)\b")


def cli_env(cfg: Config, role: Role) -> dict[str, str]:
    """Environment for the CLI process only (ClaudeAgentOptions.env): endpoint, key, isolation."""
    env = {
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "CLAUDE_CODE_DISABLE_CLAUDE_MDS": "1",
        "CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1",
    }
    base_url = cfg.model.base_url_for(role)
    key = cfg.model.api_key_for(role)
    if base_url:
        env["ANTHROPIC_BASE_URL"] = base_url
    if key:
        env["ANTHROPIC_API_KEY"] = key
    if role == "target" and cfg.model.claude_code_permission_mode == "bypassPermissions":
        env["IS_SANDBOX"] = "1"  # the CLI refuses to bypass permissions as root without it
    return env


def key_hint(cfg: Config, role: Role) -> str:
    """The setting to fix when the API refuses the CLI's credentials."""
    return f"{key_source(cfg, role, 'ANTHROPIC_API_KEY')} (or the CLI login, `claude login`)"


def common_options(cfg: Config, role: Role, stderr: deque[str]) -> dict[str, Any]:
    configured = cfg.model.claude_code_cli_path
    return {
        "env": cli_env(cfg, role),
        "model": cfg.model.model_for(role),
        "cli_path": str(cfg.resolve_path(configured)) if configured else None,
        "extra_args": {"no-session-persistence": None},
        "stderr": stderr.append,
        # The SDK's default (1 MB per JSON line) fails a long reply or tool result mid-session.
        "max_buffer_size": MAX_MESSAGE_BYTES,
    }


class _Refused(Exception):
    """The CLI reported the API refusing its credentials (it would retry for minutes)."""

    def __init__(self, status: int | None, error: str) -> None:
        super().__init__(error)
        self.status = status
        self.error = error


def refused_credentials(event: dict[str, Any]) -> _Refused | None:
    """An `api_retry` event for a refused key or exhausted credit: retrying cannot help."""
    if event.get("type") != "system" or event.get("subtype") != "api_retry":
        return None
    status = event.get("error_status")
    status = status if isinstance(status, int) else None
    error = str(event.get("error") or "")
    fatal = is_fatal_status(status, error) or error in ("authentication_failed", "billing_error")
    return _Refused(status, error or "refused") if fatal else None


async def _collect(
    prompt: str, options: sdk.ClaudeAgentOptions, timeout_s: float, events: list[dict[str, Any]]
) -> None:
    """Run one CLI session, appending every message as it arrives (kept even on timeout)."""
    refused: _Refused | None = None
    stream = sdk.query(prompt=prompt, options=options)
    try:
        with anyio.fail_after(timeout_s):
            async for msg in stream:
                event = sdk_message_to_event(msg)
                events.append(event)
                refused = refused_credentials(event)
                if refused is not None:
                    break
    finally:
        # Close in this task, whatever ended the loop: the SDK ends the CLI process here, instead
        # of a garbage-collected generator doing it after the event loop is gone.
        close = getattr(stream, "aclose", None)  # typed as an iterator; it is an async generator
        if close is not None:
            with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
                await close()
    if refused is not None:
        raise refused


def run_session(
    prompt: str,
    options: sdk.ClaudeAgentOptions,
    timeout_s: float,
    stderr: deque[str],
    key_hint: str = "ANTHROPIC_API_KEY",
) -> tuple[list[dict[str, Any]], ParsedSession, str | None]:
    """Run the CLI synchronously; (raw events, parsed session, failure text or None). Never raises
    for a CLI failure: a crash, a timeout or a missing result record all come back as text. Raises
    `FatalBackendError` (naming `key_hint`) as soon as the API refuses the credentials."""
    events: list[dict[str, Any]] = []
    failure: str | None = None
    try:
        anyio.run(_collect, prompt, options, timeout_s, events)
    except _Refused as refused:
        where = f"the API at {options.env.get('ANTHROPIC_BASE_URL') or 'api.anthropic.com'}"
        raise fatal_error(BACKEND, where, refused.status, refused.error, key_hint) from None
    except TimeoutError:
        failure = f"Claude Code timed out after {timeout_s:g}s"
    except Exception as exc:  # the SDK raises several types for a dead or broken CLI
        detail = " | ".join(line.strip() for line in stderr if line.strip())
        failure = f"Claude Code failed: {type(exc).__name__}: {exc}" + (
            f" (stderr: {detail})" if detail else ""
        )
    session = steps_from_events(events)
    if failure is None and not any(e.get("type") == "result" for e in events):
        failure = "Claude Code ended without a result record"
    return events, session, failure


def is_transient(failure: str | None, session: ParsedSession) -> bool:
    """Worth running again as is: a crash, a timeout, an API error (429 / 5xx / overloaded)."""
    if failure:
        return True
    return session.terminal_reason == "api_error" or (
        session.is_error and any(_TRANSIENT_STATUS.search(e) for e in session.errors)
    )
