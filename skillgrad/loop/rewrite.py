"""The rewrite analyst: it returns the whole revised skill, which is diffed into line edits.

SkillOpt's rewrite modes let the optimizer write freely; here the rewrite goes through
`skill.diff_edits`, so the learning rate, selection after validity and the edit report apply to
a rewrite exactly as to a patch.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from skillgrad.backends.interface import ChatModel
from skillgrad.loop.analyst_prompt import PROMPTS, AnalystInputs, prompt_sections, reflect, tidy_messages
from skillgrad.loop.patch_merge import Patch
from skillgrad.skilldoc import diff_edits
from skillgrad.templates import render
from skillgrad.values import Effort, Message, Reply

_SKILL_BLOCK = re.compile(r"<skill>\s*\n?(.*?)</skill>", re.DOTALL)
_FENCE = re.compile(r"```(?:markdown|md)?\s*\n(.*?)```", re.DOTALL)


def rewrite_messages(inputs: AnalystInputs) -> list[Message]:
    # An empty skill is shown as an empty block: a placeholder sentence would be copied back.
    sections = {**prompt_sections(inputs), "skill": inputs.skill.strip()}
    user = render(PROMPTS, "rewrite_user", **sections)
    return tidy_messages(render(PROMPTS, "rewrite_system", max_edits=inputs.max_edits), user)


def extract_skill(reply: str, prompt: str = "") -> tuple[str, bool] | None:
    """(revised skill, cut short) from a reply: the last complete <skill> block, else a fenced
    block; else an unclosed <skill> block (a reply cut by max_output_tokens) up to the first line
    that echoes `prompt` (small models go on to copy the tasks), its last, half-written line
    dropped. None when there is none."""
    blocks = _SKILL_BLOCK.findall(reply) or _FENCE.findall(reply)
    if blocks:
        return str(blocks[-1]), False
    opened = reply.find("<skill>")
    if opened < 0:
        return None
    echoed = {line.strip() for line in prompt.splitlines() if line.strip()}
    lines = reply[opened + len("<skill>") :].lstrip("\n").splitlines()[:-1]
    kept = []
    for line in lines:
        if line.strip() in echoed and line.strip():
            break
        kept.append(line)
    return ("\n".join(kept) + "\n", True) if any(line.strip() for line in kept) else None


def reflect_rewrite(
    optimizer: ChatModel, inputs: AnalystInputs, minibatch: int, effort: Effort | None, proposal: int = 0
) -> tuple[Patch, Reply, list[Message]]:
    messages = rewrite_messages(inputs)
    reply = optimizer.complete(messages, effort=effort, stage="reflect")
    shown = "\n".join(m.content for m in messages)
    found = extract_skill(
        reply.text, shown.replace(inputs.skill.strip(), "") if inputs.skill.strip() else shown
    )
    edits = [] if found is None else diff_edits(inputs.skill, found[0])
    if found is not None and found[1]:  # a cut reply says nothing about the lines it did not reach
        edits = [e for e in edits if e.op != "delete"]
    failures = sum(1 for r in inputs.rollouts if not r.score.passed)
    return Patch(minibatch, edits, failures, proposal), reply, messages


Analyst = Callable[[ChatModel, AnalystInputs, int, Effort | None, int], tuple[Patch, Reply, list[Message]]]
ANALYSTS: dict[str, Analyst] = {"patch": reflect, "rewrite": reflect_rewrite}  # optimizer.edit_mode
