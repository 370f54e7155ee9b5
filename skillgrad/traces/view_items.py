"""The lines a budgeted view is made of: one step, a call with its error, or a collapsed run.

Only a repeat becomes one line: errors close together from the same call (the same command, or the
same tool input) with the same error text, whole, not only a shared first line (four `mix test`
commands whose outputs begin alike are four failures). Such a run becomes one item spanning its
calls and errors: its line shows the call and error text and counts its members. The agent's own
words between two failures end a run (they say how the agent read the failure), and anything else
inside a run's span that the view must not lose silently (an error of another kind, a user turn,
the agent's words, the final answer, the call of such an error) keeps a line of its own under the
collapsed line, so every error is shown or counted exactly once.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace

from skillgrad.values import TraceStep

_MAX_GAP_BETWEEN_REPEATS = 3  # steps between two repeats of an error that still make one run
_CALL_LOOKBACK = 40  # how far back a result's call is looked for


@dataclass
class Item:
    """One line of the view (with the lines of its inner steps, for a collapsed run)."""

    first: int
    last: int
    members: tuple[int, ...] = ()  # the error steps the line stands for (empty: not an error line)
    call: int | None = None  # the step whose call the line shows before the error
    error_at: int | None = None  # the step whose error text the line shows
    others: int = 0  # steps inside a collapsed run that no line shows
    inner: tuple[int, ...] = ()  # steps inside a collapsed run that keep a line of their own
    needs: tuple[int, ...] = ()  # steps elsewhere (calls of errors here) shown whenever this is
    signature: str = ""  # what its errors share: a repeat has the same (error_key)
    merged_ranges: list[tuple[int, int]] = field(default_factory=list)
    merged_count: int = 0  # errors of the same kind elsewhere that this line also counts
    error: bool = field(init=False)  # an error line (it stands for error steps)

    def __post_init__(self) -> None:
        self.error = bool(self.members)

    @property
    def count(self) -> int:
        return len(self.members) + self.merged_count


def is_error(step: TraceStep) -> bool:
    return step.is_error and step.kind != "tool_call"


def is_answer(step: TraceStep) -> bool:
    return step.kind == "text" and step.agent is None and not step.is_error


def error_text_key(step: TraceStep) -> str:
    """What an error says, whichever call caused it: its kind, tool, agent and whole text."""
    digest = hashlib.blake2b(" ".join(step.text.split()).encode("utf-8", "replace"), digest_size=16)
    return f"{step.kind}|{step.tool}|{step.agent}|{digest.hexdigest()}"


def error_key(steps: list[TraceStep], index: int) -> str:
    """What a repeat of the error at `index` shares with it: what it says (error_text_key) and the
    call that caused it (the same command or input)."""
    call = call_of(steps, index)
    said = " ".join(steps[call].text.split()) if call is not None else ""
    return f"{error_text_key(steps[index])}|{said}"


def call_of(steps: list[TraceStep], index: int) -> int | None:
    """The tool_call that produced the result at `index`: same ref, else the step just before."""
    result = steps[index]
    if result.kind != "tool_result":
        return None
    if result.ref is None:
        before = index - 1
        return before if before >= 0 and steps[before].kind == "tool_call" else None
    for j in range(index - 1, max(-1, index - _CALL_LOOKBACK), -1):
        if steps[j].ref == result.ref and steps[j].kind == "tool_call":
            return j
    return None


def final_answer_index(steps: list[TraceStep]) -> int | None:
    answer = next((i for i in range(len(steps) - 1, -1, -1) if is_answer(steps[i])), None)
    if answer is None and steps and all(s.agent == steps[0].agent for s in steps):
        # every step is one agent's (a subagent's file on its own): its last text is its answer
        answer = next(
            (i for i in range(len(steps) - 1, -1, -1) if steps[i].kind == "text" and not steps[i].is_error),
            None,
        )
    return answer


def error_runs(steps: list[TraceStep]) -> list[list[int]]:
    """Indices of error steps, grouped into runs of repeats close to each other: the same call
    failing the same way, with no other error, user turn or word of the agent between them."""
    runs: list[list[int]] = []
    last_key = ""
    for i, step in enumerate(steps):
        if not is_error(step):
            continue
        key = error_key(steps, i)
        if runs:
            prev = runs[-1][-1]
            between = steps[prev + 1 : i]
            close = len(between) <= _MAX_GAP_BETWEEN_REPEATS + 1 and not any(
                s.is_error or s.kind in ("user", "text") for s in between
            )
            if close and key == last_key:
                runs[-1].append(i)
                continue
        runs.append([i])
        last_key = key
    return runs


def between_failures(steps: list[TraceStep]) -> set[int]:
    """The agent's own words between two failures: text steps whose nearest outcome before (a
    tool result or a user turn, calls and other words skipped) and nearest after are errors."""
    outcome = [is_error(s) or s.kind in ("tool_result", "user") for s in steps]
    words: set[int] = set()
    last_before: int | None = None
    waiting: list[int] = []
    for i, step in enumerate(steps):
        if outcome[i]:
            if is_error(step) and last_before is not None and is_error(steps[last_before]):
                words.update(waiting)
            waiting, last_before = [], i
        elif step.kind == "text" and not step.is_error:
            waiting.append(i)
    return words


def _collapsed(steps: list[TraceStep], run: list[int], after: int, keep: int | None) -> Item:
    """The item of a run of 2+ repeated errors; `after` is the last step an earlier item covers."""
    first_call = call_of(steps, run[0])
    start = first_call if first_call is not None and first_call > after else run[0]
    span = range(start, run[-1] + 1)
    members = set(run)
    calls = {c for c in (call_of(steps, i) for i in run) if c is not None}
    inner: set[int] = set()
    for i in span:
        if (
            i not in members
            and i not in calls
            and (steps[i].kind in ("user", "text") or is_error(steps[i]) or i == keep)
        ):
            inner.add(i)
    for i in sorted(inner):  # an inner error's call: its own line too when it is in the span
        call = call_of(steps, i)
        if call is not None and call in span and call not in calls:
            inner.add(call)
    needs = tuple(c for c in (call_of(steps, i) for i in inner) if c is not None and c < start)
    shown = members | inner | {c for c in calls if c in span}
    return Item(
        start,
        run[-1],
        members=tuple(run),
        call=first_call if first_call == start else None,
        error_at=run[0],
        others=len(span) - len(shown),
        inner=tuple(sorted(inner)),
        needs=needs,
        signature=error_key(steps, run[0]),
    )


def build_items(steps: list[TraceStep]) -> list[Item]:
    """All steps as items, in order; a run of 2+ repeated errors (with their calls) is one item."""
    keep = final_answer_index(steps)
    collapsed: dict[int, Item] = {}
    covered_until = -1
    for run in error_runs(steps):
        if len(run) > 1:
            item = _collapsed(steps, run, covered_until, keep)
            collapsed[item.first] = item
            covered_until = item.last
    items: list[Item] = []
    i, n = 0, len(steps)
    while i < n:
        if i in collapsed:
            items.append(collapsed[i])
            i = collapsed[i].last + 1
            continue
        step = steps[i]
        if is_error(step):
            call = call_of(steps, i)
            mark = error_key(steps, i)
            if call == i - 1 and items and items[-1].first == call and items[-1].last == call:
                items[-1] = Item(call, i, (i,), call=call, error_at=i, signature=mark)  # call -> error
            else:
                items.append(
                    Item(i, i, (i,), error_at=i, needs=(call,) if call is not None else (), signature=mark)
                )
        else:
            items.append(Item(i, i))
        i += 1
    return items


def merge_errors(items: list[Item]) -> tuple[list[Item], set[int]]:
    """Errors of one kind across the whole trace become one line on their first item; returns the
    items and the positions of those merged into another. An item with steps of its own to show
    (inner lines) is never merged away."""
    first_of: dict[str, Item] = {}
    merged: set[int] = set()
    out: list[Item] = []
    for index, item in enumerate(items):
        if item.error and item.signature in first_of and not item.inner:
            keeper = first_of[item.signature]
            keeper.merged_ranges.append((item.first, item.last))
            keeper.merged_count += item.count
            merged.add(index)
        elif item.error:
            item = replace(item, merged_ranges=[], merged_count=0)
            first_of.setdefault(item.signature, item)
        out.append(item)
    return out, merged
