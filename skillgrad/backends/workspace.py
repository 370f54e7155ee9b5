"""What every agent harness puts in a task's workspace: the skill as a SKILL.md with valid front
matter (a package: its whole folder), `task.md`, and `context.md` (never truncated). Only where the
skill goes differs per harness."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from skillgrad.package.install import install, main_file
from skillgrad.package.model import is_package
from skillgrad.templates import render
from skillgrad.values import Task

SKILL_DESCRIPTION = "Conventions and procedures for the tasks in this workspace. Use it for every task."
FRONT_MATTER = re.compile(r"\A---\s*\n(.*?)\n---\s*(?:\n|\Z)", re.DOTALL)


def skill_markdown(name: str, skill: str) -> str:
    """SKILL.md with valid front matter: our name, and the skill's own description when it has one."""
    body = skill
    description = SKILL_DESCRIPTION
    match = FRONT_MATTER.match(skill)
    if match:
        try:
            meta = yaml.safe_load(match.group(1))
        except yaml.YAMLError:
            meta = None
        if (
            isinstance(meta, dict)
            and isinstance(meta.get("description"), str)
            and meta["description"].strip()
        ):
            description = meta["description"]
        body = skill[match.end() :]
    description = " ".join(description.split())
    return render(
        "skillgrad.backends",
        "claude_code_skill",
        skill_name=name,
        description=json.dumps(description),
        body=body.strip() or "(No guidance yet.)",
    )


def install_skill(workspace: Path, skill: str, skill_name: str, skills_dir: str) -> Path:
    """Install the skill as `workspace/skills_dir/<name>/` (SKILL.md with valid front matter; a
    package: its whole folder). Returns the SKILL.md path."""
    skill_file = workspace / skills_dir / skill_name / "SKILL.md"
    markdown = skill_markdown(skill_name, main_file(skill))
    if is_package(skill):  # the whole folder: references and scripts beside SKILL.md
        install(skill_file.parent, skill, markdown)
    else:
        skill_file.parent.mkdir(parents=True, exist_ok=True)
        skill_file.write_text(markdown, encoding="utf-8")
    return skill_file


def prepare_workspace(workspace: Path, task: Task, skill: str, skill_name: str, skills_dir: str) -> Path:
    """Install the skill under `workspace/skills_dir/<name>/SKILL.md` and write the task files.
    Returns the SKILL.md path."""
    skill_file = install_skill(workspace, skill, skill_name, skills_dir)
    note = ""
    if task.context:
        (workspace / "context.md").write_text(task.context, encoding="utf-8")
        note = render("skillgrad.backends", "claude_code_context_note")
    task_text = render(
        "skillgrad.backends", "claude_code_task_file", question=task.question, context_note=note
    )
    (workspace / "task.md").write_text(task_text, encoding="utf-8")
    return skill_file
