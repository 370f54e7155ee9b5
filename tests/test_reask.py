"""When the re-ask happens: edits proposed, none selected, a non-empty single-file skill, once."""

from skillgrad.demos import Demo, section_alone, with_demos
from skillgrad.loop.patch_merge import MergedEdit, Patch
from skillgrad.loop.reflect_stage import should_reask
from skillgrad.loop.selection import INAPPLICABLE, Dropped, Selection
from skillgrad.package.model import SkillPackage
from skillgrad.skilldoc import Edit

SKILL = "# Skill\n\nAnswer briefly.\n"
SAME = Edit("replace", "Answer briefly.", "Answer briefly.")
DATES = Edit("add", "end", "Write dates as YYYY-MM-DD, e.g. 2021-03-05.")
DROPPED = Selection(
    dropped=[Dropped(MergedEdit(SAME), INAPPLICABLE, "replacement is identical to the target")]
)


def test_reask_when_edits_were_proposed_and_every_one_was_dropped():
    assert should_reask(SKILL, [Patch(0, [SAME], 1)], DROPPED)


def test_no_reask_when_something_was_selected_or_nothing_proposed():
    assert not should_reask(SKILL, [Patch(0, [SAME, DATES], 1)], Selection(selected=[MergedEdit(DATES)]))
    assert not should_reask(SKILL, [Patch(0, [], 1)], Selection())  # "nothing should change" is an answer


def test_no_second_reask_and_none_where_from_scratch_is_the_same_prompt_or_no_view():
    assert not should_reask(SKILL, [Patch(0, [SAME], 1), Patch(0, [SAME], 1, reask=True)], DROPPED)
    assert not should_reask("", [Patch(0, [SAME], 1)], DROPPED)  # an empty skill's prompt was just answered
    package = SkillPackage({"SKILL.md": "---\nname: s\ndescription: d\n---\nBody.\n", "ref.md": "R\n"})
    assert not should_reask(package.encode(), [Patch(0, [SAME], 1)], DROPPED)


def test_a_skill_of_examples_alone_is_not_reasked_and_a_reask_keeps_the_examples():
    examples = with_demos("", [Demo("t-1", "Task one?", "(A)", "expected")])
    assert not should_reask(examples, [Patch(0, [SAME], 1)], DROPPED)  # shown as it was just shown
    with_rules = SKILL + "\n" + examples + "\nAfter the examples.\n"
    assert should_reask(with_rules, [Patch(0, [SAME], 1)], DROPPED)
    assert section_alone(with_rules) == examples  # the rules around it left out
    assert section_alone(SKILL) == ""
