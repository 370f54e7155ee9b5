"""Kinds of miss, the step's census of them and the passed/failed contrasts the analyst reads."""

from __future__ import annotations

from skillgrad.backends.interface import AgentResult
from skillgrad.benchmarks.scoring import score_exact, score_f1, score_numeric
from skillgrad.loop import kinds
from skillgrad.loop.analyst_prompt import AnalystInputs, analyst_messages
from skillgrad.loop.misses import contrasts_section, misses_section, pick_contrasts
from skillgrad.loop.rewrite import rewrite_messages
from skillgrad.traces.steps import TraceCaps
from skillgrad.values import Rollout, Score, Task


def done(answer: str, *expected: str, scorer=score_exact, question: str = "Q?") -> Rollout:
    task = Task(f"t{abs(hash((answer, expected, question))) % 10**8}", question, None, tuple(expected))
    return Rollout(task, AgentResult(answer), scorer(answer, expected))


def test_kinds_of_miss_from_real_answer_pairs() -> None:
    cases = {
        ("Odinga would become Kenya's second Prime Minister", "Prime Minister"): kinds.EXTRA,
        ("Minister", "Prime Minister"): kinds.PART,
        ("Berg, Anna", "Anna Berg"): kinds.FORM,
        ("Academic results are lower than other schools.", "better"): kinds.WRONG,
        ("Kenya's Prime", "Prime Minister"): kinds.OVERLAP,
        ("", "Denver Broncos"): kinds.EMPTY,
    }
    for (answer, expected), kind in cases.items():
        assert kinds.miss_of(done(answer, expected)).kind == kind, (answer, expected)
    assert kinds.miss_of(done("Prime Minister", "Prime Minister")).kind == kinds.CORRECT
    # numbers: judged on the answer's final number, as the numeric scorer reads it
    assert (
        kinds.miss_of(done("She makes 9 * 2 = 17 dollars.", "18", scorer=score_numeric)).kind
        == kinds.NUMBER_MISS
    )
    assert kinds.miss_of(done("I cannot tell.", "18", scorer=score_numeric)).kind == kinds.NO_NUMBER
    assert kinds.miss_of(done("The answer is 18 dollars", "18")).kind == kinds.EXTRA
    no_gold = Rollout(Task("h", "Fix the bug"), AgentResult("done"), Score(0.0, False, "tests fail"))
    assert kinds.miss_of(no_gold).kind == kinds.UNSTATED


def test_shapes_of_expected_answers() -> None:
    assert kinds.shape("(B)") == kinds.OPTION
    assert kinds.shape("Yes") == kinds.shape("False") == kinds.shape("invalid") == kinds.LABEL
    assert kinds.shape("57500") == kinds.shape("-45") == kinds.shape("1,250") == kinds.NUMBER
    assert kinds.shape("Prime Minister") == kinds.shape("ORD-4821") == kinds.SHORT
    assert kinds.shape("many of its genes were lost or transferred") == kinds.LONG


def test_the_census_counts_the_whole_step_most_common_miss_first() -> None:
    verbose = [done(f"The answer is {w} of course", w, scorer=score_f1) for w in ("Denver", "Paris", "Nile")]
    wrong = [done("Rome", "Madrid"), done("Oslo", "Accra")]
    passed = [done("Tokyo", "Tokyo")]
    batch = [*verbose, *wrong, *passed]
    shown = [verbose[0], wrong[0], passed[0]]  # the minibatch: half of the step
    text = misses_section(batch, shown)
    lines = [line for line in text.splitlines() if line.startswith("- ")]
    assert lines[0].startswith(
        f"- 3 failed: {kinds.EXTRA} (answers 5.0 words long on average, expected answers 1.0); task 1 above"
    )
    assert lines[1].startswith(f"- 2 failed: {kinds.WRONG}") and lines[1].endswith("task 2 above")
    assert lines[2] == "- 1 passed (answers 1.0 words long on average, expected answers 1.0); task 3 above"
    assert "(6 tasks; the prompt shows 3 of them)" in text
    assert misses_section(passed, passed) == ""  # nothing failed: nothing to count


def test_contrasts_pair_a_failure_with_a_pass_of_the_same_shape() -> None:
    long_miss = done("He became the Prime Minister of Kenya in 2008", "Prime Minister", scorer=score_f1)
    number_miss = done("About 12 of them", "14", scorer=score_numeric)
    yes_miss = done("It is not open", "NO")
    shown = [number_miss, long_miss, yes_miss, done("Denver Broncos", "Denver Broncos")]
    elsewhere = [done("1975", "1975", scorer=score_numeric), done("Carolina Panthers", "Carolina Panthers")]
    batch = [*shown, *elsewhere]
    pairs = pick_contrasts(shown, batch, 5)
    # one pair per failure that has a pass of its shape; the yes/no miss has none and is left out
    assert [(c.failed, c.passed) for c in pairs] == [(number_miss, elsewhere[0]), (long_miss, shown[3])]
    assert pairs[0].shape == kinds.NUMBER and pairs[1].shape == kinds.SHORT
    assert pick_contrasts(shown, batch, 1) == pairs[:1] and pick_contrasts(shown, batch, 0) == []
    text = contrasts_section(pairs, shown)
    assert "PASSED, a task of this step not shown above: 'Q?' answered '1975', expected '1975'." in text
    assert "FAILED, task 2: 'Q?' answered 'He became the Prime Minister of Kenya in 2008'" in text
    assert f"{kinds.EXTRA} (8 words where 2 were expected)" in text  # articles not counted


def test_a_pass_is_reused_only_when_every_other_of_its_shape_was_used() -> None:
    misses = [done(f"It was {c} I think", c, scorer=score_f1) for c in ("Lima", "Quito", "Bogota")]
    passes = [done("Tokyo", "Tokyo"), done("Rome", "Rome")]
    pairs = pick_contrasts(misses, [*misses, *passes], 3)
    assert [c.passed for c in pairs] == [passes[0], passes[1], passes[0]]


def test_the_analyst_prompt_shows_census_and_contrasts_after_the_tasks_both_modes() -> None:
    batch = [done("The answer is Paris here", "Paris", scorer=score_f1), done("Tokyo", "Tokyo")]
    inputs = AnalystInputs(
        "", batch[:1], [], 2, False, TraceCaps(), batch=tuple(batch), census=True, contrasts=2
    )
    for messages in (analyst_messages(inputs), rewrite_messages(inputs)):
        user = messages[1].content
        assert (
            user.index("### Task 1")
            < user.index("## The answers of this whole step")
            < user.index("## Contrasts")
        )
        assert "PASSED, a task of this step not shown above" in user
    quiet = AnalystInputs("", batch[:1], [], 2, False, TraceCaps(), batch=tuple(batch))  # the defaults: off
    user = analyst_messages(quiet)[1].content
    assert "## The answers of this whole step" not in user and "## Contrasts" not in user
