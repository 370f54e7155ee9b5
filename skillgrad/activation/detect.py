"""Which installed skills a session loaded, read from its trace steps.

- Claude Code: a `Skill` tool call naming the skill (the step's text starts with the skill's name,
  a plugin's skill as `plugin:name`), or any tool call that reads its SKILL.md (`Read` of the path,
  a shell `cat` or `sed`).
- Codex: a tool call that reads the skill's SKILL.md (`exec_command` with `cat` or `sed -n` of
  `.agents/skills/<name>/SKILL.md`, relative or absolute, as the pinned CLI and real rollouts do).

A call cut off by the probe's turn limit still counts: the session had decided to load the skill.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from skillgrad.values import TraceStep

SKILL_TOOL = "Skill"


def _reads(name: str) -> re.Pattern[str]:
    """A path to `name`'s SKILL.md inside a tool call's text (not `other-name/SKILL.md`)."""
    return re.compile(r"(?:^|[\s'\"=/:(])" + re.escape(name) + r"/SKILL\.md\b")


def _skill_tool_name(step: TraceStep) -> str:
    words = step.text.split()
    return words[0].rsplit(":", 1)[-1] if words else ""


def loaded_skills(trace: Iterable[TraceStep], names: Iterable[str]) -> list[str]:
    """The skills among `names` the session loaded, in the order it first loaded them."""
    patterns = {name: _reads(name) for name in names}
    loaded: list[str] = []
    for step in trace:
        if step.kind != "tool_call":
            continue
        called = _skill_tool_name(step) if step.tool == SKILL_TOOL else None
        for name, pattern in patterns.items():
            if name not in loaded and (called == name or pattern.search(step.text)):
                loaded.append(name)
    return loaded
