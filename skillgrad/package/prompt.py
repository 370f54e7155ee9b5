"""The analyst's view of a skill package and its reply schema.

The prompt lists every file (size, first line), then shows in full SKILL.md and the files the
failing tasks touched (a Read or Bash call of the trace names their path), within
`skill.prompt_chars`; the schema lets each edit name its file, targets only that file's lines,
and offers `create` for a new file."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from skillgrad.package.doc import CREATE_SUFFIXES
from skillgrad.package.model import SKILL_FILE, SkillPackage
from skillgrad.skilldoc import END_ANCHOR, edit_targets
from skillgrad.templates import render
from skillgrad.values import Rollout

PROMPTS = "skillgrad.package"
FIRST_LINE_CHARS = 80


def touched_files(package: SkillPackage, rollouts: Sequence[Rollout]) -> list[str]:
    """Files of the package that the failing tasks' tool calls name, in first-touched order."""
    touched: dict[str, None] = {}
    for rollout in rollouts:
        if rollout.score.passed:
            continue
        for step in rollout.result.trace:
            if step.kind == "tool_call":
                for path in package.files:
                    if path != SKILL_FILE and path in step.text:
                        touched.setdefault(path, None)
    return list(touched)


def _first_line(text: str) -> str:
    """The first line that says something: past a front-matter block and blank lines."""
    lines = text.splitlines()
    if lines and lines[0].strip() == "---":
        end = next((i for i, ln in enumerate(lines[1:], 1) if ln.strip() == "---"), 0)
        lines = lines[end + 1 :]
    line = next((ln.strip() for ln in lines if ln.strip()), "")
    return line if len(line) <= FIRST_LINE_CHARS else line[: FIRST_LINE_CHARS - 3] + "..."


def package_view(
    package: SkillPackage, rollouts: Sequence[Rollout], prompt_chars: int, budget: int | None
) -> str:
    rows = []
    for path in package.paths():
        text = package.files.get(path)
        size = f"{len(text)} chars" if text is not None else f"{len(package.binary[path])} bytes, binary"
        first = json.dumps(_first_line(text), ensure_ascii=False) if text is not None else "(not editable)"
        rows.append(f"| {path} | {size} | {first} |")
    shown, left = [], prompt_chars
    for path in [SKILL_FILE, *touched_files(package, rollouts)]:
        block = render(PROMPTS, "analyst_package_file", path=path, text=package.files[path].strip())
        if path == SKILL_FILE or len(block) <= left:
            shown.append(block)
            left -= len(block)
    note = f" of a budget of {budget}" if budget is not None else ""
    return render(
        PROMPTS,
        "analyst_package_skill",
        n_files=len(rows),
        size=package.chars(),
        budget_note=note,
        table="\n".join(rows),
        shown="".join(shown),
    ).strip()


def package_targets(package: SkillPackage, budget: int | None) -> str:
    rule = ""
    if budget is not None:
        rule = f"\n- Size budget: the whole package stays within {budget} chars (now {package.chars()})."
    return render(
        PROMPTS,
        "analyst_package_targets",
        editable=", ".join(json.dumps(p) for p in package.files),
        suffixes="/".join(CREATE_SUFFIXES),
        budget_rule=rule,
    )


def _variant(
    op: str, file_enum: dict[str, Any], target: dict[str, Any], content: dict[str, Any]
) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "content": content,
            "op": {"type": "string", "enum": [op]},
            "file": file_enum,
            "target": target,
            "rationale": {"type": "string"},
        },
        "required": ["content", "op", "file", "target", "rationale"],
        "additionalProperties": False,
    }


def package_schema(package: SkillPackage, max_edits: int) -> dict[str, Any]:
    """Per text file: add (anchored on its lines or "end"), replace and delete (on its lines);
    and create (a new path)."""
    rule = {"type": "string", "minLength": 1}
    variants = []
    for path, text in package.files.items():
        lines = edit_targets(text)
        file_enum = {"type": "string", "enum": [path]}
        anchors = list(dict.fromkeys([*lines, END_ANCHOR, ""]))
        variants.append(_variant("add", file_enum, {"type": "string", "enum": anchors}, rule))
        if lines:
            variants.append(_variant("replace", file_enum, {"type": "string", "enum": lines}, rule))
            empty = {"type": "string", "maxLength": 0}
            variants.append(_variant("delete", file_enum, {"type": "string", "enum": lines}, empty))
    new_path = {"type": "string", "minLength": 1, "pattern": r"^[A-Za-z0-9_][A-Za-z0-9._/-]*$"}
    variants.append(_variant("create", new_path, {"type": "string", "maxLength": 0}, rule))
    return {
        "type": "object",
        "properties": {"edits": {"type": "array", "items": {"anyOf": variants}, "maxItems": max_edits}},
        "required": ["edits"],
    }
