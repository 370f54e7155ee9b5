"""The analyst prompt's example edit (chess) may teach the shape of an edit, never its wording:
content that takes over a run of its words is dropped as copied; a rationale that does is blanked
(the rule is judged on its content), so the example's wording reaches no record or later prompt."""

from __future__ import annotations

import json

from skillgrad.loop.analyst_prompt import PROMPTS
from skillgrad.loop.patch_merge import MergedEdit
from skillgrad.loop.promptcopy import COPIED_RATIONALE, PromptCopyGuard, template_texts
from skillgrad.loop.selection import COPIED, select_valid
from skillgrad.skilldoc import Edit
from skillgrad.templates import render

EXAMPLE = render(PROMPTS, "analyst_example")
SHOWN = json.loads(next(line for line in EXAMPLE.splitlines() if line.startswith("{")))


def echo() -> PromptCopyGuard:
    return PromptCopyGuard(template_texts(), example=EXAMPLE)


def test_imitations_of_the_examples_content_are_copies_its_rationale_is_blanked() -> None:
    filter_ = echo()
    # the 135M analyst's imitation of the example's content (docs/benchmarks.md, quickstart)
    assert filter_(Edit("add", "end", "The On-Call Channel is called The On-Call Chat, e.g. Nf3 or exd5."))
    assert filter_(Edit("add", "end", SHOWN["content"], "fixes most failures"))
    # the 1.5B analyst's rationale on XQuAD (issue 26): the rule stays, the rationale goes
    leaked = Edit(
        "add", "end", "Reply with the span only.", "tasks 2 and 4 wrote the program's name in words"
    )
    assert not filter_(leaked)
    assert filter_.own_rationale(leaked) == Edit("add", "end", "Reply with the span only.", COPIED_RATIONALE)
    own = Edit("add", "end", "Reply with the span only.", "answers carry extra words")
    assert filter_.own_rationale(own) is own


def test_rules_and_rationales_of_their_own_are_not() -> None:
    filter_ = echo()
    for content, rationale in [
        (
            "Write numbers as digits, e.g. 12 rather than twelve.",
            "numbers spelled out in words where digits were expected",
        ),
        ("Reply with the answer span only, no sentence around it.", "two answers were full sentences"),
        (
            "Answer with the option letter in parentheses, e.g. (B).",
            "the failed answers gave the option text",
        ),
        (
            "Write dates as YYYY-MM-DD, e.g. 2021-03-05.",
            "dates in prose where the expected answers use ISO dates",
        ),
    ]:
        assert not filter_(Edit("add", "end", content, rationale)), content


def test_selection_drops_an_imitation_as_copied_from_the_prompt() -> None:
    copied = Edit("add", "end", "Give names in full, e.g. Nf3 or exd5.", "names")
    rule = Edit("add", "end", "Reply with the answer span only.", "extra words")
    chosen = select_valid(
        [MergedEdit(copied, 2, 1, [0]), MergedEdit(rule, 1, 1, [0])], "", 1, rejected=[], copied=echo()
    )
    assert [m.edit for m in chosen.selected] == [rule]
    assert [d.why for d in chosen.dropped] == [COPIED]


def test_content_that_names_a_task_of_the_prompt_is_copied() -> None:
    filter_ = echo()
    for content in (
        "Replace 'Model C' with 'semi-private' in the fifth task.",
        "Replace 'better' with 'Academic results' in Task 6.",
        "For tasks 2 and 4, write the name in words.",
        "In the 3rd task, answer with the year.",
    ):
        assert filter_(Edit("add", "end", content)), content
    for content in (
        "Answer each task with the span only.",
        "Give 3 task names at most.",
        "Write the task's result.",
    ):
        assert not filter_(Edit("add", "end", content)), content
