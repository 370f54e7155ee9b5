"""Minibatch reflection: analyst prompts (skill, tasks, answers, scores, feedback, traces) -> patches."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from typing import Any

from skillgrad.backends.interface import ChatModel
from skillgrad.demos import EXAMPLE_OPS, entry_task
from skillgrad.loop.example_edits import ExampleOffer
from skillgrad.loop.misses import contrasts_section, misses_section, pick_contrasts
from skillgrad.loop.patch_merge import Patch
from skillgrad.loop.shapes import form_summary
from skillgrad.package.model import as_package
from skillgrad.package.prompt import package_schema, package_targets, package_view
from skillgrad.skilldoc import END_ANCHOR, Edit, edit_targets
from skillgrad.templates import render
from skillgrad.traces.steps import TraceCaps
from skillgrad.traces.view import Locator, render_view
from skillgrad.values import Effort, Message, Reply, Rollout

PROMPTS = "skillgrad.loop"
ANALYST_CONTEXT_CHARS = 1500  # the analyst needs the gist of long contexts, the agent gets all of it


def trace_heading(harness: str) -> str:
    """The analyst's heading over one task's trace steps; it names the harness that made them."""
    return f"#### {harness} Trace Steps"


TRACE_HEADING = trace_heading("Claude")  # Claude Code's, the default


def _edit_variant(op: str, targets: list[str], content: dict[str, Any]) -> dict[str, Any]:
    # Property order is generation order for constrained decoders: the rule first, so the
    # choice of where it goes is conditioned on what it says.
    return {
        "type": "object",
        "properties": {
            "content": content,
            "op": {"type": "string", "enum": [op]},
            "target": {"type": "string", "enum": targets},
            "rationale": {"type": "string"},
        },
        "required": ["content", "op", "target", "rationale"],
        "additionalProperties": False,
    }


def _example_variant(op: str, properties: dict[str, Any]) -> dict[str, Any]:
    # The op first: the model commits to an example edit, then names its task.
    properties = {"op": {"type": "string", "enum": [op]}, **properties, "rationale": {"type": "string"}}
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def example_variants(offer: ExampleOffer) -> list[dict[str, Any]]:
    """The example edits of the reply schema: add a named task, replace or remove a held one."""
    tasks = {"type": "string", "enum": [task_id for task_id, _ in offer.tasks]}
    held = {"type": "string", "enum": list(offer.held)}
    variants = [_example_variant("add_example", {"task": tasks})] if offer.can_add else []
    if offer.held:
        if offer.tasks:
            variants.append(_example_variant("replace_example", {"target": held, "task": tasks}))
        variants.append(_example_variant("remove_example", {"target": held}))
    return variants


def with_example_variants(schema: dict[str, Any], offer: ExampleOffer | None) -> dict[str, Any]:
    """`schema` whose edits may also be the example edits `offer` allows."""
    if offer is None:
        return schema
    item = schema["properties"]["edits"]["items"]
    variants = [*item.get("anyOf", [item]), *example_variants(offer)]
    edits = {**schema["properties"]["edits"], "items": {"anyOf": variants}}
    return {**schema, "properties": {**schema["properties"], "edits": edits}}


def patch_schema(skill: str, max_edits: int) -> dict[str, Any]:
    """The analyst's reply schema for this skill. Only edits that can apply are expressible: a
    replace/delete targets one of the skill's current lines, an add anchors on one of them or
    on "end" ("" is accepted as "end"); an empty skill offers add only."""
    lines = edit_targets(skill)
    rule = {"type": "string", "minLength": 1}
    variants = [_edit_variant("add", list(dict.fromkeys([*lines, END_ANCHOR, ""])), rule)]
    if lines:
        variants.append(_edit_variant("replace", lines, rule))
        variants.append(_edit_variant("delete", lines, {"type": "string", "maxLength": 0}))
    item = variants[0] if len(variants) == 1 else {"anyOf": variants}
    return {
        "type": "object",
        "properties": {"edits": {"type": "array", "items": item, "maxItems": max_edits}},
        "required": ["edits"],
    }


@dataclass(frozen=True)
class AnalystInputs:
    skill: str
    rollouts: list[Rollout]
    rejected: list[Edit]
    max_edits: int
    include_traces: bool
    caps: TraceCaps
    trace_budget: int = 12000  # characters shared by every trace section of one prompt
    trace_heading: str = TRACE_HEADING
    package_chars: int = 12000  # a package's files shown in full (skill.prompt_chars)
    budget: int | None = None  # the skill's size budget (skill.max_chars), stated when set
    shape_example: bool = True  # show the one edit from another domain (optimizer.shape_example)
    # per rollout, where its full trace can be read (a reflection workspace): gap markers say so
    locators: tuple[Locator | None, ...] = ()
    batch: tuple[Rollout, ...] = ()  # the step's rollouts, counted and contrasted (default: these)
    census: bool = False  # the step's answers counted by kind of miss (optimizer.error_census)
    contrasts: int = 0  # passed/failed pairs of one answer shape (optimizer.contrasts)
    form: bool = False  # the step's answers against their expected form (optimizer.form_summary)
    examples: ExampleOffer | None = None  # the example edits it may propose (skill.max_examples)


def trace_sections(inputs: AnalystInputs) -> list[str]:
    """Each task's trace section, all of them within `inputs.trace_budget` together.

    Failed tasks are sized first and get twice a passed task's share of what is left; what one
    view does not use flows to the next. No view is larger than `caps.total_chars`."""
    sections = [""] * len(inputs.rollouts)
    if not inputs.include_traces:
        return sections
    order = sorted(range(len(inputs.rollouts)), key=lambda i: (inputs.rollouts[i].score.passed, i))
    weights = {i: 1 if inputs.rollouts[i].score.passed else 2 for i in order}
    remaining = inputs.trace_budget
    for position, i in enumerate(order):
        left = sum(weights[j] for j in order[position:])
        heading = f"{inputs.trace_heading}\n"
        share = remaining * weights[i] // left - len(heading) - 1
        locate = inputs.locators[i] if i < len(inputs.locators) else None
        trace, budget = inputs.rollouts[i].result.trace, min(share, inputs.caps.total_chars)
        view = render_view(trace, inputs.caps, budget, locate)
        sections[i] = f"{heading}{view or '(no steps)'}\n" if share > len("(no steps)") else ""
        remaining -= len(sections[i])
    return sections


def _task_block(index: int, rollout: Rollout, inputs: AnalystInputs, trace: str) -> str:
    task, score = rollout.task, rollout.score
    context = task.context or ""
    if len(context) > ANALYST_CONTEXT_CHARS:
        context = (
            context[:ANALYST_CONTEXT_CHARS] + f" [... {len(context) - ANALYST_CONTEXT_CHARS} more chars]"
        )
    return render(
        PROMPTS,
        "analyst_task",
        index=index,
        status="PASSED" if score.passed else "FAILED",
        score=f"{score.value:.2f}",
        question=task.question.strip(),
        context_line=f"Context: {context}\n" if context else "",
        answer=rollout.result.answer.strip() or "(empty)",
        expected=" | ".join(task.answers) if task.answers else "(see feedback)",
        feedback=score.feedback.strip() or "(none)",
        trace_section=trace,
    )


def targets_section(skill: str, budget: int | None = None) -> str:
    package = as_package(skill)
    if package is not None:
        return package_targets(package, budget)
    lines = edit_targets(skill)
    if not lines:  # "empty" only where it is: a skill of examples alone shows them above
        return render(PROMPTS, "analyst_targets_closed" if skill.strip() else "analyst_targets_empty")
    listed = "\n".join(json.dumps(t, ensure_ascii=False) for t in lines)
    section = render(PROMPTS, "analyst_targets", lines=listed)
    return (
        section if budget is None else f"{section}\nSize budget: at most {budget} chars (now {len(skill)}).\n"
    )


def evidence_section(inputs: AnalystInputs) -> str:
    """The step's misses counted by kind and the contrasts, as the analyst reads them after the tasks."""
    batch = list(inputs.batch) or inputs.rollouts
    counted = misses_section(batch, inputs.rollouts) if inputs.census else ""
    pairs = pick_contrasts(inputs.rollouts, batch, inputs.contrasts)
    return "\n".join(part for part in (counted, contrasts_section(pairs, inputs.rollouts)) if part)


def examples_section(offer: ExampleOffer | None) -> str:
    if offer is None:
        return ""
    tasks = ", ".join(
        f"{json.dumps(task_id, ensure_ascii=False)} ({label})" for task_id, label in offer.tasks
    )
    held = ", ".join(json.dumps(task_id, ensure_ascii=False) for task_id in offer.held)
    return render(
        PROMPTS,
        "analyst_examples",
        count=len(offer.held),
        max=offer.max_examples,
        tasks=tasks or "(none)",
        held=held or "(none)",
    )


def shown_edit(edit: Edit) -> dict[str, Any]:
    """An edit as a later analyst reads it: an example edit by the task it names, not its entry."""
    if edit.op not in EXAMPLE_OPS:
        return edit.to_json()
    shown = {"op": edit.op, **({"target": edit.target} if edit.target else {})}
    return shown if edit.op == "remove_example" else {**shown, "task": entry_task(edit.content)}


def prompt_sections(inputs: AnalystInputs) -> dict[str, object]:
    """The parts of the user prompt that the patch and rewrite analysts share."""
    failed = sum(1 for r in inputs.rollouts if not r.score.passed)
    traces = trace_sections(inputs)
    tasks = "\n".join(
        _task_block(i, r, inputs, trace)
        for i, (r, trace) in enumerate(zip(inputs.rollouts, traces, strict=True), 1)
    )
    rejected = ""
    if inputs.rejected:
        lines = "\n".join(json.dumps(shown_edit(e), ensure_ascii=False) for e in inputs.rejected)
        rejected = render(PROMPTS, "analyst_rejected", edits=lines)
    package = as_package(inputs.skill)
    skill = inputs.skill.strip() or "(the skill is empty)"
    if package is not None:
        skill = package_view(package, inputs.rollouts, inputs.package_chars, inputs.budget)
    return {
        "skill": skill,
        "n_failed": failed,
        "n_passed": len(inputs.rollouts) - failed,
        "tasks": tasks,
        "form": form_summary(list(inputs.batch) or inputs.rollouts, inputs.rollouts) if inputs.form else "",
        "examples": examples_section(inputs.examples),
        "evidence": evidence_section(inputs),
        "rejected": rejected,
        "max_edits": inputs.max_edits,
    }


def tidy_messages(system: str, user: str) -> list[Message]:
    # Optional sections leave blank-line runs behind; collapse them so the prompt stays tidy.
    return [Message("system", system), Message("user", re.sub(r"\n{3,}", "\n\n", user))]


def analyst_messages(inputs: AnalystInputs) -> list[Message]:
    targets = targets_section(inputs.skill, inputs.budget)
    user = render(PROMPTS, "analyst_user", targets=targets, **prompt_sections(inputs))
    example = render(PROMPTS, "analyst_example") if inputs.shape_example else ""
    return tidy_messages(render(PROMPTS, "analyst_system", max_edits=inputs.max_edits, example=example), user)


def parse_patch(data: dict[str, Any] | None, minibatch: int, failures: int, max_edits: int) -> Patch:
    """Schema-valid reply -> Patch; edits beyond `max_edits` or malformed ones are dropped."""
    edits: list[Edit] = []
    for raw in (data or {}).get("edits", [])[:max_edits]:
        try:
            edits.append(Edit.from_json(raw))
        except (ValueError, AttributeError):
            continue
    return Patch(minibatch, edits, failures)


def reflect(
    optimizer: ChatModel, inputs: AnalystInputs, minibatch: int, effort: Effort | None, proposal: int = 0
) -> tuple[Patch, Reply, list[Message]]:
    messages = analyst_messages(inputs)
    package = as_package(inputs.skill)
    schema = with_example_variants(
        patch_schema(inputs.skill, inputs.max_edits)
        if package is None
        else package_schema(package, inputs.max_edits),
        inputs.examples,
    )
    reply = optimizer.complete(messages, schema=schema, effort=effort, stage="reflect")
    failures = sum(1 for r in inputs.rollouts if not r.score.passed)
    patch = parse_patch(reply.data, minibatch, failures, inputs.max_edits)
    return replace(patch, proposal=proposal), reply, messages


def reflection_record(
    index: int, minibatch: list[Rollout], messages: list[Message], reply: Reply, patch: Patch
) -> dict[str, Any]:
    """What one analyst saw and said, as stored in steps/NNNN/reflections/mb_NN.json."""
    return {
        "minibatch": index,
        "proposal": patch.proposal,
        "reask": patch.reask,
        "tasks": [r.task.id for r in minibatch],
        "prompt": [{"role": m.role, "content": m.content} for m in messages],
        "reply": reply.text,
        "edits": [e.to_json() for e in patch.edits],
    }
