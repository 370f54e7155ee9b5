"""The form of an answer, and what a step's answers show about it.

Where a benchmark's feedback says only "expected '(A)'; got '(B) 12/26/1951'", the rule that helps
most is about the answer's form, and the evidence for it is spread over the whole step: every
expected answer is an option label in parentheses alone, while six answers add a date to a label.
`answer_shape` names the form of one answer (an option label, a bare number, a yes/no word, a
date and its format, a short span, a longer text, ...); `form_rule` is the one-sentence rule the
expected answers' common form implies, None when they share no form a rule can state exactly (a
span of words has no form to copy: on extractive QA a span rule lowered token F1, issue 36);
`form_report` counts a step's answers by shape against that form, and `form_summary` is what the
analyst reads of it, before it is asked for rules.

Rules are skill text, not prompt text: their templates are `skillgrad/prompts/form_*.md`, outside
the analyst's prompt folder, so the prompt-echo guard does not count them as prompt text.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from skillgrad.skilldoc import normalize_text
from skillgrad.templates import render
from skillgrad.values import Rollout

PROMPTS = "skillgrad.loop"
RULES = "skillgrad"  # skillgrad/prompts/form_*.md: text a skill holds
SAMPLE_CHARS = 60  # one answer quoted in the summary

EMPTY = "an empty answer"
OPTION = "an option label in parentheses, like (A)"
LETTER = "a bare option letter, like A"
OPTION_PLUS = "an option label followed by more text"
NUMBER = "a bare number, like 42"
NUMBER_PLUS = "a number with a unit or other words"
SHORT = "a short span (1-3 words)"
LONG = "a longer text (4 words or more)"

# Closed sets of one word: a rule can name every member ("Reply with Yes or No").
LABEL_PAIRS = (("yes", "no"), ("true", "false"), ("valid", "invalid"))
_PAIR_OF = {word: pair for pair in LABEL_PAIRS for word in pair}
_OPTION = re.compile(r"^\([A-Z]\)$")
_LETTER = re.compile(r"^[A-Z]$")
_OPTION_START = re.compile(r"^\(?[A-Z]\)\s*\S")
_NUMBER = re.compile(r"^[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?$")
# a number as its own word, with a unit, a currency or a word beside it: "8 instruments", "USD 61.10",
# "$18", "50%"; not a name with digits in it ("Mara12", "ORD-62566": a span of its own form)
_NUMBER_WITH = re.compile(r"^(?:\S+ )?[-+]?[$€£]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?%?(?: \S+)?$")
_MONTHS = (
    "january|february|march|april|may|june|july|august|september|october|november|december"
    "|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
)
# (pattern, the format's name, an example of it that is no one's answer)
DATE_FORMATS: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (re.compile(r"^\d{2}/\d{2}/\d{4}$"), "MM/DD/YYYY", "04/15/2003"),
    (re.compile(r"^\d{4}-\d{2}-\d{2}$"), "YYYY-MM-DD", "2003-04-15"),
    (re.compile(r"^\d{1,2}/\d{1,2}/\d{2,4}$"), "M/D/YYYY", "4/15/2003"),
    (re.compile(r"^\d{1,2}\.\d{1,2}\.\d{4}$"), "DD.MM.YYYY", "15.04.2003"),
    (re.compile(rf"^(?:{_MONTHS})\.? \d{{1,2}}, \d{{4}}$", re.IGNORECASE), "Month D, YYYY", "April 15, 2003"),
    (re.compile(rf"^\d{{1,2}} (?:{_MONTHS})\.? \d{{4}}$", re.IGNORECASE), "D Month YYYY", "15 April 2003"),
)
MIN_ANSWERS = 2  # one expected answer is no convention
SET_WORDS = 4  # a closed set of plain words: at most this many distinct ones, each expected twice


def date_format(text: str) -> str | None:
    stripped = text.strip()
    return next((name for pattern, name, _ in DATE_FORMATS if pattern.match(stripped)), None)


def _label_pair(word: str) -> tuple[str, str] | None:
    return _PAIR_OF.get(word.strip().rstrip(".").lower())


def answer_shape(text: str) -> str:
    """The shape of one answer, in the words the analyst reads (see the module constants)."""
    stripped = text.strip()
    if not stripped:
        return EMPTY
    if _OPTION.match(stripped):
        return OPTION
    if _LETTER.match(stripped):
        return LETTER
    if _OPTION_START.match(stripped):
        return OPTION_PLUS
    pair = _label_pair(stripped)
    if pair is not None:
        return f"a {'/'.join(pair)} word"
    first = re.split(r"[\s,.;:!]+", stripped, maxsplit=1)[0]
    if len(stripped.split()) > 1 and _label_pair(first) is not None:
        return f"a {'/'.join(_label_pair(first) or ())} word followed by more text"
    date = date_format(stripped)
    if date is not None:
        return f"a date written {date}"
    if _NUMBER.match(stripped):
        return NUMBER
    words = stripped.split()
    if _NUMBER_WITH.match(stripped):
        return NUMBER_PLUS
    return SHORT if len(words) <= 3 else LONG


def _synthetic(answer: str) -> str:
    """`answer` with every run of digits replaced by 1234... of the same length: the form of an
    answer without being anyone's answer."""
    return re.sub(r"\d+", lambda m: ("1234567890" * 4)[: len(m.group())], answer)


def _casing(words: Sequence[str]) -> str:
    return (
        "upper"
        if all(w.isupper() for w in words)
        else "lower"
        if all(w.islower() for w in words)
        else "title"
    )


def _cased(word: str, casing: str) -> str:
    return word.upper() if casing == "upper" else word.lower() if casing == "lower" else word.capitalize()


def _one_of(words: Sequence[str]) -> str:
    return ", ".join(words[:-1]) + f" or {words[-1]}" if len(words) > 1 else words[0]


def _unit(answer: str) -> str:
    return re.sub(r"[-+]?[\d.,]+", "#", answer.strip())


def form_rule(expected_answers: Sequence[str]) -> str | None:
    """The format rule the expected answers' common form implies (one sentence, with an example
    that is none of them), or None when they share no form a rule can state exactly."""
    answers = [a.strip() for a in expected_answers if a.strip()]
    if len(answers) < MIN_ANSWERS:
        return None
    shapes = {answer_shape(a) for a in answers}
    if len(shapes) != 1:
        return _word_set_rule(answers)
    shape = shapes.pop()
    if shape == OPTION:
        return render(RULES, "form_option").strip()
    if shape == LETTER:
        return render(RULES, "form_letter").strip()
    pair = _label_pair(answers[0])
    if pair is not None and shape == f"a {'/'.join(pair)} word":
        casing = _casing(answers)
        return render(RULES, "form_words", words=_one_of([_cased(w, casing) for w in pair])).strip()
    if shape == NUMBER:
        return render(RULES, "form_number", example=_synthetic(answers[0])).strip()
    if shape.startswith("a date written "):
        fmt = shape.removeprefix("a date written ")
        example = next(ex for _, name, ex in DATE_FORMATS if name == fmt)
        return render(RULES, "form_date", format=fmt, example=example).strip()
    if shape == NUMBER_PLUS and len({_unit(a) for a in answers}) == 1:
        return render(RULES, "form_unit", example=_synthetic(answers[0])).strip()
    return _word_set_rule(answers)


def shared_shape(expected_answers: Sequence[str]) -> str | None:
    """The shape (`answer_shape`) every expected answer has, where they share a form a rule can
    state (`form_rule`); None otherwise (spans, mixed forms)."""
    answers = [a.strip() for a in expected_answers if a.strip()]
    shapes = {answer_shape(a) for a in answers}
    return shapes.pop() if len(shapes) == 1 and form_rule(answers) is not None else None


def _word_set_rule(answers: Sequence[str]) -> str | None:
    """A closed set of plain words ("positive", "negative"): each answer one word of letters, at
    most SET_WORDS distinct ones, each expected at least twice."""
    if not all(a.isalpha() for a in answers):
        return None
    counts = Counter(answers)
    if not 2 <= len(counts) <= SET_WORDS or min(counts.values()) < 2:
        return None
    return render(RULES, "form_words", words=_one_of(sorted(counts))).strip()


@dataclass(frozen=True)
class ShapeCount:
    """The step's answers of one shape: how many, how many failed, a sample, their mean length,
    and which of the prompt's tasks (1-based) they are."""

    shape: str
    count: int
    failed: int
    sample: str
    mean_words: float
    shown: tuple[int, ...]


@dataclass(frozen=True)
class FormReport:
    """A step's answers against the form every expected answer shares."""

    expected_shape: str
    rule: str
    total: int
    given: tuple[ShapeCount, ...]  # most common first; the expected form among them
    held: int  # failed answers that hold the expected answer with other text (`holds`)
    off_passed: int  # answers not in the expected form that passed anyway

    @property
    def off_failed(self) -> int:
        return sum(g.failed for g in self.given if g.shape != self.expected_shape)

    @property
    def failed(self) -> int:
        return sum(g.failed for g in self.given)

    def is_problem(self) -> bool:
        """True when the form is what fails the step's answers: no answer out of the form passed,
        most failed answers are out of it, and one of them holds the right answer (or two are
        out of it). A scorer that reads the answer out of any form (GSM8K's last number) passes
        answers out of the form: then the form is no problem."""
        if self.off_passed or not self.failed or self.off_failed * 2 < self.failed:
            return False
        return self.held >= 1 or self.off_failed >= 2


def holds(answer: str, expected: str) -> bool:
    """True when `answer` is more than `expected` but holds it whole, as its own words (case
    ignored): "(B) 12/25/1937" holds "(B)", "8 instruments" holds "8"."""
    answer, expected = answer.strip(), expected.strip()
    if not expected or answer.lower() == expected.lower():
        return False
    return re.search(rf"(?<!\w){re.escape(expected)}(?!\w)", answer, re.IGNORECASE) is not None


def named_answer(answer: str, answers: Iterable[str]) -> str | None:
    """Which of `answers` (normalized: `skilldoc.normalize_text`) `answer` gives: the longest one
    it is or starts with as a word of its own ("(C) Ambiguous" gives "(c)", "42 apples" gives
    "42"), None if it names none. Unlike `holds`, only the answer's start counts: "not (A) but
    (B)" gives no label."""
    text = normalize_text(answer)
    named = [a for a in answers if a and text.startswith(a) and not text[len(a) : len(a) + 1].isalnum()]
    return max(named, key=len, default=None)


def form_report(batch: Sequence[Rollout], shown: Sequence[Rollout] = ()) -> FormReport | None:
    """The step's answers counted by shape against the expected answers' common form (each
    task's first expected answer); None when those share no form or no answer is out of it."""
    expected = [r.task.answers[0] for r in batch if r.task.answers]
    rule = form_rule(expected)
    if rule is None or len(expected) < len(batch):
        return None
    expected_shape = answer_shape(expected[0])
    number = {id(r): i for i, r in enumerate(shown, 1)}
    groups: dict[str, list[Rollout]] = {}
    for rollout in batch:
        groups.setdefault(answer_shape(rollout.result.answer), []).append(rollout)
    if set(groups) == {expected_shape}:
        return None
    given = [
        ShapeCount(
            shape,
            len(members),
            sum(1 for r in members if not r.score.passed),
            members[0].result.answer,
            sum(len(r.result.answer.split()) for r in members) / len(members),
            tuple(sorted(number[id(r)] for r in members if id(r) in number)),
        )
        for shape, members in groups.items()
    ]
    given.sort(key=lambda g: (-g.count, g.shape))
    held = sum(1 for r in batch if not r.score.passed and holds(r.result.answer, r.task.answers[0]))
    off_passed = sum(1 for r in batch if r.score.passed and answer_shape(r.result.answer) != expected_shape)
    return FormReport(expected_shape, rule, len(batch), tuple(given), held, off_passed)


def _quote(text: str) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= SAMPLE_CHARS else flat[: SAMPLE_CHARS - 3] + "...")


def _line(group: ShapeCount, expected_shape: str) -> str:
    where = ""
    if group.shown:
        refs = ", ".join(map(str, group.shown))
        where = f"; task{'s' if len(group.shown) > 1 else ''} {refs} above"
    form = " (the expected form)" if group.shape == expected_shape else f", like {_quote(group.sample)}"
    outcome = f"{group.failed} failed" if group.failed < group.count else "all failed"
    if not group.failed:
        outcome = "all passed"
    return (
        f"- {group.count} {'is' if group.count == 1 else 'are'} {group.shape}{form} "
        f"({group.mean_words:.1f} words on average): {outcome}{where}"
    )


def form_summary(batch: Sequence[Rollout], shown: Sequence[Rollout] = ()) -> str:
    """What the analyst reads about the step's answer forms ("" when there is nothing to say:
    the expected answers share no form, or every answer has it)."""
    report = form_report(batch, shown)
    if report is None:
        return ""
    held = render(PROMPTS, "analyst_form_held", held=report.held).strip() if report.held else ""
    verdict = ""
    if report.is_problem():
        verdict = render(PROMPTS, "analyst_form_problem").strip()
    elif report.off_passed:
        verdict = render(PROMPTS, "analyst_form_passed", passed=report.off_passed).strip()
    return render(
        PROMPTS,
        "analyst_form",
        total=report.total,
        expected=report.expected_shape,
        lines="\n".join(_line(g, report.expected_shape) for g in report.given),
        held=held,
        verdict=verdict,
    )
