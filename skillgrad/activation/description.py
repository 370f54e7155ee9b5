"""A skill's front matter as text: the description it is installed with, the one line that holds
it, and a skill whose description is another (a package: its SKILL.md), within the limits of
Agent Skills (Claude Code, Codex): a description of at most 1024 characters without XML tags
(`skill.description_chars` tightens the 1024); the name's 64 are `skill.name`'s pattern.

A description step is one `replace` edit of the description's line, so it goes through the edit
report, the rejected-edit buffer and the call cache like any edit. The line is written as YAML's
double-quoted (JSON) string, which no description text can break.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

from skillgrad.backends.workspace import FRONT_MATTER, SKILL_DESCRIPTION
from skillgrad.config import Config
from skillgrad.errors import UserError
from skillgrad.package.install import main_file
from skillgrad.package.model import SKILL_FILE, as_package
from skillgrad.skilldoc import Edit

DESCRIPTION_LIMIT = 1024
_DESCRIPTION_LINE = re.compile(r"^description:[ \t]*\S.*$", re.MULTILINE)
_TAG = re.compile(r"</?[A-Za-z][^<>]*>")


def _meta(markdown: str) -> tuple[dict[str, Any] | None, re.Match[str] | None]:
    """(the front matter's mapping, or None when absent or not YAML; its match)."""
    match = FRONT_MATTER.match(markdown)
    if not match:
        return None, None
    try:
        meta = yaml.safe_load(match.group(1))
    except yaml.YAMLError:
        return None, match
    return (meta if isinstance(meta, dict) else None), match


def own_description(skill: str) -> str | None:
    """The description the skill's front matter states (whitespace collapsed), or None."""
    meta, _ = _meta(main_file(skill))
    value = meta.get("description") if meta else None
    return " ".join(value.split()) if isinstance(value, str) and value.strip() else None


def description_of(skill: str) -> str:
    """The description the skill is installed with: its own, else skillgrad's default."""
    return own_description(skill) or SKILL_DESCRIPTION


def description_line(skill: str) -> str | None:
    """The front-matter line that alone holds the description (None: there is none, or it spans
    several lines)."""
    markdown = main_file(skill)
    meta, match = _meta(markdown)
    if meta is None or match is None or own_description(skill) is None:
        return None
    for line in _DESCRIPTION_LINE.findall(match.group(1)):
        try:
            parsed = yaml.safe_load(line)
        except yaml.YAMLError:
            continue
        if isinstance(parsed, dict) and parsed.get("description") == meta.get("description"):
            return str(line)
    return None


def without_tags(description: str) -> str:
    """The description without XML tags or angle brackets, which Agent Skills do not allow."""
    return re.sub(r"[<>]", "", _TAG.sub(" ", description))


def description_tags(description: str) -> list[str]:
    """The XML tags (and stray angle brackets) of `description`, which `without_tags` removes."""
    return [*_TAG.findall(description), *(c for c in "<>" if c in _TAG.sub(" ", description))]


def tags_removed(tags: list[str]) -> str:
    """How a description whose tags were removed says so (the analyst's and the initial one)."""
    return f"its XML tags {', '.join(tags)} were removed (Agent Skills forbid tags in a description)"


def without_description_tags(skill: str, name: str) -> tuple[str, list[str]]:
    """The skill with its description's XML tags removed, the same rule as for every description
    an analyst proposes, and the tags that were (none: the skill as it is)."""
    description = own_description(skill)
    tags = description_tags(description) if description is not None else []
    if description is None or not tags:
        return skill, []
    return with_description(skill, " ".join(without_tags(description).split()), name), tags


def quoted(description: str) -> str:
    return f"description: {json.dumps(' '.join(description.split()), ensure_ascii=False)}"


def _rebuilt(markdown: str, description: str, name: str) -> str:
    """`markdown` with front matter that holds `description` on one line (other keys kept)."""
    meta, match = _meta(markdown)
    body = markdown[match.end() :] if match else markdown
    keys = dict(meta or {})
    if "name" not in keys:
        keys = {"name": name, **keys}
    lines = []
    for key, value in keys.items():
        if key == "description":
            continue
        lines.append(yaml.safe_dump({key: value}, sort_keys=False, allow_unicode=True).rstrip())
        if key == "name":
            lines.append(quoted(description))
    return "---\n" + "\n".join(lines) + "\n---\n\n" + body.lstrip("\n")


def with_description(skill: str, description: str, name: str) -> str:
    """The skill whose description is `description`; its other text as it was."""
    markdown = main_file(skill)
    line = description_line(skill)
    if line is not None:
        match = FRONT_MATTER.match(markdown)
        assert match is not None
        pattern = re.compile(f"^{re.escape(line)}$", re.MULTILINE)
        front = pattern.sub(lambda _m: quoted(description), match.group(0), count=1)
        new = front + markdown[match.end() :]
    else:
        new = _rebuilt(markdown, description, name)
    package = as_package(skill)
    return new if package is None else package.with_file(SKILL_FILE, new).encode()


def with_front_matter(skill: str, name: str) -> str:
    """The skill as a description step edits it: its description on one front-matter line (the
    default description written in when it has none); unchanged when it already is."""
    return (
        skill if description_line(skill) is not None else with_description(skill, description_of(skill), name)
    )


def description_edit(skill: str, description: str, rationale: str) -> Edit | None:
    """The edit that makes `description` the skill's (None: no single line holds it)."""
    line = description_line(skill)
    if line is None:
        return None
    return Edit("replace", line.strip(), quoted(description), rationale)


def description_limit(cfg: Config) -> int:
    return min(DESCRIPTION_LIMIT, cfg.skill.description_chars)


def check_description(cfg: Config, source: Path | str, skill: str) -> None:
    """An initial description over the limit is the user's to shorten (UserError)."""
    description = own_description(skill)
    limit = description_limit(cfg)
    if description is not None and len(description) > limit:
        raise UserError(
            f"{source}: the description in its front matter has {len(description)} characters, over "
            f"the limit of {limit} (skill.description_chars; Agent Skills allow {DESCRIPTION_LIMIT}); "
            "shorten it"
        )
