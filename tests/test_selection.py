"""Selection after validity: only edits that apply, and were neither copied from the prompt nor
rejected earlier, count against the learning rate."""

import re

from skillgrad.loop.analyst_prompt import AnalystInputs, analyst_messages
from skillgrad.loop.patch_merge import MergedEdit, Patch, UnionMerge
from skillgrad.loop.promptcopy import PromptCopyGuard, template_texts
from skillgrad.loop.selection import CLIPPED, COPIED, INAPPLICABLE, REJECTED, SupportRank, select_valid
from skillgrad.skilldoc import Edit
from skillgrad.traces.steps import TraceCaps

SKILL = "# Skill\n\nAnswer briefly.\n"
TAGS = {"<skill>", "</skill>", "<!-- protected -->", "<!-- /protected -->"}
DATES = Edit("add", "end", "Write dates as YYYY-MM-DD, e.g. 2021-03-05.")
NAMES = Edit("add", "Answer briefly.", "Write names as SURNAME, First, e.g. BERG, Anna.")


def never(edit: Edit) -> bool:
    return False


def ranked(*edits: Edit) -> list[MergedEdit]:
    return [MergedEdit(e, 1, 1, [0]) for e in edits]


def test_inapplicable_edits_ranked_first_do_not_cut_a_valid_one():
    edits = ranked(
        Edit("add", "end", "answer briefly."),  # already in the skill
        Edit("replace", "Answer briefly.", "Answer briefly."),  # identical
        DATES,
    )
    chosen = select_valid(edits, SKILL, 1, rejected=[], copied=never)
    assert [m.edit for m in chosen.selected] == [DATES]
    assert chosen.counts() == {COPIED: 0, REJECTED: 0, INAPPLICABLE: 2, CLIPPED: 0}
    assert [d.detail for d in chosen.dropped] == [
        "content already present in the skill",
        "replacement is identical to the target",
    ]


def test_validity_is_judged_against_the_skill_after_earlier_selections():
    edits = ranked(Edit("delete", "Answer briefly."), Edit("replace", "Answer briefly.", "One line."), DATES)
    chosen = select_valid(edits, SKILL, 3, rejected=[], copied=never)
    assert [m.edit.op for m in chosen.selected] == ["delete", "add"]
    assert chosen.dropped[0].detail == "target text not found in the skill"


def test_rejected_edits_are_dropped_by_normalised_rule_text_before_clipping():
    again = Edit("add", "# Skill", "write dates as  yyyy-mm-dd, e.g. 2021-03-05.")  # other anchor, case
    chosen = select_valid(ranked(again, NAMES), SKILL, 1, rejected=[DATES], copied=never)
    assert [m.edit for m in chosen.selected] == [NAMES]
    assert chosen.counts()[REJECTED] == 1
    removed = select_valid(
        ranked(Edit("delete", "answer  briefly.")),
        SKILL,
        1,
        rejected=[Edit("delete", "Answer briefly.")],
        copied=never,
    )
    assert not removed.selected and removed.counts()[REJECTED] == 1


def test_clipping_counts_only_applicable_edits():
    chosen = select_valid(
        ranked(DATES, NAMES, Edit("add", "end", "Third.")), SKILL, 2, rejected=[], copied=never
    )
    assert len(chosen.selected) == 2 and chosen.counts()[CLIPPED] == 1
    record = chosen.dropped[0].to_json()
    assert record["dropped_because"] == CLIPPED and record["content"] == "Third."


def test_edit_copied_from_a_prompt_template_is_dropped():
    echo = PromptCopyGuard.of_templates()
    placeholder = Edit("add", "end", "Rejected edits")  # a quoted span of a template
    line = Edit("add", "end", "- One rule per edit. Short, concrete, checkable.")
    stretch = Edit("add", "end", "Write general rules, never the answer to one particular task")
    assert echo(placeholder) and echo(line) and echo(stretch)
    # seen from the 135M analyst: the empty-skill heading with its quote marks swapped
    requoted = Edit("add", "end", "The skill is empty: the only edit is 'add' with target 'end'")
    assert echo(requoted) and echo(Edit("add", "end", "One rule per edit. Short, `concrete`, checkable."))
    # the analyst prompt's one example edit, from a domain no task comes from, verbatim or cut short
    chess = Edit("add", "end", "Write chess moves in short algebraic notation, e.g. Nf3 or exd5.")
    assert echo(chess) and echo(Edit("add", "end", "write chess moves in short algebraic notation"))
    assert not echo(DATES) and not echo(NAMES) and not echo(Edit("delete", "Answer briefly."))
    assert not echo(Edit("add", "end", "YES"))  # short text that a template may hold by chance
    chosen = select_valid(ranked(placeholder, DATES), SKILL, 1, rejected=[], copied=echo)
    assert [m.edit for m in chosen.selected] == [DATES] and chosen.counts()[COPIED] == 1


def test_the_example_edit_is_shown_only_when_shape_example_is_on():
    def system(on: bool) -> str:
        return analyst_messages(AnalystInputs("", [], [], 2, False, TraceCaps(), shape_example=on))[0].content

    assert "Nf3" in system(True) and "chess" in system(True)
    assert "Nf3" not in system(False) and "chess" not in system(False)
    assert system(False).rstrip().endswith('{"edits": [ ... ]}')
    # a copy of it is dropped either way: the filter reads every template
    assert PromptCopyGuard.of_templates()(Edit("add", "end", "write chess moves in short algebraic notation"))


def test_prompt_templates_carry_no_concrete_rule_to_copy():
    """The issue-11 examples that weak optimizers copied verbatim are gone from every template."""
    text = "\n".join(template_texts())
    for copied in (
        "Answer briefly.",
        "Always explain your reasoning.",
        "Celsius",
        "YYYY-MM-DD",
        "2024-03-07",
    ):
        assert copied not in text
    # nor placeholders: the 135M model copied "<RULE WITH ONE EXAMPLE>" verbatim; the schema carries the shape
    assert re.findall(r"<[^>\n]*>", text) and set(re.findall(r"<[^>\n]*>", text)) <= TAGS


def test_support_counts_proposals_and_failures_count_minibatches_once():
    patches = [
        Patch(0, [DATES], 2, proposal=0),
        Patch(0, [DATES, DATES], 2, proposal=1),
        Patch(1, [NAMES], 1),
    ]
    merged = SupportRank().rank(UnionMerge().merge(patches))
    assert [(m.edit, m.support, m.failures) for m in merged] == [(DATES, 2, 2), (NAMES, 1, 1)]
    same_rule_elsewhere = UnionMerge().merge(
        [Patch(0, [DATES], 1), Patch(1, [Edit("add", "", DATES.content)], 1)]
    )
    assert len(same_rule_elsewhere) == 1 and same_rule_elsewhere[0].support == 2
