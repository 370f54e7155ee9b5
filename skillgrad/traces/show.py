"""What `skillgrad trace` prints: the optimizer's view, every step, or the steps as JSON.

The header says how many steps and errors the session has (the parser's closing note of an
unfinished session is no error of the session's), whether it finished and the evidence that decided
it, and anything given that could not be placed (an agent file that matches no Task). The view's
budget covers the header too: `--budget N` prints at most N characters, the header taking at most
half of them (what does not fit is counted on its last line).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

from skillgrad.config import TraceConfig
from skillgrad.traces.parsed_session import ParsedSession
from skillgrad.traces.steps import TraceCaps, is_session_note, render_full
from skillgrad.traces.view import render_view


@dataclass(frozen=True)
class TraceShow:
    mode: Literal["view", "full", "json"] = "view"
    budget: int | None = None  # the view's budget; None: the config's trace.total_chars


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' * (n != 1)}"


def _header(session: ParsedSession) -> list[str]:
    errors = sum(1 for s in session.steps if s.is_error and s.kind != "tool_call" and not is_session_note(s))
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
    return lines + [f"# warning: {w}" for w in session.warnings]


def _cut(line: str, room: int) -> str:
    return line if len(line) <= room else (line[: room - 3] + "..." if room > 3 else line[:room])


def fit_header(lines: list[str], room: int) -> str:
    """The header lines within `room` characters: the first always (cut to fit), then the others
    while they fit; the ones that do not are counted on the last line."""
    out, rest = [_cut(lines[0], room)], lines[1:]
    while rest and len("\n".join([*out, rest[0]])) <= room:
        out.append(rest.pop(0))
    while rest:  # the count of what did not fit, a shown line giving way to it when it must
        more = f"# ... {_plural(len(rest), 'more header line')} (--full shows them)"
        if len("\n".join([*out, more])) <= room:
            out.append(more)
            break
        if len(out) == 1:
            break
        rest.insert(0, out.pop())
    return "\n".join(out)


def show_trace(session: ParsedSession, cfg: TraceConfig, show: TraceShow) -> str:
    if show.mode == "json":
        return "\n".join(json.dumps(s.to_json(), ensure_ascii=False) for s in session.steps)
    if show.mode == "full":
        return "\n".join([*_header(session), render_full(session.steps)])
    caps = TraceCaps(cfg.tool_result_chars, cfg.step_chars, cfg.total_chars)
    budget = cfg.total_chars if show.budget is None else show.budget
    header = fit_header(_header(session), budget // 2)
    return f"{header}\n{render_view(session.steps, caps, budget - len(header) - 1)}"
