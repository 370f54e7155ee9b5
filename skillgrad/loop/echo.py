"""Edits the analyst copied from its own prompt templates instead of deriving from the tasks.

Weak optimizers copy whatever concrete text the prompt shows (issue 11: 19 of 41 proposals were
the prompt's examples verbatim). The templates now show placeholders only, and anything an edit
would bring in that is a line or a quoted span of a template, or a long stretch of one, is
dropped before selection, so a copied edit never costs a validation run.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from importlib import resources

from skillgrad.skill import Edit, normalize_text

_QUOTED = re.compile(r'"([^"\n]+)"')
_MARKER = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
MIN_STRETCH_CHARS = 24  # shorter contents ("YES", "end") may occur in a template by chance


def _clean(text: str) -> str:
    return normalize_text(_MARKER.sub("", text.strip()))


def template_texts(package: str = "skillgrad.loop") -> list[str]:
    folder = resources.files(package).joinpath("prompts")
    return [f.read_text(encoding="utf-8") for f in folder.iterdir() if f.name.endswith(".md")]


class PromptEcho:
    """`echo(edit)` is true when the edit's new text was copied from one of `texts`."""

    def __init__(self, texts: Iterable[str]) -> None:
        texts = list(texts)
        self.phrases = {_clean(line) for text in texts for line in text.splitlines() if line.strip()}
        self.phrases |= {_clean(m) for text in texts for m in _QUOTED.findall(text)}
        self.corpus = "\n".join(normalize_text(text) for text in texts)

    @classmethod
    def of_templates(cls, package: str = "skillgrad.loop") -> PromptEcho:
        return cls(template_texts(package))

    def __call__(self, edit: Edit) -> bool:
        text = _clean(edit.content)
        if not text:
            return False
        return text in self.phrases or (len(text) >= MIN_STRETCH_CHARS and text in self.corpus)
