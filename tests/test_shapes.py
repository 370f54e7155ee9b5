"""The form of the answers (skillgrad/loop/shapes.py) on real answer strings of ../shared/data
(BBH, GSM8K, SearchQA): the rule the expected answers' common form implies, none where they share
none, and the step summary that leads from "expected (A); got (B) 12/26/1951" to a rule on form."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from skillgrad.benchmarks.bbh import read_bbh, score_target
from skillgrad.benchmarks.gsm8k import read_gsm8k
from skillgrad.benchmarks.qa import read_qa_jsonl
from skillgrad.benchmarks.scoring import score_numeric
from skillgrad.loop.shapes import (
    LONG,
    NUMBER,
    OPTION,
    OPTION_PLUS,
    SHORT,
    answer_shape,
    form_report,
    form_rule,
    form_summary,
    named_answer,
)
from skillgrad.values import AgentResult, Rollout, Task

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
needs_data = pytest.mark.skipif(not (DATA / "bbh").is_dir(), reason="../shared/data not present")

OPTION_RULE = (
    "Reply with the label of the right option alone, in parentheses, for example (C); no other words."
)
# BBH tasks by the form of their targets; the few free-text targets of ruin_names and
# movie_recommendation ("dearth, wind, & fire") are their own case below.
OPTION_TASKS = (
    "date_understanding", "disambiguation_qa", "geometric_shapes", "hyperbaton",
    "logical_deduction_five_objects", "logical_deduction_seven_objects",
    "logical_deduction_three_objects", "penguins_in_a_table", "reasoning_about_colored_objects",
    "salient_translation_error_detection", "snarks", "temporal_sequences",
    "tracking_shuffled_objects_five_objects", "tracking_shuffled_objects_seven_objects",
    "tracking_shuffled_objects_three_objects",
)  # fmt: skip
WORD_TASKS = {
    "boolean_expressions": "Reply with True or False alone, written exactly so; no other words.",
    "causal_judgement": "Reply with Yes or No alone, written exactly so; no other words.",
    "navigate": "Reply with Yes or No alone, written exactly so; no other words.",
    "web_of_lies": "Reply with Yes or No alone, written exactly so; no other words.",
    "sports_understanding": "Reply with yes or no alone, written exactly so; no other words.",
    "formal_fallacies": "Reply with valid or invalid alone, written exactly so; no other words.",
}
NUMBER_TASKS = ("object_counting", "multistep_arithmetic_two")
NO_FORM_TASKS = ("word_sorting", "dyck_languages")


def bbh(name: str) -> list[Task]:
    return read_bbh(DATA / "bbh" / f"{name}.json")


def steps(tasks: list[Task], count: int = 20, size: int = 6) -> list[list[Task]]:
    rng = random.Random(36)
    return [rng.sample(tasks, size) for _ in range(count)]


def expected(step: list[Task]) -> list[str]:
    return [t.answers[0] for t in step]


def rollout(task: Task, answer: str, scorer=None) -> Rollout:
    score = (scorer or (lambda t, a: score_target(a, t.answers[0])))(task, answer)
    return Rollout(task, AgentResult(answer=answer), score)


@needs_data
@pytest.mark.parametrize("name", OPTION_TASKS)
def test_option_tasks_imply_the_option_rule(name: str) -> None:
    for step in steps(bbh(name)):
        assert {answer_shape(a) for a in expected(step)} == {OPTION}
        assert form_rule(expected(step)) == OPTION_RULE


@needs_data
@pytest.mark.parametrize("name", sorted(WORD_TASKS))
def test_label_tasks_imply_their_words_as_the_targets_write_them(name: str) -> None:
    for step in steps(bbh(name)):
        assert form_rule(expected(step)) == WORD_TASKS[name]


@needs_data
@pytest.mark.parametrize("name", NUMBER_TASKS)
def test_counting_and_arithmetic_imply_a_bare_number_that_is_none_of_the_answers(name: str) -> None:
    for step in steps(bbh(name)):
        rule = form_rule(expected(step))
        assert rule is not None and rule.startswith("Reply with the final number alone, in digits")
        example = rule.split("for example ")[1].split(";")[0]  # the first answer's digits as 1234...
        assert (
            answer_shape(example) == NUMBER
            and example.lstrip("-") == "1234567890"[: len(example.lstrip("-"))]
        )


@needs_data
@pytest.mark.parametrize("name", NO_FORM_TASKS)
def test_free_text_targets_imply_no_rule(name: str) -> None:
    assert all(form_rule(expected(step)) is None for step in steps(bbh(name)))


@needs_data
@pytest.mark.parametrize("name", ["ruin_names", "movie_recommendation"])
def test_a_free_text_target_among_labels_breaks_the_common_form(name: str) -> None:
    tasks = bbh(name)
    odd = next(t for t in tasks if answer_shape(t.answers[0]) != OPTION)
    labels = [t for t in tasks if answer_shape(t.answers[0]) == OPTION][:5]
    assert form_rule(expected(labels)) == OPTION_RULE
    assert form_rule(expected([*labels, odd])) is None


@needs_data
def test_searchqa_spans_have_no_form_to_copy() -> None:
    tasks = read_qa_jsonl(DATA / "searchqa_sample" / "searchqa_256.jsonl")
    shapes = {answer_shape(t.answers[0]) for t in tasks}
    assert SHORT in shapes and LONG in shapes
    assert all(form_rule(expected(step)) is None for step in steps(tasks, 40))


@needs_data
def test_gsm8k_numbers_imply_a_number_rule_but_reasoned_answers_that_pass_are_no_form_problem() -> None:
    tasks = read_gsm8k(DATA / "gsm8k" / "test.jsonl")[:120]
    for step in steps(tasks):
        assert form_rule(expected(step)).startswith("Reply with the final number alone")  # type: ignore[union-attr]

        def numeric(task: Task, answer: str):
            return score_numeric(answer, task.answers)

        # worked solutions: long texts that end in the number; the scorer reads it out of any form
        answers = [t.meta["solution"] for t in step[:4]] + ["I think it is 3.", "It is 12345 dollars."]
        batch = [rollout(t, a, numeric) for t, a in zip(step, answers, strict=True)]
        report = form_report(batch)
        assert report is not None and not report.is_problem()
        assert report.off_passed >= 4
        summary = form_summary(batch)
        assert (
            "the form is not what failed the others" in summary and "fixes answers like these" not in summary
        )


@needs_data
def test_the_issues_date_step_leads_to_a_rule_on_form() -> None:
    """The empty skill's answers: a label, right or not, and the date it stands for."""
    step = steps(bbh("date_understanding"), 1, 6)[0]
    batch = []
    for i, task in enumerate(step):
        label = task.answers[0] if i < 2 else "(B)" if task.answers[0] != "(B)" else "(C)"
        date = task.question.split(f"{label} ")[1].split("\n")[0]
        batch.append(rollout(task, f"{label} {date}"))
    assert all(answer_shape(r.result.answer) == OPTION_PLUS and not r.score.passed for r in batch)
    report = form_report(batch, batch[:3])
    assert report is not None and report.rule == OPTION_RULE and report.is_problem()
    assert report.held == 2 and report.off_failed == 6 and report.off_passed == 0
    summary = form_summary(batch, batch[:3])
    assert (
        "(6 tasks)" in summary
        and "Every expected answer is an option label in parentheses, like (A)." in summary
    )
    assert (
        "- 6 are an option label followed by more text, like '(" in summary
        and "all failed; tasks 1, 2, 3" in summary
    )
    assert "Failed answers that hold the expected answer with other text around it: 2." in summary
    assert summary.rstrip().endswith("with one example in the expected form, fixes answers like these.")


@needs_data
def test_no_summary_when_the_answers_have_the_form_or_the_expected_answers_share_none() -> None:
    step = steps(bbh("date_understanding"), 1, 6)[0]
    right_form = [rollout(t, "(A)") for t in step]
    assert form_report(right_form) is None and form_summary(right_form) == ""
    words = steps(bbh("word_sorting"), 1, 6)[0]
    assert form_summary([rollout(t, "some words here and there") for t in words]) == ""


@pytest.mark.parametrize(
    ("answer", "shape"),
    [
        ("(B)", OPTION),
        ("(B) 12/26/1951", OPTION_PLUS),
        ("B", "a bare option letter, like A"),
        ("no.", "a yes/no word"),
        ("Yes, because the man scored", "a yes/no word followed by more text"),
        ("-11520", NUMBER),
        ("8 instruments", "a number with a unit or other words"),
        ("12/26/1951", "a date written MM/DD/YYYY"),
        ("2023-06-16", "a date written YYYY-MM-DD"),
        ("TiVo", SHORT),
        ("", "an empty answer"),
    ],
)
def test_answer_shapes(answer: str, shape: str) -> None:
    assert answer_shape(answer) == shape


def test_rules_state_each_closed_form_and_none_for_one_answer_or_spans() -> None:
    assert form_rule(["2023-06-16", "2021-09-22"]) == (
        "Reply with the date alone, written YYYY-MM-DD, for example 2003-04-15; no other words."
    )
    assert (
        form_rule(["323 cm", "12 cm"])
        == "Reply with the answer alone, written in the form 123 cm; no other words."
    )
    assert form_rule(["323 cm", "USD 12.10"]) is None
    assert form_rule(["YES", "NO"]) == "Reply with YES or NO alone, written exactly so; no other words."
    assert form_rule(["positive", "negative", "negative", "positive"]) == (
        "Reply with negative or positive alone, written exactly so; no other words."
    )
    assert form_rule(["(A)"]) is None and form_rule(["Paris", "Rome"]) is None


def test_an_answer_names_an_expected_answer_by_its_start_as_a_word_of_its_own() -> None:
    labels = {"(a)", "(c)", "4", "42", "yes"}
    assert named_answer("(C) Ambiguous", labels) == "(c)"
    assert named_answer("42 apples", labels) == "42"  # the longest, not "4"
    assert named_answer("Yes, it is.", labels) == "yes"
    assert named_answer("yesterday", labels) is None
    assert named_answer("420", labels) is None
    assert named_answer("", labels) is None
