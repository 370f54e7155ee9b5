"""The re-ask's decision and what the analyst is told about each dropped edit."""

import json

from skillgrad.loop.merge import MergedEdit, Patch
from skillgrad.loop.reask import OUTRANKED, TOLD, dropped_lines, reask_followup, should_reask
from skillgrad.loop.selection import COPIED, INAPPLICABLE, REJECTED, Dropped, Selection
from skillgrad.skill import Edit

SAME = Edit("replace", "Answer briefly.", "Answer briefly.")
COPY = Edit("add", "end", "One rule per edit.")
OLD = Edit("add", "end", "Write dates as YYYY-MM-DD, e.g. 2021-03-05.")
LOSER = Edit("delete", "Answer briefly.")


def all_dropped() -> Selection:
    return Selection(
        dropped=[
            Dropped(MergedEdit(SAME), INAPPLICABLE, "replacement is identical to the target"),
            Dropped(MergedEdit(COPY), COPIED),
            Dropped(MergedEdit(OLD), REJECTED),
        ]
    )


def test_reask_only_when_edits_were_proposed_and_none_selected_once_per_step():
    patch = Patch(0, [SAME], 1)
    assert should_reask([patch], all_dropped())
    assert not should_reask([Patch(0, [], 1)], Selection())  # "nothing should change" is an answer
    assert not should_reask([patch], Selection(selected=[MergedEdit(OLD)]))
    assert not should_reask([patch, Patch(0, [COPY], 1, reask=True)], all_dropped())


def test_each_edit_is_listed_with_why_it_was_dropped():
    lines = dropped_lines(Patch(0, [SAME, COPY, OLD, LOSER], 1), all_dropped()).splitlines()
    assert [json.loads(line[2 : line.index("}:") + 1]) for line in lines] == [
        e.to_json() for e in (SAME, COPY, OLD, LOSER)
    ]
    assert lines[0].endswith(f"{TOLD[INAPPLICABLE]} (replacement is identical to the target)")
    assert lines[1].endswith(TOLD[COPIED]) and lines[2].endswith(TOLD[REJECTED])
    assert lines[3].endswith(OUTRANKED)  # lost a conflict in the merge: not in the selection at all


def test_followup_continues_the_conversation_for_the_mode():
    patch = Patch(0, [SAME], 1, reply='{"edits": []}')
    reply, told = reask_followup(patch, all_dropped(), "patch", 3)
    assert (reply.role, reply.content) == ("assistant", '{"edits": []}')
    assert told.role == "user" and "Propose at most 3 other edits as JSON" in told.content
    assert "replacement is identical to the target" in told.content
    _, rewrite = reask_followup(patch, all_dropped(), "rewrite", 3)
    assert "between <skill> and </skill>" in rewrite.content and "changing at most 3 lines" in rewrite.content
