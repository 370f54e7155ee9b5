"""A package as each kind of target gets it: installed as a folder (Claude Code, Codex) or
flattened into one system prompt (chat models).

Flattening: SKILL.md first, then every other text file that is not a script under a heading
`## File: <path>`, in path order; scripts and binary files are listed by path and size, not
inlined (a chat model cannot run them)."""

from __future__ import annotations

from pathlib import Path

from skillgrad.package.folder import write_package
from skillgrad.package.model import SKILL_FILE, SkillPackage, as_package, is_script
from skillgrad.templates import render

PROMPTS = "skillgrad.package"


def flatten(package: SkillPackage) -> str:
    references, listed = [], []
    for path in package.paths()[1:]:
        text = package.files.get(path)
        if text is not None and not is_script(path, text):
            references.append(render(PROMPTS, "flattened_file", path=path, text=text.strip()))
        else:
            size = f"{len(text)} chars" if text is not None else f"{len(package.binary[path])} bytes"
            listed.append(f"- {path} ({'script' if text is not None else 'binary'}, {size})")
    scripts = render(PROMPTS, "flattened_scripts", listing="\n".join(listed)) if listed else ""
    flat = render(
        PROMPTS,
        "flattened",
        skill_md=package.skill_md.strip(),
        references="".join(references),
        scripts=scripts,
    )
    return flat.strip() + "\n"


def skill_prompt_text(skill: str) -> str:
    """What a chat target's system prompt holds: a single-file skill as it is, a package flattened."""
    package = as_package(skill)
    return skill if package is None else flatten(package)


def install(folder: Path, skill: str, skill_md: str) -> None:
    """Install a package as `folder` (a harness's skills/<name>), SKILL.md given as `skill_md`
    (the front matter the harness needs)."""
    package = as_package(skill)
    assert package is not None, "install() takes a package; a single file is a SKILL.md"
    write_package(folder, package, skill_md=skill_md)


def main_file(skill: str) -> str:
    """The SKILL.md text of a skill text (a single-file skill is its own)."""
    package = as_package(skill)
    return skill if package is None else package.files[SKILL_FILE]
