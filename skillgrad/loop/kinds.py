"""What kind of answer a task expects, and what kind of miss a failed answer is.

Where a benchmark's feedback says only "expected X, got Y", the rule an analyst should find is in
what the misses have in common: answers that wrap the expected span in a sentence, the right
number in the wrong form, a different answer altogether. These are named here from the answer and
the expected answers alone (SQuAD's normalisation: case, punctuation and articles ignored), the
same for every benchmark, so the analyst can be shown them counted over a whole batch
(`misses_section`) and side by side (`contrast`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from skillgrad.benchmarks.scoring import extract_number, normalize_answer, token_f1
from skillgrad.values import Rollout

# The shapes of expected answers, in the words the prompt uses for them.
NUMBER = "a number"
OPTION = "an option letter"
LABEL = "a yes/no or true/false word"
SHORT = "a short phrase (1-3 words)"
LONG = "a longer text (4 words or more)"

_OPTION = re.compile(r"^\(?[A-Z]\)?$")
# Answers of a closed set: a rule must be able to name them ("answer Yes or No").
LABEL_WORDS = frozenset({"yes", "no", "true", "false", "valid", "invalid"})


def words(text: str) -> list[str]:
    return normalize_answer(text).split()


def is_label(answer: str) -> bool:
    """An option letter ("(B)") or a yes/no, true/false, valid/invalid word."""
    stripped = answer.strip()
    return bool(_OPTION.match(stripped)) or normalize_answer(stripped) in LABEL_WORDS


def shape(answer: str) -> str:
    """The shape of one expected answer: number, option, label, short or long."""
    stripped = answer.strip()
    if _OPTION.match(stripped):
        return OPTION
    if normalize_answer(stripped) in LABEL_WORDS:
        return LABEL
    number = extract_number(stripped)
    if number is not None and normalize_answer(number[0]) == normalize_answer(stripped):
        return NUMBER
    return SHORT if len(words(stripped)) <= 3 else LONG


def task_shape(answers: Sequence[str]) -> str | None:
    """The shape of a task's first expected answer; None when the task states none."""
    return shape(answers[0]) if answers else None


@dataclass(frozen=True)
class Miss:
    """The kind of one answer: `kind` is the name counted over a batch (the census groups by it),
    `detail` says it for this answer (with the word counts)."""

    kind: str
    detail: str


CORRECT = "passed"
EMPTY = "the answer is empty"
EXTRA = "the answer contains the expected answer plus extra words"
PART = "the answer is only part of the expected answer"
FORM = "the answer has the expected words or number in another form"
NUMBER_MISS = "the answer's final number is a different number"
NO_NUMBER = "the answer has no number where a number was expected"
OVERLAP = "a different answer that shares some words with the expected one"
WRONG = "a different answer, no words in common with the expected one"
UNSTATED = "failed (no expected answer is stated: see the grader's feedback)"


def _contains(haystack: list[str], needle: list[str]) -> bool:
    n = len(needle)
    return n > 0 and any(haystack[i : i + n] == needle for i in range(len(haystack) - n + 1))


def closest(answer: str, expected: Sequence[str]) -> str:
    """The expected answer closest to `answer` by token F1 (the first on ties)."""
    return max(enumerate(expected), key=lambda pair: (token_f1(answer, pair[1]), -pair[0]))[1]


def miss_of(rollout: Rollout) -> Miss:
    """The kind of `rollout`'s answer against its task's expected answers."""
    answer, expected = rollout.result.answer, rollout.task.answers
    if rollout.score.passed:
        return Miss(CORRECT, "passed")
    if not expected:
        return Miss(UNSTATED, UNSTATED)
    if not answer.strip():
        return Miss(EMPTY, EMPTY)
    gold = closest(answer, expected)
    if shape(gold) == NUMBER:
        return _number_miss(answer, gold)
    mine, theirs = words(answer), words(gold)
    if mine == theirs:
        return Miss(FORM, f"{FORM} (case, punctuation or spacing)")
    if sorted(mine) == sorted(theirs):
        return Miss(FORM, f"{FORM} (the same words in another order)")
    if _contains(mine, theirs):
        return Miss(EXTRA, f"{EXTRA} ({len(mine)} words where {len(theirs)} were expected)")
    if _contains(theirs, mine):
        return Miss(PART, f"{PART} ({len(mine)} of its {len(theirs)} words)")
    if set(mine) & set(theirs):
        return Miss(OVERLAP, OVERLAP)
    return Miss(WRONG, WRONG)


def _number_miss(answer: str, gold: str) -> Miss:
    got, want = extract_number(answer), extract_number(gold)
    if got is None:
        return Miss(NO_NUMBER, NO_NUMBER)
    if want is not None and got[1] == want[1]:
        if len(words(answer)) > len(words(gold)):
            return Miss(EXTRA, f"{EXTRA} ({len(words(answer))} words around the number)")
        return Miss(FORM, f"{FORM} (the number {got[0]!r} written differently)")
    return Miss(NUMBER_MISS, NUMBER_MISS)
