"""Prompt templates live as markdown files next to the code that uses them.

Templates use `string.Template` placeholders (`$name` / `${name}`); a missing variable is a bug
and raises `KeyError` at once rather than sending a half-filled prompt.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from string import Template


@cache
def _load(package: str, name: str) -> Template:
    text = resources.files(package).joinpath(f"prompts/{name}.md").read_text(encoding="utf-8")
    return Template(text)


def render(package: str, name: str, **values: object) -> str:
    """Render `<package>/prompts/<name>.md` with `values` (all placeholders must be given)."""
    return _load(package, name).substitute({k: str(v) for k, v in values.items()})
