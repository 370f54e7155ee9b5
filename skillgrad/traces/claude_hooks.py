"""What Claude Code's hooks did, read from the records it writes about them.

A hook can fail without blocking (the agent goes on; the CLI notes it) or block: give the agent
feedback it must act on, or stop the prompt or the turn. Each becomes a step where it happened:
- `stop_hook_summary` (transcripts): its `hookErrors` (e.g. "Failed with non-blocking status code:
  ...") are a hook error step; `preventedContinuation: true` is a block, with its `stopReason`;
- `notification` with a `key` such as `stop-hook-error` (stream-json, where no summary is written):
  a hook error step, unless the summary it repeats was just read;
- `informational` with `preventContinuation: true`: a hook stopped the prompt or the turn (the CLI
  writes it after its "Operation stopped by hook: ..." user record, or alone when a
  UserPromptSubmit hook blocked the prompt and erased it);
- `hook_response` (stream-json, `SessionStart` and the like) that did not succeed: a hook error;
- `attachment` records of later 2.1 transcripts: `hook_non_blocking_error` (an error),
  `hook_blocking_error` (a block), `hook_stopped_continuation` (a block that stopped the session).
A hook error step is `text` with tool `hook` and is an error; a block is a `user` step with source
`hook` (the user's hook spoke), and it ends the session when nothing follows it. One hook outcome
is one step, however many records say it (a block's attachment, its "Stop hook feedback" message and
the summary that lists it again): add_hook_steps keeps the first and drops the repeats.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from skillgrad.traces.claude_turns import flag
from skillgrad.traces.steps import HOOK, hook_error_step
from skillgrad.values import TraceStep

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# What a hook step says before the hook's own words (so that two records of one outcome compare)
_HEAD = re.compile(
    r"^(?:stop hook (?:error|prevented continuation)|stop hook feedback|[\w:.-]+ hook "
    r"(?:error|blocked|stopped the session|failed \([^)]*\)))\s*:\s*",
    re.I,
)
_SAME_MIN_CHARS = 8  # shorter words than this are not taken as one outcome said twice


@dataclass
class HookOutcome:
    steps: list[TraceStep] = field(default_factory=list)
    stopped: str | None = None  # what the hook said when it stopped the prompt or the turn


def _plain(value: Any) -> str:
    return _ANSI.sub("", str(value or "")).strip()


def _said(step: TraceStep) -> str:
    return " ".join(_HEAD.sub("", step.text.strip()).split()).lower()


def _same(a: TraceStep, b: TraceStep) -> bool:
    x, y = _said(a), _said(b)
    return len(min(x, y, key=len)) >= _SAME_MIN_CHARS and (x in y or y in x)


def _recent(steps: list[TraceStep]) -> list[TraceStep]:
    """The hook steps at the end of `steps` (what the hooks said since the agent's last step)."""
    out: list[TraceStep] = []
    for step in reversed(steps):
        if step.tool != HOOK:
            break
        out.append(step)
    return out


def add_hook_steps(steps: list[TraceStep], new: list[TraceStep]) -> None:
    """Append hook steps, each outcome once. A block said again (its feedback after its attachment)
    is dropped; an error the summary listed that a block then says was that block: the block stays."""
    for step in new:
        said_before = [r for r in _recent(steps) if _same(step, r)]
        if not said_before:
            steps.append(step)
        elif step.kind == "user" and all(r.kind == "text" for r in said_before):
            for r in said_before:
                steps.remove(r)
            steps.append(step)


def _errors(raw: Any) -> list[str]:
    values = raw if isinstance(raw, list) else [raw] if raw else []
    return [p for p in (_plain(v) for v in values) if p]


def _stop_summary(event: dict[str, Any], agent: str | None) -> HookOutcome:
    out = HookOutcome()
    errors = _errors(event.get("hookErrors"))
    if errors:
        out.steps.append(hook_error_step(f"stop hook error: {'; '.join(errors)}", agent))
    if flag(event.get("preventedContinuation")):
        reason = _plain(event.get("stopReason")) or "no reason given"
        out.stopped = f"stop hook prevented continuation: {reason}"
        out.steps.append(TraceStep("user", out.stopped, HOOK, agent=agent))
    return out


def _hook_response(event: dict[str, Any], agent: str | None) -> HookOutcome:
    code, outcome = event.get("exit_code"), event.get("outcome")
    if outcome in (None, "success") and code in (None, 0):
        return HookOutcome()
    name = _plain(event.get("hook_name") or event.get("hook_event")) or "a"
    why = _plain(event.get("stderr")) or _plain(event.get("output")) or "no output"
    head = f"exit code {code}" if isinstance(code, int) else str(outcome)
    return HookOutcome([hook_error_step(f"{name} hook failed ({head}): {why}", agent)])


def read_hook_record(event: dict[str, Any], agent: str | None, recent_error: bool) -> HookOutcome | None:
    """The steps of a system record about hooks (`recent_error`: a hook error step was the last
    step), or None when the record is about something else."""
    subtype = event.get("subtype")
    if subtype == "stop_hook_summary":
        return _stop_summary(event, agent)
    if subtype == "informational":
        if not flag(event.get("preventContinuation")):
            return None
        said = _plain(event.get("content")) or "a hook stopped the prompt"
        return HookOutcome([TraceStep("user", said, HOOK, agent=agent)], stopped=said)
    if subtype == "hook_response":
        return _hook_response(event, agent)
    key = str(event.get("key") or "")
    if subtype == "notification" and key.endswith("hook-error"):
        if recent_error:  # the summary just read holds the errors themselves
            return HookOutcome()
        return HookOutcome([hook_error_step(_plain(event.get("text")) or key, agent)])
    return None


def read_hook_attachment(attachment: Any, agent: str | None) -> HookOutcome | None:
    """The steps of a 2.1 `attachment` record about a hook, or None for any other attachment."""
    if not isinstance(attachment, dict):
        return None
    kind = attachment.get("type")
    name = _plain(attachment.get("hookName") or attachment.get("hookEvent")) or "a"
    if kind == "hook_non_blocking_error":
        why = _plain(attachment.get("stderr")) or _plain(attachment.get("stdout")) or "no output"
        return HookOutcome([hook_error_step(f"{name} hook error: {why}", agent)])
    if kind == "hook_blocking_error":
        raw = attachment.get("blockingError")
        why = _plain(raw.get("blockingError") if isinstance(raw, dict) else raw) or "no reason given"
        return HookOutcome([TraceStep("user", f"{name} hook blocked: {why}", HOOK, agent=agent)])
    if kind == "hook_stopped_continuation":
        said = f"{name} hook stopped the session: {_plain(attachment.get('message')) or 'no reason given'}"
        return HookOutcome([TraceStep("user", said, HOOK, agent=agent)], stopped=said)
    return None
