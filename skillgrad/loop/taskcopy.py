"""Edits that copy a task into the skill instead of stating a rule.

A skill that holds one task's answer scores on that task and teaches nothing (and leaks the
benchmark into the artifact). Where the feedback says only "expected X, got Y", a small analyst
quotes X ("Replace ... with 'Prime Minister'", issue 26) or writes a rule about one task's topic
("... setting up private bill committees"); a quote that happens to help a validation item wins
by luck. An edit shown to the analyst's tasks is dropped before selection as "copies task text"
(unless `optimizer.allow_task_text`) when it

- shares `ngram` consecutive words with a task's question, context or answer, or its words are
  the whole of one (a short question restated as a rule);
- quotes one task's expected answer: an answer that no other train task expects (an answer
  several tasks share is the benchmark's convention or fact: "stage7.quokka.dev", "(B)", "Yes"),
  that is not a label a rule must name (option letters, yes/no, true/false), and that is specific
  enough not to be a rule's own word: a number of 2 digits or more, a capitalised name, or words
  that only one train task contains, a single such word of 6 letters or more ("Prime Minister",
  "1975", "Denver", "chloroplast"; not "three" or "date");
- holds a term that only one train task contains: `phrase_words` consecutive words of 4 letters
  or more ("private bill committees"), unless the grader's feedback states it in its own words
  (housefacts' "Our support email address is ..."), or the skill already does.

Tasks that share a context (questions about one paragraph) count as one task for "only one".
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from skillgrad.benchmarks.scoring import normalize_answer
from skillgrad.loop.kinds import NUMBER, is_label, shape
from skillgrad.skilldoc import Edit
from skillgrad.values import Task

_WORD = re.compile(r"\w+")
TERM_LETTERS = 4  # a term's words: "private bill committees", never "of the"
MIN_DIGITS = 2  # a one-digit number in a rule ("2 decimals") is a count, not a quote
MIN_WORD_LETTERS = 6  # a shorter lower-case word alone ("three", "date") is no quote


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _grams(words: list[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def _terms(words: list[str], n: int) -> set[tuple[str, ...]]:
    return {g for g in _grams(words, n) if all(len(w) >= TERM_LETTERS for w in g)} if n > 0 else set()


def _contains(haystack: list[str], needle: list[str]) -> bool:
    n = len(needle)
    return any(haystack[i : i + n] == needle for i in range(len(haystack) - n + 1))


@dataclass(frozen=True)
class Copy:
    """Which task an edit copies, and what of it."""

    task_id: str
    why: str

    def __str__(self) -> str:
        return f"task {self.task_id}: {self.why}"


def _fields(task: Task) -> list[str]:
    return [task.question, task.context or "", *task.answers]


def _group(task: Task) -> str:
    return f"context:{task.context}" if task.context else f"task:{task.id}"


class TaskIndex:
    """The train tasks as the guard needs them: how many tasks expect each answer, and which
    groups of tasks (one per shared context) contain each word, phrase and term."""

    def __init__(self, pool: Iterable[Task], phrase_words: int) -> None:
        self.phrase_words = phrase_words
        self.answers: Counter[tuple[str, ...]] = Counter()  # answer -> groups that expect it
        expected: dict[tuple[str, ...], set[str]] = {}
        self.texts: dict[str, list[str]] = {}  # group -> its normalised words (each field)
        self.terms: dict[tuple[str, ...], set[str]] = {}
        for task in pool:
            group = _group(task)
            for answer in task.answers:
                expected.setdefault(tuple(normalize_answer(answer).split()), set()).add(group)
            for text in _fields(task):
                self.texts.setdefault(group, []).append(" " + normalize_answer(text) + " ")
                for term in _terms(_words(text), phrase_words):
                    self.terms.setdefault(term, set()).add(group)
        self.answers.update({answer: len(groups) for answer, groups in expected.items()})

    def groups_with(self, phrase: list[str]) -> int:
        needle = " " + " ".join(phrase) + " "
        return sum(1 for texts in self.texts.values() if any(needle in t for t in texts))


def specific_answer(answer: str, index: TaskIndex) -> list[str] | None:
    """The answer's normalised words when quoting them quotes one task (see the module
    docstring), else None."""
    words = normalize_answer(answer).split()
    if not words or is_label(answer) or index.answers[tuple(words)] > 1:
        return None
    if shape(answer) == NUMBER:
        return words if sum(c.isdigit() for c in answer) >= MIN_DIGITS else None
    named = any(w[:1].isupper() or any(c.isdigit() for c in w) for w in answer.split())
    if named:
        return words
    if len(words) == 1 and len(words[0]) < MIN_WORD_LETTERS:
        return None  # "three", "date": a rule's own words as often as a quote
    return words if index.groups_with(words) <= 1 else None


class TaskCopyGuard:
    """`guard(edit)` is the first `Copy` of a shown task that the edit makes, or None.

    `shown`: the tasks the analysts saw; `pool`: every train task (default: `shown`), for what
    only one task has; `graded`: each shown task's (answer, feedback), the feedback's own words
    (not the answers it quotes) may be restated; `skill`: the current skill, whose terms may be
    restated."""

    def __init__(
        self,
        shown: Iterable[Task],
        ngram: int,
        *,
        pool: Iterable[Task] | None = None,
        phrase_words: int = 0,
        graded: Mapping[str, tuple[str, str]] | None = None,
        skill: str = "",
        index: TaskIndex | None = None,
    ) -> None:
        self.shown = list(shown)
        self.ngram = ngram
        self.index = index or TaskIndex(self.shown if pool is None else pool, phrase_words)
        self.grams = [
            (t.id, set().union(*(_grams(_words(f), ngram) for f in _fields(t)))) for t in self.shown
        ]
        self.whole = {tuple(_words(f)): t.id for t in reversed(self.shown) for f in _fields(t)}
        self.quotes = [
            (t.id, a, w) for t in self.shown for a in t.answers if (w := specific_answer(a, self.index))
        ]
        self.terms = self._terms_of_one_task(graded or {}, skill)

    def _terms_of_one_task(
        self, graded: Mapping[str, tuple[str, str]], skill: str
    ) -> dict[tuple[str, ...], str]:
        """Terms of the shown tasks that only one group of train tasks contains, less those the
        grader's feedback states in its own words (not inside the answers it quotes)."""
        n, allowed = self.index.phrase_words, _terms(_words(skill), self.index.phrase_words)
        out: dict[tuple[str, ...], str] = {}
        for task in self.shown:
            answer, feedback = graded.get(task.id, ("", ""))
            quoted = set().union(*(_terms(_words(a), n) for a in (answer, *task.answers)))
            own = _terms(_words(feedback), n) - quoted
            for text in _fields(task):
                for term in _terms(_words(text), n) - own - allowed:
                    if len(self.index.terms.get(term, ())) <= 1:
                        out.setdefault(term, task.id)
        return out

    def __call__(self, edit: Edit) -> Copy | None:
        words = _words(edit.content)
        if words and tuple(words) in self.whole:
            return Copy(self.whole[tuple(words)], "its question, context or answer, whole")
        if len(words) >= self.ngram:
            mine = _grams(words, self.ngram)
            task_id = next((task_id for task_id, grams in self.grams if mine & grams), None)
            if task_id is not None:
                return Copy(task_id, f"{self.ngram} or more consecutive words of its text")
        normalized = normalize_answer(edit.content).split()
        for task_id, answer, answer_words in self.quotes:
            if _contains(normalized, answer_words):
                return Copy(task_id, f"quotes its expected answer {answer!r}")
        for term in _terms(words, self.index.phrase_words):
            if term in self.terms:
                return Copy(self.terms[term], f"the phrase {' '.join(term)!r}, which no other task has")
        return None
