"""The budgeted view of a trace: what the optimizer reads, `claude_trace_steps.txt` and `skillgrad trace`.

Under a character budget the view always keeps how the session started (the first steps), how it
ended (the last steps and the final answer) and every error with the call that caused it; a run of
repeats (the same call failing the same way) becomes one line with its count (view_items.py). The
user's turns and the agent's own words between two failures are kept with them; what is left of
the budget goes to the other steps nearest the two ends (the main agent before its subagents).
Every gap says what it hides: steps, characters, errors and user turns (gap_marker). When the
must-keep lines do not fit, they are clipped shorter, then repeats are merged across the whole
trace, then fewer first/last steps are kept, then user turns, the agent's words and errors become
optional; even then errors come first (the first of each kind, then the agent's words between
failures, then repeats), at the narrowest width that shows the most distinct ones. Every error is
shown, counted on a collapsed line, or counted by the gap that hides it, exactly once. A view is
never longer than its budget, markers included, and the same steps always give the same view.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass
from itertools import accumulate

from skillgrad.traces.steps import TraceCaps, clip, render_step, step_label
from skillgrad.traces.view_items import (
    Item,
    between_failures,
    build_items,
    error_text_key,
    final_answer_index,
    is_error,
    merge_errors,
)
from skillgrad.values import TraceStep

TRUNCATION_MARKER = "[... trace truncated: {n} more characters omitted ...]"
_WIDTHS: tuple[int | None, ...] = (None, 300, 200, 140, 100, 70, 50, 40, 32, 24, 16)
_RUN_CALL_CHARS = 160  # the call shown on a collapsed line: enough to recognise it
_MIN_FILL = 20  # below this many characters left, nothing more fits
# Where the steps a gap hides can be read in full: (first, last) 0-based step indices -> a short
# pointer such as `tasks/03/trace_full.txt lines 120-310`, appended to the gap's marker.
Locator = Callable[[int, int], str]


@dataclass(frozen=True)
class HiddenSpan:
    """What one gap of the view hides: steps first..last (1-based, inclusive) and what they hold."""

    first: int
    last: int
    chars: int
    errors: int  # errors that no line of the view shows or counts
    user_turns: int  # user steps that no line of the view shows
    agent: str | None = None  # the subagent every hidden step belongs to, if one does
    where: str = ""  # where the hidden steps can be read in full (a reflection workspace's file)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' * (n != 1)}"


def gap_marker(span: HiddenSpan) -> str:
    """The one line that stands for a gap (its wording lives here and nowhere else)."""
    parts = [f"{_plural(span.last - span.first + 1, 'step')}, {span.chars:,} chars hidden"]
    if span.errors:
        parts.append(_plural(span.errors, "error"))
    if span.user_turns:
        parts.append(_plural(span.user_turns, "user turn"))
    if span.agent is not None:
        parts.append(f"inside @{span.agent}")
    where = f": {span.where}" if span.where else ""
    return f"[... {', '.join(parts)}{where} ...]"


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
    _Stage(1, 1, True, True, True, 16, 24),  # every error and user turn, narrowed before dropped
    _Stage(1, 1, False, True, True, 24, 24),
    # Last resort: only the ends and the answer are sure; errors come first, narrowed to show the
    # most of them; what does not fit is counted.
    _Stage(1, 1, False, False, False, 24, 60),
)


class _Trace:
    """What every stage shares: the steps, their items, and prefix sums for pricing gaps."""

    def __init__(self, steps: list[TraceStep], caps: TraceCaps) -> None:
        self.steps, self.caps = steps, caps
        self.items = build_items(steps)
        self.item_of_step = [0] * len(steps)
        for k, item in enumerate(self.items):
            self.item_of_step[item.first : item.last + 1] = [k] * (item.last - item.first + 1)
        self.final = final_answer_index(steps)
        self.error_items = [k for k, item in enumerate(self.items) if item.error]
        self.user_items = [
            k for k, item in enumerate(self.items) if not item.error and steps[item.first].kind == "user"
        ]
        words = between_failures(steps)
        self.word_items = [k for k, item in enumerate(self.items) if not item.error and item.first in words]
        # clipped no shorter than a stage's user width: they say why the agent turned, and the answer
        self.floored = words | {i for i, s in enumerate(steps) if s.kind == "user"}
        if self.final is not None:
            self.floored.add(self.final)
        self.lines: dict[
            tuple[int, int | None, int, bool], list[str]
        ] = {}  # (item, width, user width, merged)
        self.chars = [0, *accumulate(len(s.text) for s in steps)]
        self.errors = [0, *accumulate(int(is_error(s)) for s in steps)]
        self.users = [0, *accumulate(int(s.kind == "user") for s in steps)]
        # run_end[i]: the last index of the run of steps sharing steps[i]'s agent
        self.run_end = [0] * len(steps)
        for i in range(len(steps) - 1, -1, -1):
            same = i + 1 < len(steps) and steps[i + 1].agent == steps[i].agent
            self.run_end[i] = self.run_end[i + 1] if same else i


class _Layout:
    """One stage's items and gap prices; steps counted on a merged line are not counted again."""

    def __init__(self, trace: _Trace, items: list[Item], counted: set[int], locate: Locator | None) -> None:
        self.trace, self.items, self.locate = trace, items, locate
        steps = trace.steps
        # a merged line counts these (errors, some of them user turns): the gap holding them does not
        self.counted_errors = sorted(counted)
        self.counted_users = sorted(i for i in counted if steps[i].kind == "user")
        self.costs: dict[tuple[int | None, int | None], int] = {}

    def hidden(self, first: int, last: int) -> HiddenSpan:
        t = self.trace
        agent = t.steps[first].agent

        def counted(indices: list[int]) -> int:
            return bisect.bisect_right(indices, last) - bisect.bisect_left(indices, first) if indices else 0

        return HiddenSpan(
            first + 1,
            last + 1,
            t.chars[last + 1] - t.chars[first],
            t.errors[last + 1] - t.errors[first] - counted(self.counted_errors),
            t.users[last + 1] - t.users[first] - counted(self.counted_users),
            agent if agent is not None and t.run_end[first] >= last else None,
            self.locate(first, last) if self.locate is not None else "",
        )

    def bounds(self, left: int | None, right: int | None) -> tuple[int, int]:
        first = 0 if left is None else self.items[left].last + 1
        last = len(self.trace.steps) - 1 if right is None else self.items[right].first - 1
        return first, last

    def marker(self, left: int | None, right: int | None) -> str:
        """The gap line between two shown items (None: an end); '' for no gap."""
        first, last = self.bounds(left, right)
        return gap_marker(self.hidden(first, last)) if last >= first else ""

    def gap_cost(self, left: int | None, right: int | None) -> int:
        key = (left, right)
        cost = self.costs.get(key)
        if cost is None:  # the fill prices the same gap for every candidate that falls in it
            marker = self.marker(left, right)
            cost = self.costs[key] = len(marker) + 1 if marker else 0
        return cost


def _ranges_text(ranges: list[tuple[int, int]]) -> str:
    return ", ".join(f"{a + 1}" if a == b else f"{a + 1}-{b + 1}" for a, b in ranges)


def _item_lines(trace: _Trace, item: Item, width: int | None, user_width: int = 0) -> list[str]:
    steps, caps = trace.steps, trace.caps

    def limit(i: int) -> int:
        if width is None:
            return caps.step_limit(steps[i])
        floor = user_width if i in trace.floored else 0
        return min(max(width, floor), caps.step_limit(steps[i]))

    if item.first == item.last and not item.merged_ranges:
        return [render_step(item.first + 1, steps[item.first], limit(item.first))]
    assert item.error_at is not None  # a multi-step item is an error line
    error = steps[item.error_at]
    where = _ranges_text([(item.first, item.last), *item.merged_ranges])
    head = f"{where}." if item.count == 1 else f"steps {where}: {item.count}x"
    if item.call is not None:
        call = steps[item.call]
        shown = clip(call.text, min(limit(item.call), _RUN_CALL_CHARS), count=False)  # says which call
        text = f"{head} [{step_label(call)}] {shown} -> ERROR {clip(error.text, limit(item.error_at))}"
    else:
        text = f"{head} [{step_label(error)}] {clip(error.text, limit(item.error_at))}"
    if item.others:
        text += f" (+{_plural(item.others, 'other step')})"
    return [text] + [render_step(i + 1, steps[i], limit(i)) for i in item.inner]


def _cached_lines(
    trace: _Trace, items: list[Item], k: int, width: int | None, user_width: int = 0
) -> list[str]:
    """The lines of item k, made once per render (a merged line differs from its unmerged self)."""
    key = (k, width, user_width, items is not trace.items)
    lines = trace.lines.get(key)
    if lines is None:
        lines = trace.lines[key] = _item_lines(trace, items[k], width, user_width)
    return lines


@dataclass
class _Plan:
    layout: _Layout
    lines: dict[int, list[str]]
    chosen: list[int]
    used: int


def _cost(layout: _Layout, chosen: list[int], lines: dict[int, list[str]]) -> int:
    total = sum(len(line) + 1 for i in chosen for line in lines[i])
    bounds: list[int | None] = [None, *chosen, None]
    total += sum(layout.gap_cost(a, b) for a, b in zip(bounds, bounds[1:], strict=False))
    return total - 1


def _must_keep(trace: _Trace, items: list[Item], stage: _Stage, skip: set[int]) -> list[int]:
    n = len(items)
    keep = set(range(min(stage.head, n))) | set(range(max(0, n - stage.tail), n))
    if trace.final is not None:
        keep.add(trace.item_of_step[trace.final])
    if stage.errors_kept:
        for k in trace.error_items:
            if k not in skip:
                keep.add(k)
                keep.update(trace.item_of_step[c] for c in items[k].needs)
    if stage.users_kept:
        keep.update(trace.user_items)
        keep.update(trace.word_items)
    return sorted(keep - skip)


def _fill_order(trace: _Trace, items: list[Item], skip: set[int]) -> list[int]:
    """The optional items, best first: errors (the first that says each thing), the agent's words
    between failures, errors that say what another already said (of another call too), user turns,
    then main-agent steps alternately from the end and the start, then subagent steps the same way."""
    n = len(items)
    alternating = [n - 1 - k // 2 if k % 2 == 0 else k // 2 for k in range(n)]
    seen: set[str] = set()
    repeat: set[int] = set()
    for k in alternating:
        if items[k].error:
            at = items[k].error_at
            said = error_text_key(trace.steps[items[k].first if at is None else at])
            if said in seen:
                repeat.add(k)
            seen.add(said)

    words = set(trace.word_items)

    def rank(k: int) -> int:
        step = trace.steps[items[k].first]
        if items[k].error:
            return 2 if k in repeat else 0
        if k in words:
            return 1
        return 3 if step.kind == "user" else 4 if step.agent is None else 5

    return sorted((k for k in alternating if k not in skip), key=rank)  # stable: ends first


def _plan(trace: _Trace, budget: int, locate: Locator | None) -> _Plan | None:
    for stage in _STAGES:
        items, skip = merge_errors(trace.items) if stage.merge_errors else (trace.items, set())
        counted = {i for k in skip for i in items[k].members}
        layout = _Layout(trace, items, counted, locate)
        must = _must_keep(trace, items, stage, skip)
        widths = [w for w in _WIDTHS if w is None or w >= stage.min_width]
        if not stage.errors_kept:
            plan = _last_resort(layout, must, skip, widths, stage.user_width, budget)
            if plan is not None:
                return plan
            continue
        for width in widths:
            plan = _must_plan(layout, must, width, stage.user_width, budget)
            if plan is not None:
                _fill(plan, _fill_order(trace, items, skip | set(must)), budget, width)
                return plan
    return None


def _must_plan(
    layout: _Layout, must: list[int], width: int | None, user_width: int, budget: int
) -> _Plan | None:
    """The must-keep lines at `width`, when they fit the budget."""
    lines = {k: _cached_lines(layout.trace, layout.items, k, width, user_width) for k in must}
    used = _cost(layout, must, lines)
    return _Plan(layout, lines, list(must), used) if used <= budget else None


def _last_resort(
    layout: _Layout, must: list[int], skip: set[int], widths: list[int | None], user_width: int, budget: int
) -> _Plan | None:
    """Only the ends and the answer are sure: every line at the widest width that shows as many
    errors (and words between failures) as the narrowest does (narrower lines before fewer
    errors), then the rest."""
    fits = [w for w in widths if _must_plan(layout, must, w, user_width, budget) is not None]
    if not fits:
        return None
    trace, items = layout.trace, layout.items
    order = _fill_order(trace, items, skip | set(must))
    words = set(trace.word_items)
    errors = [k for k in order if items[k].error or k in words]  # the agent's words rank among them
    trials: dict[int, _Plan] = {}

    def trial(i: int) -> _Plan:  # the plan at fits[i], its errors filled
        if i not in trials:
            plan = _must_plan(layout, must, fits[i], user_width, budget)
            assert plan is not None
            _fill(plan, errors, budget, fits[i])
            trials[i] = plan
        return trials[i]

    most = len(trial(len(fits) - 1).chosen)
    low, high = 0, len(fits) - 1  # a wider width shows no more errors: bisect for the widest
    while low < high:
        mid = (low + high) // 2
        if len(trial(mid).chosen) >= most:
            high = mid
        else:
            low = mid + 1
    plan = trial(low)
    _fill(plan, [k for k in order if not (items[k].error or k in words)], budget, fits[low])
    return plan


def _try(plan: _Plan, k: int, budget: int, width: int | None, commit: bool) -> bool:
    """Whether item k fits in the plan at `width` (and, with commit, add it)."""
    layout, chosen = plan.layout, plan.chosen
    lines = _cached_lines(layout.trace, layout.items, k, width)
    pos = bisect.bisect_left(chosen, k)
    left = chosen[pos - 1] if pos > 0 else None
    right = chosen[pos] if pos < len(chosen) else None
    delta = sum(len(line) + 1 for line in lines) - layout.gap_cost(left, right)
    if plan.used + delta > budget:  # the two new gaps only cost more: no need to price them
        return False
    delta += layout.gap_cost(left, k) + layout.gap_cost(k, right)
    if plan.used + delta > budget:
        return False
    if commit:
        chosen.insert(pos, k)
        plan.lines[k] = lines
        plan.used += delta
    return True


def _fill(plan: _Plan, order: list[int], budget: int, width: int | None) -> None:
    """Add optional items in `order`, each at `width`, while they fit."""
    for k in order:
        if budget - plan.used < _MIN_FILL:
            break
        if k not in plan.lines:
            _try(plan, k, budget, width, commit=True)


def _text(plan: _Plan) -> str:
    layout = plan.layout
    out: list[str] = []
    bounds: list[int | None] = [None, *plan.chosen, None]
    for left, right in zip(bounds, bounds[1:], strict=False):
        marker = layout.marker(left, right)
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
    plan = _plan(_Trace(steps, caps), budget, locate)
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
