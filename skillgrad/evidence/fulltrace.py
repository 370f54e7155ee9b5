"""`trace_full.txt`: every step of one session, numbered, uncapped, subagents labelled, and the
lines each step occupies, so a budgeted view's gap can say where its hidden steps are.

A step starts a line `N. [kind tool ERROR @subagent] first line of its text`, the same numbering
and labels as the budgeted view; the text's further lines follow, indented. A line longer than
WRAP_CHARS is wrapped (Claude Code's Read cuts lines past 2,000 characters): nothing is dropped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from skillgrad.traces.steps import step_label
from skillgrad.traces.view import Locator
from skillgrad.values import TraceStep

WRAP_CHARS = 1000
INDENT = "    "
HEADER = (
    "# {title}: the agent's whole session, {n} steps, every step uncapped. A step begins with "
    '"N. [kind tool ERROR @subagent]"; its further lines are indented.'
)


@dataclass(frozen=True)
class FullTrace:
    text: str
    spans: tuple[tuple[int, int], ...]  # per step, its 1-based first and last line

    def lines_of(self, first: int, last: int) -> tuple[int, int]:
        """The lines of steps first..last (0-based, inclusive)."""
        return self.spans[first][0], self.spans[last][1]


def _wrapped(line: str) -> list[str]:
    if len(line) <= WRAP_CHARS:
        return [line]
    return [line[i : i + WRAP_CHARS] for i in range(0, len(line), WRAP_CHARS)]


def _step_lines(number: int, step: TraceStep, text: str) -> list[str]:
    raw = text.splitlines() or [""]
    first, *rest = _wrapped(f"{number}. [{step_label(step)}] {raw[0]}".rstrip())
    out = [first] + [INDENT + part for part in rest]
    for line in raw[1:]:
        out += [(INDENT + part).rstrip() for part in _wrapped(line.rstrip())]
    return out


def full_trace(steps: list[TraceStep], title: str, redact: Callable[[str], str] = str) -> FullTrace:
    """The file's text and each step's lines; `redact` is applied to each step's text first, so
    the line numbers are those of what is written."""
    lines = [HEADER.format(title=title, n=len(steps))]
    spans = []
    for number, step in enumerate(steps, 1):
        rendered = _step_lines(number, step, redact(step.text))
        spans.append((len(lines) + 1, len(lines) + len(rendered)))
        lines += rendered
    return FullTrace("\n".join(lines) + "\n", tuple(spans))


def locator(path: str, trace: FullTrace) -> Locator:
    """Gap pointers into `path` (the file's path inside the workspace)."""

    def locate(first: int, last: int) -> str:
        start, end = trace.lines_of(first, last)
        return f"{path} lines {start}-{end}" if end > start else f"{path} line {start}"

    return locate
