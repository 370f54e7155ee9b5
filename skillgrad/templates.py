"""Prompt templates live as markdown files next to the code that uses them.

Templates use `string.Template` placeholders (`$name` / `${name}`); a missing variable is a bug
and raises `KeyError` at once rather than sending a half-filled prompt.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
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


def templates_digest(names: Iterable[tuple[str, str]]) -> str:
    """A sha256 of the templates `(package, name)` as they are: what the call cache keys a call
    on for the prompts a backend renders around what it is given (see skillgrad.cache.keys)."""
    digest = hashlib.sha256()
    for package, name in sorted(names):
        digest.update(f"{package}/{name}\0{_load(package, name).template}\0".encode("utf-8", "surrogatepass"))
    return digest.hexdigest()
