"""Scorers: SQuAD normalisation, EM/F1, numeric extraction, contains, regex, and their feedback."""

from __future__ import annotations

from fractions import Fraction

import pytest

from skillgrad.benchmarks.scoring import (
    SCORERS,
    extract_number,
    normalize_answer,
    score_contains,
    score_exact,
    score_f1,
    score_numeric,
    score_regex,
    token_f1,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The Eiffel Tower!", "eiffel tower"),
        ("  a  cat,   AN apple  ", "cat apple"),
        ("Theatre", "theatre"),  # articles only as whole words
        ("U.S.A.", "usa"),
        ("", ""),
        ("the", ""),
    ],
)
def test_normalize_answer(text: str, expected: str) -> None:
    assert normalize_answer(text) == expected


def test_exact_match_ignores_case_punctuation_articles() -> None:
    score = score_exact("the Eiffel tower.", ["Eiffel Tower"])
    assert score.value == 1.0 and score.passed
    assert "expected 'Eiffel Tower'" in score.feedback


def test_f1_partial_credit_and_best_gold() -> None:
    assert token_f1("Bill Clinton", "Clinton") == pytest.approx(2 / 3)
    score = score_f1("Clinton", ["George Bush", "Bill Clinton"])
    assert score.value == pytest.approx(2 / 3)
    assert not score.passed
    assert "only part of the expected answer" in score.feedback
    assert "'Bill Clinton'" in score.feedback


def test_f1_feedback_kinds() -> None:
    extra = score_f1("I think it is the TiVo box", ["TiVo"])
    assert "extra word" in extra.feedback and "got 'I think it is the TiVo box'" in extra.feedback
    assert "no word overlap" in score_f1("Paris", ["London"]).feedback
    assert "empty" in score_f1("", ["London"]).feedback
    assert "partial word overlap" in score_f1("New Jersey", ["New York City"]).feedback


def test_exact_scorer_gives_no_partial_credit() -> None:
    score = score_exact("Bill Clinton was president", ["Bill Clinton"])
    assert score.value == 0.0 and not score.passed


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("She makes $18 every day.", Fraction(18)),
        ("The total is 1,234.50 dollars", Fraction(246900, 200)),
        ("steps...\n#### 72", Fraction(72)),
        ("#### -7\nthen 12 more words 3", Fraction(-7)),
        ("so \\boxed{42} and 7 later", Fraction(42)),
        ("\\boxed{\\frac{3}{4}}", Fraction(3, 4)),
        ("the answer is 1/2", Fraction(1, 2)),
        ("it costs \u221212 now", Fraction(-12)),
        ("5km then 20%", Fraction(20)),
        ("about .5 of it", Fraction(1, 2)),
        ("10 - 3 = 7.", Fraction(7)),
    ],
)
def test_extract_number(text: str, value: Fraction) -> None:
    found = extract_number(text)
    assert found is not None and found[1] == value


def test_extract_number_none() -> None:
    assert extract_number("no digits here") is None
    assert extract_number("version v2") is None  # a digit glued to a word is not an answer


def test_numeric_scorer() -> None:
    ok = score_numeric("So she makes 18.00 dollars.", ["18"])
    assert ok.passed and ok.value == 1.0
    assert score_numeric("\\boxed{0.5}", ["1/2"]).passed
    wrong = score_numeric("The answer is 17.", ["#### 18"])
    assert not wrong.passed and "expected 18" in wrong.feedback and "got 17" in wrong.feedback
    missing = score_numeric("I don't know", ["18"])
    assert "no number found" in missing.feedback
    close = score_numeric("18.1", ["18.05"])
    assert "close but not equal" in close.feedback


def test_contains_and_regex() -> None:
    assert score_contains("It was the TiVo, clearly", ["tivo"]).passed
    assert not score_contains("TiVolution", ["tivo"]).passed  # whole words only
    assert score_regex("Answer: 42 apples", [r"\b42\b"]).passed
    bad = score_regex("Answer", [r"(unclosed"])
    assert not bad.passed and "not a valid regex" in bad.feedback


def test_scorer_names() -> None:
    assert set(SCORERS) == {"exact", "f1", "numeric", "contains", "regex"}
