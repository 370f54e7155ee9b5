"""Answer scorers: SQuAD exact match and token F1, numeric match, contains, regex.

Every scorer is `(prediction, answers) -> Score` and never raises for a bad answer. Feedback is
written for the optimizer's analyst: the expected answer(s) next to the given one, and the kind of
mismatch, so an edit to the skill can target the cause (format, verbosity, wrong fact).
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable, Sequence
from decimal import Decimal, InvalidOperation
from fractions import Fraction

from skillgrad.values import Score

Scorer = Callable[[str, Sequence[str]], Score]

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = set(string.punctuation)


def normalize_answer(text: str) -> str:
    """The official SQuAD v1.1 normalisation: lowercase, drop punctuation and articles, squash spaces."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction: str, gold: str) -> bool:
    return normalize_answer(prediction) == normalize_answer(gold)


def token_f1(prediction: str, gold: str) -> float:
    pred_tokens = normalize_answer(prediction).split()
    gold_tokens = normalize_answer(gold).split()
    if not pred_tokens or not gold_tokens:
        return float(pred_tokens == gold_tokens)
    common = Counter(pred_tokens) & Counter(gold_tokens)
    overlap = sum(common.values())
    if overlap == 0:
        return 0.0
    precision = overlap / len(pred_tokens)
    recall = overlap / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def _show(text: str, limit: int = 160) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= limit else flat[: limit - 3] + "...")


def _expected(answers: Sequence[str]) -> str:
    shown = " or ".join(_show(a, 80) for a in list(answers)[:5])
    more = f" (+{len(answers) - 5} more)" if len(answers) > 5 else ""
    return f"expected {shown}{more}"


def _best(prediction: str, answers: Sequence[str]) -> tuple[str, float]:
    """The gold answer with the highest F1 against the prediction (first on ties)."""
    scored = [(token_f1(prediction, a), -i, a) for i, a in enumerate(answers)]
    f1, _, gold = max(scored)
    return gold, f1


def qa_mismatch(prediction: str, gold: str, f1: float) -> str:
    """Name the kind of mismatch between a prediction and its closest gold answer."""
    pred, norm_gold = normalize_answer(prediction), normalize_answer(gold)
    if not prediction.strip():
        return "the answer is empty"
    if pred == norm_gold:
        return "matches after normalisation (case, punctuation, articles ignored)"
    if norm_gold and re.search(rf"(^|\s){re.escape(norm_gold)}(\s|$)", pred):
        extra = len(pred.split()) - len(norm_gold.split())
        return f"answer has {extra} extra word(s) around the expected span; reply with the span only"
    if pred and re.search(rf"(^|\s){re.escape(pred)}(\s|$)", norm_gold):
        return "answer is only part of the expected answer; give the complete span"
    if f1 > 0:
        return f"partial word overlap with the expected answer (F1 {f1:.2f}); likely a different span"
    return "no word overlap with the expected answer; wrong answer"


def _qa_score(prediction: str, answers: Sequence[str], *, use_f1: bool) -> Score:
    gold, f1 = _best(prediction, answers)
    em = any(exact_match(prediction, a) for a in answers)
    value = 1.0 if em else (f1 if use_f1 else 0.0)
    kind = "correct" if em else qa_mismatch(prediction, gold, f1)
    feedback = f"{_expected(answers)}; got {_show(prediction)}: {kind} (EM {int(em)}, F1 {max(f1, em):.2f})"
    return Score(value=value, passed=em, feedback=feedback)


def score_f1(prediction: str, answers: Sequence[str]) -> Score:
    """Value = best token F1 over the gold answers; passed = exact match."""
    return _qa_score(prediction, answers, use_f1=True)


def score_exact(prediction: str, answers: Sequence[str]) -> Score:
    """Value = 1 if the normalised prediction equals a normalised gold answer, else 0."""
    return _qa_score(prediction, answers, use_f1=False)


def score_contains(prediction: str, answers: Sequence[str]) -> Score:
    """Passed when a normalised gold answer appears as whole words in the normalised prediction."""
    pred = normalize_answer(prediction)
    for gold in answers:
        norm = normalize_answer(gold)
        if norm and re.search(rf"(^|\s){re.escape(norm)}(\s|$)", pred):
            return Score(1.0, True, f"{_expected(answers)}; got {_show(prediction)}: contains it")
    return Score(
        0.0, False, f"{_expected(answers)}; got {_show(prediction)}: none of them appears in the answer"
    )


def score_regex(prediction: str, answers: Sequence[str]) -> Score:
    """Each answer is a Python regex; passed when one matches anywhere (case-insensitive)."""
    for pattern in answers:
        try:
            if re.search(pattern, prediction, re.IGNORECASE | re.DOTALL):
                return Score(1.0, True, f"answer {_show(prediction)} matches pattern {pattern!r}")
        except re.error as exc:
            return Score(0.0, False, f"pattern {pattern!r} is not a valid regex ({exc}); fix the data")
    shown = " or ".join(repr(p) for p in answers)
    return Score(0.0, False, f"expected a match for {shown}; got {_show(prediction)}: no pattern matches")


# ---------------------------------------------------------------------------------------------
# numbers

_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:,\d{3})*(?:\.\d+)?(?:/\d+)?|(?<![\w.])-?\.\d+")
_BOXED = re.compile(r"\\boxed\s*\{((?:[^{}]|\{[^{}]*\})*)\}")
_FRAC = re.compile(r"\\[dt]?frac\s*\{\s*(-?[\d.]+)\s*\}\s*\{\s*(-?[\d.]+)\s*\}")
_HASHES = re.compile(r"####\s*([^\n]*)")
# Currency, thousands separators and unicode minus are stripped/normalised before matching numbers.
_CLEAN = str.maketrans({"\u2212": "-", "$": " ", "\u20ac": " ", "\u00a3": " ", "\u00a5": " "})


def _parse_number(token: str) -> Fraction | None:
    token = token.replace(",", "")
    try:
        if "/" in token:
            num, den = token.split("/", 1)
            return None if Decimal(den) == 0 else Fraction(Decimal(num)) / Fraction(Decimal(den))
        return Fraction(Decimal(token))
    except (InvalidOperation, ValueError, ZeroDivisionError):
        return None


def _last_number(text: str) -> tuple[str, Fraction] | None:
    cleaned = _FRAC.sub(r"\1/\2", text.translate(_CLEAN))
    for token in reversed(_NUMBER.findall(cleaned)):
        value = _parse_number(token)
        if value is not None:
            return token, value
    return None


def extract_number(text: str) -> tuple[str, Fraction] | None:
    """The answer's number: inside the last `\\boxed{}`, else after the last `####`, else the last
    number in the text. Returns (token as written, exact value) or None when there is no number.
    Commas, currency signs and trailing units (`18 dollars`, `5km`, `50%`) do not matter."""
    for pattern in (_BOXED, _HASHES):
        found = pattern.findall(text)
        if found:
            number = _last_number(found[-1])
            if number is not None:
                return number
    return _last_number(text)


def format_number(value: Fraction) -> str:
    if value.denominator == 1:
        return str(value.numerator)
    as_decimal = value.numerator / value.denominator
    return (
        f"{as_decimal:g}" if Fraction(str(as_decimal)) == value else f"{value.numerator}/{value.denominator}"
    )


def score_numeric(prediction: str, answers: Sequence[str]) -> Score:
    """Exact numeric match between the prediction's number and any gold answer's number."""
    golds = [g for g in (extract_number(a) for a in answers) if g is not None]
    expected = " or ".join(format_number(v) for _, v in golds) or " or ".join(repr(a) for a in answers)
    got = extract_number(prediction)
    if got is None:
        return Score(
            0.0, False, f"expected {expected}; got {_show(prediction)}: no number found in the answer"
        )
    token, value = got
    if any(value == gold for _, gold in golds):
        return Score(1.0, True, f"expected {expected}; got {format_number(value)}: correct")
    where = "the final answer" if ("\\boxed" in prediction or "####" in prediction) else "the last number"
    close = any(gold != 0 and abs(float(value / gold) - 1) < 0.01 for _, gold in golds)
    kind = "close but not equal (rounding?)" if close else "wrong number"
    return Score(
        0.0, False, f"expected {expected}; got {format_number(value)} (read {token!r} as {where}): {kind}"
    )


SCORERS: dict[str, Scorer] = {
    "exact": score_exact,
    "f1": score_f1,
    "numeric": score_numeric,
    "contains": score_contains,
    "regex": score_regex,
}
