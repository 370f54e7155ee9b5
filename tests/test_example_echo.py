"""The analyst prompt's example edit (chess) may teach the shape of an edit, never its wording:
an edit whose content or rationale takes over a run of its words is dropped as copied."""

from __future__ import annotations

import json

from skillgrad.loop.echo import EXAMPLE_RUN, PromptEcho, template_texts
from skillgrad.loop.merge import MergedEdit
from skillgrad.loop.reflect import PROMPTS
from skillgrad.loop.selection import COPIED, select_valid
from skillgrad.skill import Edit
from skillgrad.templates import render

EXAMPLE = render(PROMPTS, "analyst_example")
SHOWN = json.loads(next(line for line in EXAMPLE.splitlines() if line.startswith("{")))


def echo() -> PromptEcho:
    return PromptEcho(template_texts(), example=EXAMPLE)


def test_imitations_of_the_example_are_copies() -> None:
    filter_ = echo()
    # the 135M analyst's imitation of the example's content (docs/benchmarks.md, quickstart)
    assert filter_(Edit("add", "end", "The On-Call Channel is called The On-Call Chat, e.g. Nf3 or exd5."))
    # a fitting rule with the example's rationale taken over word for word
    assert filter_(Edit("add", "end", "Reply with the span only.", SHOWN["rationale"]))
    assert filter_(Edit("add", "end", SHOWN["content"], "fixes most failures"))


def test_rules_and_rationales_of_their_own_are_not() -> None:
    filter_ = echo()
    for content, rationale in [
        (
            "Write numbers as digits, e.g. 12 rather than twelve.",
            "numbers spelled out in words where digits were expected",
        ),
        ("Reply with the answer span only, no sentence around it.", "tasks 2 and 4 wrote a full sentence"),
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


def test_every_run_of_the_examples_words_names_chess() -> None:
    """The example is worded so that a run of EXAMPLE_RUN of its words is never a phrase a real
    rule or rationale needs: each one holds a word of the chess domain."""
    chess = {"chess", "algebraic", "notation", "moves", "nf3", "exd5", "prose"}
    for text in (SHOWN["content"], SHOWN["rationale"]):
        words = [w.strip(".,:()").lower() for w in text.replace("e.g.", "e g").split()]
        runs = [words[i : i + EXAMPLE_RUN] for i in range(len(words) - EXAMPLE_RUN + 1)]
        assert runs and all(chess & set(run) for run in runs), text


def test_selection_drops_an_imitation_as_copied_from_the_prompt() -> None:
    copied = Edit("add", "end", "Give names in full.", SHOWN["rationale"])
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
