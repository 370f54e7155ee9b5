"""Reading a budgeted view back against its steps: what each line shows and what each gap hides.

The writer is view.py; this is its inverse, kept next to it so that the two change together. It
checks the view's accounting: every error step is shown on a line of its own, counted on a
collapsed line, or counted by the gap marker that hides it, exactly once (user turns alike), and
every count a line or a marker prints matches the steps it stands for. `skillgrad trace`'s numbers,
bench/trace_parse.py's per-file table and the tests all come from here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from skillgrad.values import TraceStep

_SINGLE = re.compile(r"^(\d+)(?:-(\d+))?\. \[")
_COLLAPSED = re.compile(r"^steps ([\d, -]+): (\d+)x \[(\w+)")
_GAP = re.compile(
    r"^\[\.\.\. (\d+) steps?, ([\d,]+) chars hidden"
    r"(?:, (\d+) errors?)?(?:, (\d+) user turns?)?(?:, inside @.+?)?(?:: .+?)? \.\.\.\]$"
)


@dataclass
class ViewAccount:
    """How a view accounts for a trace's steps (step numbers are 1-based)."""

    shown: set[int] = field(default_factory=set)  # steps some line shows (collapsed lines: their ranges)
    errors_shown: set[int] = field(default_factory=set)  # error steps with a line of their own
    errors_collapsed: int = 0  # errors counted on collapsed lines
    errors_in_gaps: int = 0  # errors counted by gap markers
    users_shown: set[int] = field(default_factory=set)
    users_collapsed: int = 0
    users_in_gaps: int = 0
    problems: list[str] = field(default_factory=list)  # every count that does not match its steps

    @property
    def errors(self) -> int:
        return len(self.errors_shown) + self.errors_collapsed + self.errors_in_gaps

    @property
    def users(self) -> int:
        return len(self.users_shown) + self.users_collapsed + self.users_in_gaps


def _ranges(text: str) -> list[tuple[int, int]]:
    out = []
    for part in text.split(", "):
        a, _, b = part.partition("-")
        out.append((int(a), int(b or a)))
    return out


def _error(step: TraceStep) -> bool:
    return step.is_error and step.kind != "tool_call"


def read_view(view: str, steps: list[TraceStep]) -> ViewAccount:
    """The accounting of `view` (rendered from `steps`), with any mismatch in `problems`."""
    acc = ViewAccount()
    lines = [line for line in view.splitlines() if line]
    merged: set[int] = set()  # steps of ranges merged onto another line: they lie inside gaps
    spans: list[tuple[int, int] | None] = []  # per line: the steps it stands at (None: a marker)
    collapses: list[tuple[list[tuple[int, int]], int, bool]] = []
    for line in lines:
        if single := _SINGLE.match(line):
            a = int(single.group(1))
            b = int(single.group(2) or a)
            spans.append((a, b))
            acc.shown.update(range(a, b + 1))
            for n in range(a, b + 1):
                if n <= len(steps) and _error(steps[n - 1]):
                    acc.errors_shown.add(n)
                if n <= len(steps) and steps[n - 1].kind == "user":
                    acc.users_shown.add(n)
        elif collapsed := _COLLAPSED.match(line):
            ranges, count = _ranges(collapsed.group(1)), int(collapsed.group(2))
            spans.append(ranges[0])
            merged.update(n for a, b in ranges[1:] for n in range(a, b + 1))
            acc.shown.update(n for a, b in ranges for n in range(a, b + 1))
            collapses.append((ranges, count, collapsed.group(3) == "user"))
            acc.errors_collapsed += count
            acc.users_collapsed += count if collapsed.group(3) == "user" else 0
        else:
            spans.append(None)
    _check_collapses(acc, steps, collapses)
    _check_gaps(acc, steps, lines, spans, merged)
    return acc


def _check_collapses(
    acc: ViewAccount, steps: list[TraceStep], collapses: list[tuple[list[tuple[int, int]], int, bool]]
) -> None:
    for ranges, count, _ in collapses:
        inside = [n for a, b in ranges for n in range(a, b + 1) if _error(steps[n - 1])]
        members = [n for n in inside if n not in acc.errors_shown]
        if len(members) != count:
            acc.problems.append(f"steps {ranges}: counts {count}x, holds {len(members)} errors of its own")


def _check_gaps(
    acc: ViewAccount,
    steps: list[TraceStep],
    lines: list[str],
    spans: list[tuple[int, int] | None],
    merged: set[int],
) -> None:
    reached = 0  # the last step a line so far stands at
    for i, (line, span) in enumerate(zip(lines, spans, strict=True)):
        if span is not None:
            reached = max(reached, span[1])
            continue
        gap = _GAP.match(line)
        if gap is None:
            if not line.startswith("[... trace truncated"):
                acc.problems.append(f"line {i + 1} is neither a step nor a gap: {line[:80]}")
            continue
        later = next((s for s in spans[i + 1 :] if s is not None), None)
        first, last = reached + 1, (later[0] - 1 if later else len(steps))
        errors, users = int(gap.group(3) or 0), int(gap.group(4) or 0)
        acc.errors_in_gaps += errors
        acc.users_in_gaps += users
        hidden = [steps[n - 1] for n in range(first, last + 1) if n not in merged]
        expected = (
            last - first + 1,
            sum(1 for s in hidden if _error(s)),
            sum(1 for s in hidden if s.kind == "user"),
        )
        if (int(gap.group(1)), errors, users) != expected:
            acc.problems.append(f"gap {first}-{last} says {gap.group(1)}/{errors}/{users}, holds {expected}")
