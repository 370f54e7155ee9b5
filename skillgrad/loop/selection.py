"""Textual learning rate: schedules for the max edits per step; rank, then select what applies."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from skillgrad.demos import EXAMPLE_OPS, entry_task
from skillgrad.loop.patch_merge import MergedEdit
from skillgrad.loop.taskcopy import Copy
from skillgrad.package.doc import open_skill, skill_demos
from skillgrad.skilldoc import Edit, EditOutcome, normalize_text


class Schedule(Protocol):
    def __call__(self, step: int, total_steps: int, high: int, low: int) -> int: ...


def _progress(step: int, total_steps: int) -> float:
    """0.0 at the first step, 1.0 at the last (steps are 1-based)."""
    return 0.0 if total_steps <= 1 else min(1.0, (step - 1) / (total_steps - 1))


def constant(step: int, total_steps: int, high: int, low: int) -> int:
    return high


# In linear and cosine the floor `low` never lifts a step above `high` (the config refuses
# min_learning_rate > learning_rate; a value assigned later is clamped here).


def linear(step: int, total_steps: int, high: int, low: int) -> int:
    low = min(low, high)
    return max(low, round(high - (high - low) * _progress(step, total_steps)))


def cosine(step: int, total_steps: int, high: int, low: int) -> int:
    low, t = min(low, high), _progress(step, total_steps)
    return max(low, round(low + (high - low) * (1 + math.cos(math.pi * t)) / 2))


SCHEDULES: dict[str, Schedule] = {"constant": constant, "linear": linear, "cosine": cosine}


class SupportRank:
    """Most-supported edits first (proposed by more minibatches, backed by more failures);
    ties keep proposal order so results do not depend on thread completion order."""

    def rank(self, edits: list[MergedEdit]) -> list[MergedEdit]:
        order = sorted(range(len(edits)), key=lambda i: (-edits[i].support, -edits[i].failures, i))
        return [edits[i] for i in order]


RANKERS: dict[str, type[SupportRank]] = {"support": SupportRank}


def clip(edits: list[MergedEdit], learning_rate: int) -> tuple[list[MergedEdit], list[MergedEdit]]:
    """(selected, dropped): at most `learning_rate` edits are applied per step."""
    return edits[:learning_rate], edits[learning_rate:]


# Why a merged edit was not selected; the keys of `Selection.counts()` and merged_patch.json.
COPIED = "copied from the prompt"
REJECTED = "rejected earlier"  # this epoch, or against this very skill before (search/greedy.py)
INAPPLICABLE = "cannot apply to the current skill"
CLIPPED = "over the learning rate"
DROP_REASONS = (COPIED, REJECTED, INAPPLICABLE, CLIPPED)
COPIES_TASK = "copies task text"  # counted only when it happens (optimizer.allow_task_text)
NOT_TRAIN = "names no train task"  # an example edit's task: counted only when it happens
ASIDE = "set aside for worked examples"  # the form fix's first examples go alone: when it happens
COUNTED_WHEN_SEEN = (COPIES_TASK, NOT_TRAIN, ASIDE)
WriteExample = Callable[[Edit], Edit | str]  # an example edit -> with its entry written, or why not


def no_examples(edit: Edit) -> Edit | str:
    return "example edits are off (skill.max_examples: 0)"


@dataclass(frozen=True)
class Dropped:
    item: MergedEdit
    why: str  # one of DROP_REASONS
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return {**self.item.to_json(), "dropped_because": self.why, "detail": self.detail}


@dataclass
class Selection:
    selected: list[MergedEdit] = field(default_factory=list)
    dropped: list[Dropped] = field(default_factory=list)

    def rules(self) -> int:
        """Selected edits that count against the learning rate: all but the example edits."""
        return sum(1 for m in self.selected if m.edit.op not in EXAMPLE_OPS)

    def counts(self) -> dict[str, int]:
        counts = {why: sum(1 for d in self.dropped if d.why == why) for why in DROP_REASONS}
        for why in COUNTED_WHEN_SEEN:
            if seen := sum(1 for d in self.dropped if d.why == why):
                counts[why] = seen
        return counts


def rule_key(edit: Edit) -> tuple[str, str]:
    """What makes two edits the same rule: the text they bring in (or, for a delete, remove); for
    an example edit, the task it brings in (or removes)."""
    if edit.op == "delete":
        return ("delete", normalize_text(edit.target))
    if edit.op == "remove_example":
        return ("remove_example", edit.target)
    if edit.op in EXAMPLE_OPS:
        return ("example", entry_task(edit.content))
    return ("text", normalize_text(edit.content))


def select_valid(
    ranked: list[MergedEdit],
    skill: str,
    learning_rate: int,
    *,
    rejected: list[Edit],
    copied: Callable[[Edit], bool],
    max_chars: int | None = None,
    budget: int | None = None,
    copies_task: Callable[[Edit], Copy | None] = lambda _edit: None,
    write_example: WriteExample = no_examples,
    max_examples: int = 0,
    aside: Callable[[Edit], bool] = lambda _edit: False,
) -> Selection:
    """Selection after validity: walk the ranked edits, drop those copied from the prompt or
    from a task's text, those rejected earlier and those that do not apply to the
    skill as it stands after the edits already selected (a package is held to `budget`); only
    what applies counts against the learning rate. An example edit is written by
    `write_example` from the train task it names (or dropped as naming none) instead of going
    through the copy guards: its entry is the task's text by design, and skillgrad's own. The
    learning rate bounds the rules a step changes; the examples have their own bound, the skill
    holding at most `max_examples` (as DSPy keeps a program's instructions and its demos apart).
    An edit that would apply but is `aside` is dropped (the form fix's first examples go alone)."""
    rejected_keys = {rule_key(e) for e in rejected}
    doc, out = open_skill(skill, budget), Selection()
    for item in ranked:
        is_example = item.edit.op in EXAMPLE_OPS
        written = write_example(item.edit) if is_example else item.edit
        copy = None if is_example else copies_task(item.edit)
        set_aside = aside(item.edit)  # as proposed: an example's entry is written below
        if isinstance(written, str):
            out.dropped.append(Dropped(item, NOT_TRAIN, written))
        elif not is_example and copied(item.edit):
            out.dropped.append(Dropped(item, COPIED))
        elif copy is not None:
            out.dropped.append(Dropped(item, COPIES_TASK, str(copy)))
        elif rule_key(item.edit) in rejected_keys:
            out.dropped.append(Dropped(item, REJECTED))
        elif not is_example and out.rules() >= learning_rate:
            out.dropped.append(Dropped(item, CLIPPED))
        else:
            item = replace(item, edit=written)
            new, outcome = doc.apply_one(item.edit, max_chars)
            held = len(skill_demos(new.text)) if is_example else 0
            if outcome.status == "applied" and held > max(max_examples, len(skill_demos(doc.text))):
                outcome = EditOutcome(item.edit, "skipped", f"over skill.max_examples={max_examples}")
            if outcome.status == "applied" and set_aside:
                out.dropped.append(Dropped(item, ASIDE))
            elif outcome.status == "applied":
                doc = new
                out.selected.append(item)
            else:
                out.dropped.append(Dropped(item, INAPPLICABLE, outcome.reason))
    return out
