"""Edits the analyst copied from its own prompt templates instead of deriving from the tasks.

Weak optimizers copy whatever concrete text the prompt shows (issue 11: 19 of 41 proposals were
the prompt's examples verbatim). The templates now show placeholders and one edit from a domain
no packaged benchmark comes from (chess moves, to teach the shape), and anything an edit would
bring in that is a line or a quoted span of a template, or a long stretch of one, is dropped
before selection, so a copied edit never costs a validation run. The step's failed answers
count as prompt text too (`with_failed_answers`): a small analyst copies the wrong answer it was
shown, and a rule that restates a wrong answer can only teach the mistake. Content that takes
over `EXAMPLE_RUN` consecutive words of the example edit imitates it (", e.g. Nf3 or exd5."): it
is dropped too. A rationale that does ("tasks 2 and 4 wrote the program's name in words", from
the example's "tasks 2 and 4 wrote the moves in words", issue 26) says nothing about the tasks:
`own_rationale` blanks it before the edit is merged, recorded or shown to a later analyst, and
the rule itself is judged on its content (the housestyle rules this prompt wins come with such
rationales too). Content that names one of the prompt's tasks by its number ("in task 3", "the
fifth task") is the prompt's numbering, not a rule, and is dropped as well.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace
from importlib import resources

from skillgrad.skilldoc import Edit, normalize_text

_QUOTED = re.compile(r'"([^"\n]+)"')
_MARKER = re.compile(r"^\s*(?:[-*+#]+|\d+[.)])\s+")
_PLACEHOLDER = re.compile(r"\$\{?\w+\}?")
# A copy that swaps the template's quote marks ('add' for "add") is still a copy.
_QUOTE_MARKS = re.compile("[\"'`\u2018\u2019\u201c\u201d]")
MIN_STRETCH_CHARS = 24  # shorter contents ("YES", "end") may occur in a template by chance
MIN_SCAFFOLD_CHARS = 8  # a template line with less fixed text than this matches too much
# Content (dropped) or a rationale (blanked) that shares this many consecutive words with the
# example edit imitates it (", e.g. Nf3 or exd5"; "tasks 2 and 4 wrote the program's name in words").
EXAMPLE_RUN = 5
COPIED_RATIONALE = "(the prompt's example rationale, copied)"
_WORD = re.compile(r"\w+")
# A rule about "task 3" or "the fifth task" speaks of the prompt's numbering, not of the tasks the
# skill will meet ("Replace 'Model C' with 'semi-private' in the fifth task.", the 1.5B on XQuAD).
_ORDINALS = "first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|last"
_NAMES_A_TASK = re.compile(rf"\btasks? \d+\b|\b(?:{_ORDINALS}|\d+(?:st|nd|rd|th)) tasks?\b", re.IGNORECASE)


def _runs(text: str, n: int = EXAMPLE_RUN) -> set[tuple[str, ...]]:
    words = _WORD.findall(text.lower())
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def _clean(text: str) -> str:
    return normalize_text(_QUOTE_MARKS.sub("", _MARKER.sub("", text.strip())))


def template_texts(package: str = "skillgrad.loop") -> list[str]:
    folder = resources.files(package).joinpath("prompts")
    return [f.read_text(encoding="utf-8") for f in folder.iterdir() if f.name.endswith(".md")]


class PromptCopyGuard:
    """`echo(edit)` is true when the edit's new text was copied from one of `texts`."""

    def __init__(self, texts: Iterable[str], copied_texts: Iterable[str] = (), example: str = "") -> None:
        """`texts`: prompt templates (their placeholder lines are scaffolding patterns);
        `copied_texts`: other prompt text an edit must not restate (the step's failed answers);
        `example`: the example edit, whose wording content may not take over (`own_rationale`)."""
        self.templates = list(texts)
        self.example = example
        self.example_runs = _runs(example)
        self.copied_texts = [t for t in copied_texts if t.strip()]
        texts = [*self.templates, *self.copied_texts]
        self.phrases = {_clean(line) for text in texts for line in text.splitlines() if line.strip()}
        self.phrases |= {_clean(m) for text in texts for m in _QUOTED.findall(text)}
        # a heading's title ("## The skill is empty: ..." -> "the skill is empty")
        self.phrases |= {p.split(": ")[0] for p in self.phrases if ": " in p}
        self.corpus = "\n".join(normalize_text(_QUOTE_MARKS.sub("", text)) for text in texts)
        # A template line with placeholders is the prompt's scaffolding: "### Task $index: $status
        # (score $score)" renders as "Task 2: FAILED (score 0.00)", which is no rule either.
        self.scaffolds = [
            _scaffold(line) for text in self.templates for line in text.splitlines() if _is_scaffold(line)
        ]

    @classmethod
    def of_templates(cls, package: str = "skillgrad.loop") -> PromptCopyGuard:
        return cls(template_texts(package))

    def with_failed_answers(self, answers: Iterable[str]) -> PromptCopyGuard:
        """This filter plus the given failed answers of the step (blank ones ignored)."""
        return PromptCopyGuard(self.templates, [*self.copied_texts, *answers], self.example)

    def own_rationale(self, edit: Edit) -> Edit:
        """`edit` with its rationale blanked when that takes over the example edit's wording."""
        if self.example_runs & _runs(edit.rationale):
            return replace(edit, rationale=COPIED_RATIONALE)
        return edit

    def __call__(self, edit: Edit) -> bool:
        if self.example_runs & _runs(edit.content):
            return True
        if _NAMES_A_TASK.search(edit.content):
            return True
        text = _clean(edit.content)
        if not text:
            return False
        if text in self.phrases or (len(text) >= MIN_STRETCH_CHARS and text in self.corpus):
            return True
        return any(p.fullmatch(text) for p in self.scaffolds)


def _is_scaffold(line: str) -> bool:
    return bool(_PLACEHOLDER.search(line)) and len(_clean(_PLACEHOLDER.sub("", line))) >= MIN_SCAFFOLD_CHARS


def _scaffold(line: str) -> re.Pattern[str]:
    """The rendered forms of a template line: its fixed text, anything where a placeholder was."""
    parts = _PLACEHOLDER.split(_clean(line))
    return re.compile(".+".join(re.escape(part) for part in parts))
