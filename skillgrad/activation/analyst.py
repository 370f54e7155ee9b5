"""The description analyst: from the queries that failed to load the skill and those that loaded it
wrongly (with the other installed skills' descriptions), one rewritten description.

It is an `Analyst` (loop.rewrite) like the patch and rewrite analysts, so reflection, merging,
selection, the rejected-edit buffer and the edit report apply unchanged; its reply is one
`replace` edit of the description's front-matter line. The reply schema bounds the description by
the Agent Skills limit (`skill.description_chars`, at most 1024) and forbids XML tags, so an
over-long description is never proposed (a reply past it is re-asked, then a failed reflection).
"""

from __future__ import annotations

import json
from typing import Any

from skillgrad.activation.description import (
    description_edit,
    description_of,
    description_tags,
    tags_removed,
    without_tags,
)
from skillgrad.activation.distractors import Distractor
from skillgrad.activation.triggers import should_trigger
from skillgrad.backends.interface import ChatModel
from skillgrad.loop.analyst_prompt import AnalystInputs, tidy_messages
from skillgrad.loop.patch_merge import Patch
from skillgrad.templates import render
from skillgrad.values import Effort, Message, Reply, Rollout

PROMPTS = "skillgrad.activation"
MIN_DESCRIPTION_CHARS = 20
_CALLS_SHOWN = 3
_CALL_CHARS = 100


def description_schema(limit: int) -> dict[str, Any]:
    """The reply: a rationale, then the description within `limit` characters. A plain length
    bound, which constrained decoders enforce while they write (the local backend's llguidance
    does not bound a string that has a pattern, and refuses some patterns outright)."""
    return {
        "type": "object",
        "properties": {
            "rationale": {"type": "string", "maxLength": 400},
            "description": {"type": "string", "minLength": MIN_DESCRIPTION_CHARS, "maxLength": limit},
        },
        "required": ["rationale", "description"],
        "additionalProperties": False,
    }


def _what_it_did(rollout: Rollout) -> str:
    """The first tool calls of a harness session, so the analyst sees where the query went."""
    calls = [s for s in rollout.result.trace if s.kind == "tool_call"][:_CALLS_SHOWN]
    shown = "; ".join(f"{s.tool}: {' '.join(s.text.split())[:_CALL_CHARS]}" for s in calls)
    return f" (first tool calls: {shown})" if shown else ""


def _line(rollout: Rollout, traces: bool) -> str:
    query = json.dumps(" ".join(rollout.task.question.split()), ensure_ascii=False)
    detail = _what_it_did(rollout) if traces and not rollout.score.passed else ""
    return f"- {query}: {rollout.score.feedback}{detail}"


def _lines(rollouts: list[Rollout], traces: bool) -> str:
    return "\n".join(_line(r, traces) for r in rollouts) or "(none)"


def _rejected(inputs: AnalystInputs) -> str:
    tried = []
    for edit in inputs.rejected:
        _, _, value = edit.content.partition(":")
        try:
            tried.append(f"- {json.loads(value)}")
        except ValueError:
            continue
    return render(PROMPTS, "description_rejected", descriptions="\n".join(tried)) if tried else ""


class DescriptionAnalyst:
    """Analyst: `(optimizer, inputs, minibatch, effort, proposal) -> (Patch, Reply, messages)`."""

    def __init__(self, skill_name: str, distractors: list[Distractor], limit: int) -> None:
        self.skill_name = skill_name
        self.distractors = distractors
        self.limit = limit

    def messages(self, inputs: AnalystInputs) -> list[Message]:
        rollouts = inputs.rollouts
        missed = [r for r in rollouts if should_trigger(r.task) and not r.score.passed]
        wrong = [r for r in rollouts if not should_trigger(r.task) and not r.score.passed]
        right = [r for r in rollouts if r.score.passed]
        others = "\n".join(f"- {d.name}: {d.description}" for d in self.distractors) or "(none)"
        user = render(
            PROMPTS,
            "description_user",
            skill_name=self.skill_name,
            description=json.dumps(description_of(inputs.skill), ensure_ascii=False),
            others=others,
            n_missed=len(missed),
            missed=_lines(missed, inputs.include_traces),
            n_wrong=len(wrong),
            wrong=_lines(wrong, inputs.include_traces),
            n_right=len(right),
            right=_lines(right, False),
            rejected=_rejected(inputs),
        )
        return tidy_messages(render(PROMPTS, "description_system", limit=self.limit), user)

    def __call__(
        self,
        optimizer: ChatModel,
        inputs: AnalystInputs,
        minibatch: int,
        effort: Effort | None,
        proposal: int = 0,
    ) -> tuple[Patch, Reply, list[Message]]:
        messages = self.messages(inputs)
        reply = optimizer.complete(
            messages, schema=description_schema(self.limit), effort=effort, stage="reflect"
        )
        data = reply.data or {}
        proposed, rationale = str(data.get("description", "")), str(data.get("rationale", ""))
        if tags := description_tags(proposed):  # the edit report and the history say so
            rationale = f"{rationale} [skillgrad: {tags_removed(tags)}]"
        edit = description_edit(inputs.skill, without_tags(proposed), rationale)
        failures = sum(1 for r in inputs.rollouts if not r.score.passed)
        return Patch(minibatch, [edit] if edit else [], failures, proposal), reply, messages
