"""What `skillgrad trace` prints: the optimizer's view, every step, or the steps as JSON.

The header says how many steps and errors the session has, whether it finished and the evidence
that decided it, and anything given that could not be placed (an agent file that matches no Task).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

from skillgrad.config import TraceConfig
from skillgrad.traces.session import ParsedSession
from skillgrad.traces.steps import TraceCaps, render_full
from skillgrad.traces.view import render_view


@dataclass(frozen=True)
class TraceShow:
    mode: Literal["view", "full", "json"] = "view"
    budget: int | None = None  # the view's budget; None: the config's trace.total_chars


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' * (n != 1)}"


def _header(session: ParsedSession) -> str:
    errors = sum(1 for s in session.steps if s.is_error and s.kind != "tool_call")
    status = session.status + (f" ({session.evidence})" if session.evidence else "")
    parts = [_plural(len(session.steps), "step"), _plural(errors, "error"), status]
    if session.runs > 1:
        parts.append(f"the last of {session.runs} runs in this file")
    if session.skipped_lines:
        parts.append(f"{_plural(session.skipped_lines, 'unreadable line')} skipped")
    lines = [f"# session: {', '.join(parts)}"]
    if session.lone_agent:
        lines.append(
            f"# note: this is the file of subagent {session.lone_agent}, read without its main session "
            "(pass it after the main session's file to see it under its Task)"
        )
    lines += [f"# warning: {w}" for w in session.warnings]
    return "\n".join(lines)


def show_trace(session: ParsedSession, cfg: TraceConfig, show: TraceShow) -> str:
    if show.mode == "json":
        return "\n".join(json.dumps(s.to_json(), ensure_ascii=False) for s in session.steps)
    if show.mode == "full":
        body = render_full(session.steps)
    else:
        caps = TraceCaps(cfg.tool_result_chars, cfg.step_chars, cfg.total_chars)
        body = render_view(session.steps, caps, show.budget)
    return f"{_header(session)}\n{body}"
