"""Edits that copy a task's text into the skill: its question, context or expected answer.

A skill that holds the tasks' answers scores well on those tasks and teaches nothing (and leaks
the benchmark into the artifact). An edit is a copy when it shares a run of `ngram` consecutive
words with a field of one of the tasks the analyst was shown, or when its words are the whole of
such a field (a question shorter than `ngram` words, restated as a "rule": seen from the 1.5B
analyst); such an edit is dropped before selection as "copies task text" (unless
`optimizer.allow_task_text`)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from skillgrad.skill import Edit
from skillgrad.values import Task

_WORD = re.compile(r"\w+")


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _grams(words: list[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


class TaskCopyGuard:
    """`guard(edit)` is the id of the first task whose text the edit copies, or None."""

    def __init__(self, tasks: Iterable[Task], ngram: int) -> None:
        self.ngram = ngram
        self.grams: list[tuple[str, set[tuple[str, ...]]]] = []
        self.whole: dict[tuple[str, ...], str] = {}  # a field's words -> the first task with it
        for task in tasks:
            fields = [_words(text) for text in (task.question, task.context or "", *task.answers)]
            grams = set().union(*(_grams(words, ngram) for words in fields))
            if grams:
                self.grams.append((task.id, grams))
            for words in fields:
                self.whole.setdefault(tuple(words), task.id)

    def __call__(self, edit: Edit) -> str | None:
        words = _words(edit.content)
        if words and tuple(words) in self.whole:
            return self.whole[tuple(words)]
        if len(words) < self.ngram:
            return None
        mine = _grams(words, self.ngram)
        return next((task_id for task_id, grams in self.grams if mine & grams), None)
