"""The budgeted view of a trace: what the optimizer reads, `claude_trace_steps.txt` and `skillgrad trace`.

Under a character budget the view always keeps how the session started (the first steps), how it
ended (the last steps and the final answer) and every error with the call that caused it; a run of
near-identical errors becomes one line with its count. What is left of the budget goes to the user's
turns, then to the other steps nearest the two ends (the main agent before its subagents). Every gap
says how many steps and characters it hides. When the must-keep lines do not fit, they are clipped
shorter, then errors of one kind are merged across the whole trace, then fewer first/last steps are
kept; a view is never longer than its budget, markers included, and the same steps always give the
same view.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from itertools import accumulate

from skillgrad.traces.steps import TraceCaps, clip, render_step, step_label
from skillgrad.values import TraceStep

TRUNCATION_MARKER = "[... trace truncated: {n} more characters omitted ...]"
_WIDTHS: tuple[int | None, ...] = (None, 300, 200, 140, 100, 70, 50, 40, 32, 24)
_MAX_GAP_BETWEEN_REPEATS = 3  # steps between two repeats of an error that still make one run
_DIGITS = re.compile(r"\d+")
# Where the steps a gap hides can be read in full: (first, last) 0-based step indices -> a short
# pointer such as `tasks/03/trace_full.txt lines 120-310`, appended to the gap's marker.
Locator = Callable[[int, int], str]


@dataclass(frozen=True)
class _Stage:
    head: int
    tail: int
    users_kept: bool
    errors_kept: bool
    merge_errors: bool
    min_width: int
    user_width: int  # a user turn is clipped no shorter than this: it says why the agent turned


_STAGES = (
    _Stage(3, 3, True, True, False, 70, 200),
    _Stage(2, 2, True, True, True, 40, 120),
    _Stage(1, 1, True, True, True, 24, 60),
    _Stage(1, 1, False, True, True, 24, 24),
    # Last resort: only the ending is sure; errors come first in the fill, the rest are counted.
    _Stage(1, 1, False, False, False, 24, 24),
)
_RUN_CALL_CHARS = 160  # the call shown on a collapsed line: enough to recognise it


@dataclass
class _Item:
    """One line of the view: a single step, or a collapsed run of repeated errors."""

    first: int
    last: int
    count: int = 1  # repeats in a collapsed run
    call: int | None = None  # the step whose call caused the error(s)
    distinct_calls: int = 1
    others: int = 0  # steps inside a run that are neither the call nor the error
    error: bool = False
    signature: str = ""
    merged_ranges: list[tuple[int, int]] = field(default_factory=list)


def _signature(step: TraceStep) -> str:
    text = _DIGITS.sub("#", " ".join(step.text.lower().split()))[:120]
    return f"{step.kind}|{step.tool}|{step.agent}|{text}"


def _call_of(steps: list[TraceStep], index: int) -> int | None:
    """The tool_call that produced the result at `index`: same ref, else the step just before."""
    result = steps[index]
    if result.kind != "tool_result":
        return None
    for j in range(index - 1, max(-1, index - 40), -1):
        step = steps[j]
        if step.kind == "tool_call" and (
            (result.ref is not None and step.ref == result.ref) or (result.ref is None and j == index - 1)
        ):
            return j
    return None


def _is_answer(step: TraceStep) -> bool:
    return step.kind == "text" and step.agent is None and not step.is_error


def _is_error(step: TraceStep) -> bool:
    return step.is_error and step.kind != "tool_call"


def _error_runs(steps: list[TraceStep]) -> list[list[int]]:
    """Indices of error steps, grouped into runs of near-identical errors close to each other."""
    runs: list[list[int]] = []
    for i, step in enumerate(steps):
        if not _is_error(step):
            continue
        if runs:
            prev = runs[-1][-1]
            between = steps[prev + 1 : i]
            close = len(between) <= _MAX_GAP_BETWEEN_REPEATS + 1 and not any(
                s.is_error or s.kind == "user" for s in between
            )
            if close and _signature(steps[prev]) == _signature(step):
                runs[-1].append(i)
                continue
        runs.append([i])
    return runs


def _items(steps: list[TraceStep]) -> list[_Item]:
    """All steps as items, in order; a run of 2+ repeated errors (with their calls) is one item."""
    collapsed: dict[int, _Item] = {}
    covered: set[int] = set()
    covered_until = -1
    for run in _error_runs(steps):
        if len(run) == 1:
            continue
        first_call = _call_of(steps, run[0])
        start = first_call if first_call is not None and first_call > covered_until else run[0]
        calls = [c for c in (_call_of(steps, i) for i in run) if c is not None]
        span = set(range(start, run[-1] + 1))
        item = _Item(
            start,
            run[-1],
            count=len(run),
            call=first_call if first_call == start else None,
            distinct_calls=len({steps[c].text for c in calls}) or 1,
            others=len(span - set(run) - set(calls)),
            error=True,
            signature=_signature(steps[run[0]]),
        )
        collapsed[start] = item
        covered |= span
        covered_until = run[-1]
    items: list[_Item] = []
    for i, step in enumerate(steps):
        if i in collapsed:
            items.append(collapsed[i])
        elif i in covered:
            continue
        elif _is_error(step) and items and items[-1].last == i - 1 and _call_of(steps, i) == i - 1:
            items[-1] = _Item(i - 1, i, call=i - 1, error=True, signature=_signature(step))  # call -> error
        else:
            error = _is_error(step)
            items.append(_Item(i, i, error=error, signature=_signature(step) if error else ""))
    return items


class _Layout:
    """Prefix sums that price any gap's marker in O(1)."""

    def __init__(
        self, steps: list[TraceStep], items: list[_Item], counted: set[int], locate: Locator | None = None
    ) -> None:
        self.steps = steps
        self.items = items
        self.locate = locate
        self.chars = [0, *accumulate(len(s.text) for s in steps)]
        # errors a gap hides and no merged line counts
        self.errors = [0, *accumulate(int(_is_error(s) and i not in counted) for i, s in enumerate(steps))]
        # run_end[i]: the last index of the run of steps sharing steps[i]'s agent
        self.run_end = [0] * len(steps)
        for i in range(len(steps) - 1, -1, -1):
            same = i + 1 < len(steps) and steps[i + 1].agent == steps[i].agent
            self.run_end[i] = self.run_end[i + 1] if same else i

    def marker(self, first: int, last: int) -> str:
        """The gap line for hidden steps first..last (0-based, inclusive); '' for no gap."""
        if last < first:
            return ""
        n = last - first + 1
        parts = [f"{n} step{'s' * (n != 1)}, {self.chars[last + 1] - self.chars[first]:,} chars hidden"]
        errors = self.errors[last + 1] - self.errors[first]
        if errors:
            parts.append(f"{errors} error{'s' * (errors != 1)}")
        agent = self.steps[first].agent
        if agent is not None and self.run_end[first] >= last:
            parts.append(f"inside subagent {agent}")
        where = f": {self.locate(first, last)}" if self.locate is not None else ""
        return f"[... {', '.join(parts)}{where} ...]"

    def gap_cost(self, left: int | None, right: int | None) -> int:
        """Characters (with its newline) of the marker between two shown items (None: an end)."""
        first = 0 if left is None else self.items[left].last + 1
        last = len(self.steps) - 1 if right is None else self.items[right].first - 1
        marker = self.marker(first, last)
        return len(marker) + 1 if marker else 0


def _ranges_text(ranges: list[tuple[int, int]]) -> str:
    return ", ".join(f"{a + 1}" if a == b else f"{a + 1}-{b + 1}" for a, b in ranges)


def _item_lines(
    steps: list[TraceStep], item: _Item, caps: TraceCaps, width: int | None, user_width: int = 0
) -> list[str]:
    def limit(step: TraceStep) -> int:
        if width is None:
            return caps.step_limit(step)
        floor = user_width if step.kind == "user" else 0
        return min(max(width, floor), caps.step_limit(step))

    if item.first == item.last and not item.merged_ranges:
        step = steps[item.first]
        return [render_step(item.first + 1, step, limit(step))]
    error = next(steps[i] for i in range(item.first, item.last + 1) if _is_error(steps[i]))
    where = _ranges_text([(item.first, item.last), *item.merged_ranges])
    head = f"{where}." if item.count == 1 else f"steps {where}: {item.count}x"
    if item.call is not None:
        call = steps[item.call]
        shown = clip(call.text, min(limit(call), _RUN_CALL_CHARS))
        text = f"{head} [{step_label(call)}] {shown} -> ERROR {clip(error.text, limit(error))}"
    else:
        text = f"{head} [{step_label(error)}] {clip(error.text, limit(error))}"
    notes = []
    if item.distinct_calls > 1:
        notes.append(f"{item.distinct_calls} distinct calls")
    if item.others:
        notes.append(f"+{item.others} other step{'s' * (item.others != 1)}")
    return [text + (f" ({', '.join(notes)})" if notes else "")]


def _merge_errors(items: list[_Item]) -> tuple[list[_Item], set[int]]:
    """Errors of one kind across the whole trace become one line on their first item."""
    first_of: dict[str, _Item] = {}
    merged: set[int] = set()
    out: list[_Item] = []
    for index, item in enumerate(items):
        if item.error and item.signature in first_of:
            keeper = first_of[item.signature]
            keeper.merged_ranges.append((item.first, item.last))
            keeper.count += item.count
            merged.add(index)
        elif item.error:
            item = replace(item, merged_ranges=[])
            first_of[item.signature] = item
        out.append(item)
    return out, merged


@dataclass
class _Plan:
    items: list[_Item]
    lines: dict[int, list[str]]
    chosen: list[int]
    used: int
    layout: _Layout


def _cost(layout: _Layout, chosen: list[int], lines: dict[int, list[str]]) -> int:
    total = sum(len(line) + 1 for i in chosen for line in lines[i])
    bounds: list[int | None] = [None, *chosen, None]
    total += sum(layout.gap_cost(a, b) for a, b in zip(bounds, bounds[1:], strict=False))
    return total - 1


def _must_keep(steps: list[TraceStep], items: list[_Item], stage: _Stage, skip: set[int]) -> list[int]:
    n = len(items)
    keep = set(range(min(stage.head, n))) | set(range(max(0, n - stage.tail), n))
    step_to_item = {i: k for k, item in enumerate(items) for i in range(item.first, item.last + 1)}
    final = next((i for i in range(len(steps) - 1, -1, -1) if _is_answer(steps[i])), None)
    if final is not None:
        keep.add(step_to_item[final])
    for k, item in enumerate(items):
        if k in skip:
            continue
        if item.error and stage.errors_kept:
            keep.add(k)
            call = _call_of(steps, item.first) if item.count == 1 else None
            if call is not None:
                keep.add(step_to_item[call])
        elif stage.users_kept and steps[item.first].kind == "user":
            keep.add(k)
    return sorted(keep - skip)


def _fill_order(steps: list[TraceStep], items: list[_Item], skip: set[int]) -> list[int]:
    """The optional items, best first: user turns, then main-agent steps alternately from the
    end and the start, then subagent steps the same way."""
    n = len(items)
    alternating = [n - 1 - k // 2 if k % 2 == 0 else k // 2 for k in range(n)]

    def rank(k: int) -> int:
        step = steps[items[k].first]
        return 0 if items[k].error else 1 if step.kind == "user" else 2 if step.agent is None else 3

    return sorted((k for k in alternating if k not in skip), key=rank)  # stable: ends first


def _plan(steps: list[TraceStep], caps: TraceCaps, budget: int, locate: Locator | None) -> _Plan | None:
    base = _items(steps)
    for stage in _STAGES:
        items, skip = _merge_errors(base) if stage.merge_errors else (base, set())
        counted = {i for k in skip for i in range(items[k].first, items[k].last + 1)}
        layout = _Layout(steps, items, counted, locate)
        must = _must_keep(steps, items, stage, skip)
        for width in (w for w in _WIDTHS if w is None or w >= stage.min_width):
            lines = {k: _item_lines(steps, items[k], caps, width, stage.user_width) for k in must}
            used = _cost(layout, must, lines)
            if used <= budget:
                plan = _Plan(items, lines, must, used, layout)
                _fill(steps, caps, plan, budget, skip, width)
                return plan
    return None


def _fill(
    steps: list[TraceStep], caps: TraceCaps, plan: _Plan, budget: int, skip: set[int], width: int | None
) -> None:
    """Add optional items, best first, each at the must-keep lines' width, while they fit."""
    chosen, layout = plan.chosen, plan.layout
    for k in _fill_order(steps, plan.items, skip | set(chosen)):
        if budget - plan.used < 20:
            break
        lines = _item_lines(steps, plan.items[k], caps, width)
        pos = bisect.bisect_left(chosen, k)
        left = chosen[pos - 1] if pos > 0 else None
        right = chosen[pos] if pos < len(chosen) else None
        delta = (
            sum(len(line) + 1 for line in lines)
            - layout.gap_cost(left, right)
            + layout.gap_cost(left, k)
            + layout.gap_cost(k, right)
        )
        if plan.used + delta <= budget:
            chosen.insert(pos, k)
            plan.lines[k] = lines
            plan.used += delta


def _text(plan: _Plan) -> str:
    layout = plan.layout
    out: list[str] = []
    bounds: list[int | None] = [None, *plan.chosen, None]
    for left, right in zip(bounds, bounds[1:], strict=False):
        first = 0 if left is None else plan.items[left].last + 1
        last = len(layout.steps) - 1 if right is None else plan.items[right].first - 1
        marker = layout.marker(first, last)
        if marker:
            out.append(marker)
        if right is not None:
            out.extend(plan.lines[right])
    return "\n".join(out)


def render_view(
    steps: list[TraceStep],
    caps: TraceCaps | None = None,
    budget: int | None = None,
    locate: Locator | None = None,
) -> str:
    """The budgeted view of `steps`: at most `budget` (default `caps.total_chars`) characters.
    With `locate`, each gap marker also says where its hidden steps can be read in full."""
    caps = caps or TraceCaps()
    budget = caps.total_chars if budget is None else budget
    if not steps or budget <= 0:
        return ""
    plan = _plan(steps, caps, budget, locate)
    if plan is not None:
        return _text(plan)
    # Not even one first and one last line fit: a plain cut that says what it dropped.
    text = "\n".join(render_step(i, s, 30) for i, s in enumerate(steps, 1))
    for size in range(len(TRUNCATION_MARKER) + 8, len(TRUNCATION_MARKER) + 16):
        keep = max(0, budget - size - 1)
        marker = TRUNCATION_MARKER.format(n=len(text) - keep)
        if keep + 1 + len(marker) <= budget:
            return (text[:keep] + "\n" + marker) if keep else marker[:budget]
    return text[:budget]


def render_steps(steps: list[TraceStep], caps: TraceCaps | None = None) -> str:
    """The budgeted view at `caps.total_chars` (the one renderer every caller uses)."""
    return render_view(steps, caps)
