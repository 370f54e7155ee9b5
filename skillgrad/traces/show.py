"""What `skillgrad trace FILE` prints: the optimizer's view, every step, or the steps as JSON."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

from skillgrad.config import TraceConfig
from skillgrad.traces.claude import ParsedSession
from skillgrad.traces.steps import TraceCaps, render_full
from skillgrad.traces.view import render_view


@dataclass(frozen=True)
class TraceShow:
    mode: Literal["view", "full", "json"] = "view"
    budget: int | None = None  # the view's budget; None: the config's trace.total_chars


def _header(session: ParsedSession) -> str:
    status = (
        "failed"
        if session.finished and session.is_error
        else "finished"
        if session.finished
        else "unfinished"
    )
    errors = sum(1 for s in session.steps if s.is_error and s.kind != "tool_call")
    n = len(session.steps)
    parts = [f"{n} step{'s' * (n != 1)}", f"{errors} error{'s' * (errors != 1)}", status]
    if session.runs > 1:
        parts.append(f"the last of {session.runs} runs in this file")
    if session.skipped_lines:
        parts.append(f"{session.skipped_lines} unreadable line{'s' * (session.skipped_lines != 1)} skipped")
    return f"# session: {', '.join(parts)}"


def show_trace(session: ParsedSession, cfg: TraceConfig, show: TraceShow) -> str:
    if show.mode == "json":
        return "\n".join(json.dumps(s.to_json(), ensure_ascii=False) for s in session.steps)
    if show.mode == "full":
        body = render_full(session.steps)
    else:
        caps = TraceCaps(cfg.tool_result_chars, cfg.step_chars, cfg.total_chars)
        body = render_view(session.steps, caps, show.budget)
    return f"{_header(session)}\n{body}"
