"""The task-copy guard on real answer strings (../shared/data: XQuAD, SearchQA, GSM8K, BBH).

An edit that quotes one task's expected answer, or a term only one task has, is dropped; the
rule words an analyst needs ("answer Yes or No", "round to 2 decimals", "the option letter") and
the facts a benchmark's tasks share are not."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

from skillgrad.benchmarks.bbh import read_bbh
from skillgrad.benchmarks.gsm8k import read_gsm8k
from skillgrad.benchmarks.qa import read_qa_jsonl
from skillgrad.loop.taskcopy import TaskCopyGuard, TaskIndex
from skillgrad.skilldoc import Edit
from skillgrad.values import Task

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import quote_guard as quote_guard_bench  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
needs_data = pytest.mark.skipif(not (DATA / "squad_xquad_en").is_dir(), reason="../shared/data not present")

# Rules of the kinds an analyst writes where the feedback says only "expected X, got Y", and the
# data loaders: the bench's own (bench/quote_guard.py measures the same guard on the same files).
GENERIC_RULES = quote_guard_bench.RULES


def xquad() -> list[Task]:
    return quote_guard_bench.xquad(DATA)


def bbh(name: str) -> list[Task]:
    return read_bbh(DATA / "bbh" / f"{name}.json")


def pools(tasks: list[Task], count: int, size: int = 12) -> list[list[Task]]:
    rng = random.Random(26)
    return [rng.sample(tasks, size) for _ in range(count)]


def guard_for(pool: list[Task], shown: int = 6) -> TaskCopyGuard:
    return TaskCopyGuard(pool[:shown], 10, index=TaskIndex(pool, 3))


def quoting(answer: str) -> Edit:
    return Edit("add", "end", f"Reply with the span alone, e.g. {answer}.")


@needs_data
def test_the_issues_quotes_are_dropped_on_xquad() -> None:
    tasks = xquad()
    odinga = next(t for t in tasks if t.answers[0] == "Prime Minister")
    bill = next(t for t in tasks if "private bill" in (t.context or "").lower())
    pool = [odinga, bill, *[t for t in pools(tasks, 1)[0] if t.context not in (odinga.context, bill.context)]]
    guard = guard_for(pool[:12])
    # seed 0's accepted edits: the answer whole, and the answer inside a rule
    whole = guard(Edit("replace", "Odinga would become Kenya's second Prime Minister", "Prime Minister"))
    assert whole is not None and whole.task_id == odinga.id
    quoted = guard(Edit("add", "end", "Answer with the role only, e.g. Prime Minister."))
    assert quoted is not None and quoted.task_id == odinga.id and "'Prime Minister'" in quoted.why
    # seed 1's edit: one task's topic, three words that no other task has
    topic = Edit(
        "add", "end", "Add a section that outlines the process of setting up private bill committees."
    )
    found = guard(topic)
    assert found is not None and found.task_id == bill.id and "private bill committees" in found.why


@needs_data
def test_specific_answers_are_caught_and_rule_words_are_not_on_xquad() -> None:
    caught = total = false = 0
    for pool in pools(xquad(), 60):
        guard = guard_for(pool)
        false += sum(1 for rule in GENERIC_RULES if guard(Edit("add", "end", rule)))
        for task in pool[:6]:
            total += 1
            caught += guard(quoting(task.answers[0])) is not None
    # a rule's number word is a quote only where one task expects it capitalised ("Three") or
    # its number is that task's answer ("12%"): rare, never a rule without numbers in it
    assert false / (60 * len(GENERIC_RULES)) <= 0.005
    assert caught / total >= 0.9  # the rest: lone common words ("three", "war") other tasks have too


@needs_data
def test_searchqa_answers_are_caught() -> None:
    tasks = read_qa_jsonl(DATA / "searchqa_sample" / "searchqa_256.jsonl")
    caught = total = 0
    for pool in pools(tasks, 30):
        guard = guard_for(pool)
        assert not any(guard(Edit("add", "end", rule)) for rule in GENERIC_RULES)
        for task in pool[:6]:
            total += 1
            caught += guard(quoting(task.answers[0])) is not None
    assert caught / total >= 0.9
    tivo = next(t for t in tasks if t.answers == ("TiVo",))
    assert TaskCopyGuard([tivo], 10)(quoting("TiVo")) is not None


@needs_data
def test_gsm8k_numbers_of_two_digits_or_more_are_quotes_one_digit_is_not() -> None:
    tasks = read_gsm8k(DATA / "gsm8k" / "test.jsonl")[:200]
    for pool in pools(tasks, 20):
        guard = guard_for(pool)
        assert not any(guard(Edit("add", "end", rule)) for rule in GENERIC_RULES)
        for task in pool[:6]:
            answer = task.answers[0]
            unique = sum(1 for t in pool if t.answers == task.answers) == 1
            expected = unique and sum(c.isdigit() for c in answer) >= 2
            assert (
                guard(Edit("add", "end", f"Give the final number only, e.g. {answer}.")) is not None
            ) == expected


@needs_data
@pytest.mark.parametrize(
    ("task", "rule"),
    [
        ("web_of_lies", "Answer Yes or No only, e.g. Yes."),
        ("sports_understanding", "Answer yes or no in lower case, e.g. no."),
        ("boolean_expressions", "Evaluate not before and, then answer True or False."),
        ("date_understanding", "Answer with the option letter in parentheses, e.g. (B)."),
        ("formal_fallacies", "Answer valid or invalid."),
    ],
)
def test_bbh_labels_are_rule_words(task: str, rule: str) -> None:
    for pool in pools(bbh(task), 10):
        assert guard_for(pool)(Edit("add", "end", rule)) is None


@needs_data
def test_bbh_free_form_answers_are_quotes() -> None:
    sorting = bbh("word_sorting")
    guard = guard_for(sorting[:12])
    found = guard(Edit("add", "end", f"Sort the words alphabetically, e.g. {sorting[0].answers[0]}."))
    assert found is not None and found.task_id == sorting[0].id


def test_an_answer_several_tasks_share_is_a_fact_not_a_quote() -> None:
    """housefacts: three train tasks expect the staging host; the skill must state it."""
    asks = ["What is our staging server?", "Which host is the staging server?", "Which server runs staging?"]
    pool = [Task(f"s{i}", q, None, ("stage7.quokka.dev",)) for i, q in enumerate(asks)]
    pool.append(Task("h0", "What is our support email address?", None, ("help@quokka.dev",)))
    guard = TaskCopyGuard(pool[:1] + pool[3:], 10, index=TaskIndex(pool, 3))
    assert guard(Edit("add", "end", "Our staging server is stage7.quokka.dev.")) is None
    # one task expects the support address: stating it quotes that task, unless the grader does
    found = guard(Edit("add", "end", "Our support email address is help@quokka.dev."))
    assert found is not None and found.task_id == "h0"


def test_the_graders_own_words_may_be_restated_but_not_the_answers_it_quotes() -> None:
    task = Task("h0", "What is our support email address?", None, ("help@quokka.dev",))
    other = Task("h1", "Where do customers email for support?", None, ("help@quokka.dev",))
    feedback = "Our support email address is help@quokka.dev. expected 'help@quokka.dev'"
    index = TaskIndex([task, other], 3)
    graded = {"h0": ("Write to the help desk.", feedback)}
    guard = TaskCopyGuard([task], 10, index=index, graded=graded)
    assert guard(Edit("add", "end", "Our support email address is help@quokka.dev.")) is None
    # a term the agent's answer brought into the feedback is still the task's, not the grader's
    lone = Task("p0", "Who runs the residential treatment program?", None, ("Dr. Ames",))
    graded = {"p0": ("The residential treatment program is run by staff.", "expected 'Dr. Ames'; got ...")}
    guard = TaskCopyGuard([lone], 10, index=TaskIndex([lone, other], 3), graded=graded)
    found = guard(Edit("add", "end", "Name who runs the residential treatment program."))
    assert found is not None and "residential treatment program" in found.why


def test_terms_the_skill_already_states_may_be_restated() -> None:
    task = Task("p0", "Who chairs the private bill committees?", None, ("the Speaker",))
    edit = Edit(
        "replace", "Private bill committees: name the chair.", "Private bill committees: name the chair only."
    )
    assert TaskCopyGuard([task], 10, phrase_words=3)(edit) is not None
    assert (
        TaskCopyGuard([task], 10, phrase_words=3, skill="Private bill committees: name the chair.\n")(edit)
        is None
    )
    assert TaskCopyGuard([task], 10, phrase_words=0)(edit) is None  # the term check off
