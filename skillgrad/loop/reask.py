"""The re-ask: when every edit a step's analysts proposed was dropped before validation (an
identical replacement, a copy of the prompt or of a task, an edit rejected earlier this epoch),
the step would change nothing. Each analyst that proposed edits is asked once more in the same
conversation, told what became of each edit, instead of losing the step (issue 11: the 1.5B
analyst's second step proposed only replacements of lines by themselves)."""

from __future__ import annotations

import json

from skillgrad.loop.merge import Patch
from skillgrad.loop.reflect import PROMPTS
from skillgrad.loop.selection import COPIED, COPIES_TASK, INAPPLICABLE, REJECTED, Selection
from skillgrad.templates import render
from skillgrad.values import Message

# What the analyst is told about an edit dropped for each reason (selection's DROP_REASONS).
TOLD = {
    COPIED: "dropped: it copies text of this prompt instead of stating a rule for these tasks",
    COPIES_TASK: "dropped: it copies a task's text, which teaches no rule",
    REJECTED: "dropped: it was rejected earlier this epoch",
    INAPPLICABLE: "dropped: it cannot apply to the current skill",
}
OUTRANKED = "dropped: another edit of the same line was preferred"


def should_reask(patches: list[Patch], chosen: Selection) -> bool:
    """True when the analysts proposed edits and none of them was selected, and this is not
    already the re-ask round (an analyst is asked again once per step)."""
    proposed = any(p.edits for p in patches)
    return proposed and not chosen.selected and not any(p.reask for p in patches)


def dropped_lines(patch: Patch, chosen: Selection) -> str:
    """One line per edit of `patch`: the edit as the analyst wrote it and why it was dropped."""
    why = {d.item.edit.key(): d for d in chosen.dropped}
    lines = []
    for edit in patch.edits:
        found = why.get(edit.key())
        told = OUTRANKED if found is None else TOLD.get(found.why, f"dropped: {found.why}")
        detail = f" ({found.detail})" if found is not None and found.detail else ""
        lines.append(f"- {json.dumps(edit.to_json(), ensure_ascii=False)}: {told}{detail}")
    return "\n".join(lines)


def reask_followup(patch: Patch, chosen: Selection, edit_mode: str, max_edits: int) -> tuple[Message, ...]:
    """The analyst's own reply, then what became of its edits and the renewed request."""
    template = "rewrite_reask" if edit_mode == "rewrite" else "analyst_reask"
    told = render(PROMPTS, template, dropped=dropped_lines(patch, chosen), max_edits=max_edits)
    return (Message("assistant", patch.reply), Message("user", told))
