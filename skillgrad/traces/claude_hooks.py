"""What Claude Code's hooks did, read from the system records it writes about them.

A hook can fail without blocking (the agent goes on; the CLI notes it) or block: stop the prompt or
the turn. Each becomes a step where it happened:
- `stop_hook_summary` (transcripts): its `hookErrors` (e.g. "Failed with non-blocking status code:
  ...") are a hook error step; `preventedContinuation: true` is a block, with its `stopReason`;
- `notification` with a `key` such as `stop-hook-error` (stream-json, where no summary is written):
  a hook error step, unless the summary it repeats was just read;
- `informational` with `preventContinuation: true`: a hook stopped the prompt or the turn (the CLI
  writes it after its "Operation stopped by hook: ..." user record, or alone when a
  UserPromptSubmit hook blocked the prompt and erased it);
- `hook_response` (stream-json, `SessionStart` and the like) that did not succeed: a hook error.
A hook error step is `text` with tool `hook` and is an error; a block is a `user` step with source
`hook` (the user's hook spoke), and it ends the session when nothing follows it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from skillgrad.traces.claude_turns import flag
from skillgrad.traces.steps import HOOK, hook_error_step
from skillgrad.values import TraceStep

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@dataclass
class HookOutcome:
    steps: list[TraceStep] = field(default_factory=list)
    stopped: str | None = None  # what the hook said when it stopped the prompt or the turn


def _plain(value: Any) -> str:
    return _ANSI.sub("", str(value or "")).strip()


def _is_hook_error(step: TraceStep | None) -> bool:
    return step is not None and step.kind == "text" and step.tool == HOOK and step.is_error


def _stop_summary(event: dict[str, Any], agent: str | None) -> HookOutcome:
    out = HookOutcome()
    raw = event.get("hookErrors")
    errors = [_plain(e) for e in (raw if isinstance(raw, list) else [raw] if raw else []) if _plain(e)]
    if errors:
        out.steps.append(hook_error_step(f"stop hook error: {'; '.join(errors)}", agent))
    if flag(event.get("preventedContinuation")):
        reason = _plain(event.get("stopReason")) or "no reason given"
        out.stopped = f"stop hook prevented continuation: {reason}"
        out.steps.append(TraceStep("user", out.stopped, HOOK, agent=agent))
    return out


def _prevented(event: dict[str, Any], last: TraceStep | None, agent: str | None) -> HookOutcome:
    said = _plain(event.get("content")) or "a hook stopped the prompt"
    out = HookOutcome(stopped=said)
    repeated = (
        last is not None and last.kind == "user" and " ".join(last.text.split()) == " ".join(said.split())
    )
    if not repeated:  # the CLI's user record said it already
        out.steps.append(TraceStep("user", said, HOOK, agent=agent))
    return out


def _hook_response(event: dict[str, Any], agent: str | None) -> HookOutcome:
    code, outcome = event.get("exit_code"), event.get("outcome")
    if outcome in (None, "success") and code in (None, 0):
        return HookOutcome()
    name = _plain(event.get("hook_name") or event.get("hook_event")) or "a"
    why = _plain(event.get("stderr")) or _plain(event.get("output")) or "no output"
    head = f"exit code {code}" if isinstance(code, int) else str(outcome)
    return HookOutcome([hook_error_step(f"{name} hook failed ({head}): {why}", agent)])


def read_hook_record(event: dict[str, Any], last: TraceStep | None, agent: str | None) -> HookOutcome | None:
    """The steps of a system record about hooks (`last`: the step before it), or None when the
    record is about something else."""
    subtype = event.get("subtype")
    if subtype == "stop_hook_summary":
        return _stop_summary(event, agent)
    if subtype == "informational":
        return _prevented(event, last, agent) if flag(event.get("preventContinuation")) else None
    if subtype == "hook_response":
        return _hook_response(event, agent)
    key = str(event.get("key") or "")
    if subtype == "notification" and key.endswith("hook-error"):
        if _is_hook_error(last):  # the stop_hook_summary just read holds the errors themselves
            return HookOutcome()
        return HookOutcome([hook_error_step(_plain(event.get("text")) or key, agent)])
    return None
