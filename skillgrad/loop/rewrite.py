"""The rewrite analyst: it returns the whole revised skill, which is diffed into line edits.

SkillOpt's rewrite modes let the optimizer write freely; here the rewrite goes through
`skill.diff_edits`, so the learning rate, selection after validity and the edit report apply to
a rewrite exactly as to a patch.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from skillgrad.backends.base import ChatModel, Effort, Message, Reply
from skillgrad.loop.merge import Patch
from skillgrad.loop.reflect import PROMPTS, AnalystInputs, prompt_sections, reflect, tidy_messages
from skillgrad.skill import diff_edits
from skillgrad.templates import render

_SKILL_BLOCK = re.compile(r"<skill>\s*\n?(.*?)</skill>", re.DOTALL)
_FENCE = re.compile(r"```(?:markdown|md)?\s*\n(.*?)```", re.DOTALL)


def rewrite_messages(inputs: AnalystInputs) -> list[Message]:
    # An empty skill is shown as an empty block: a placeholder sentence would be copied back.
    sections = {**prompt_sections(inputs), "skill": inputs.skill.strip()}
    user = render(PROMPTS, "rewrite_user", **sections)
    return tidy_messages(render(PROMPTS, "rewrite_system", max_edits=inputs.max_edits), user)


def extract_skill(reply: str) -> str | None:
    """The revised skill in a reply: the last complete <skill> block, else a fenced block; None
    when there is none. A block cut short (no closing tag) is None: its missing tail would read
    as deletions."""
    blocks = _SKILL_BLOCK.findall(reply) or _FENCE.findall(reply)
    return str(blocks[-1]) if blocks else None


def reflect_rewrite(
    optimizer: ChatModel, inputs: AnalystInputs, minibatch: int, effort: Effort | None, proposal: int = 0
) -> tuple[Patch, Reply, list[Message]]:
    messages = rewrite_messages(inputs)
    reply = optimizer.complete(messages, effort=effort, stage="reflect")
    revised = extract_skill(reply.text)
    edits = [] if revised is None else diff_edits(inputs.skill, revised)
    failures = sum(1 for r in inputs.rollouts if not r.score.passed)
    return Patch(minibatch, edits, failures, proposal), reply, messages


Analyst = Callable[[ChatModel, AnalystInputs, int, Effort | None, int], tuple[Patch, Reply, list[Message]]]
ANALYSTS: dict[str, Analyst] = {"patch": reflect, "rewrite": reflect_rewrite}  # optimizer.edit_mode
