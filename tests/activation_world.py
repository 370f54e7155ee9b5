"""The scripted world the activation tests share: a `capitals` skill whose initial description
never says "capital", queries that should load it (capital cities) and requests that should not
(the shipped distractors' kinds), and the rule the scripted models follow: a target loads the
skill only when its description names the word the failures point to, and the scripted optimizer
writes that word in once the analyst's prompt shows the missed capital-city requests."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tests import e2e_config

SKILL_NAME = "capitals"
INITIAL_DESCRIPTION = "Geography helper for facts about countries."
TRAINED_DESCRIPTION = (
    "Answers questions about the capital city of a country. Use for any capital-city question."
)
KEYWORD = "capital"
ANALYST_MARK = "You write the description of an agent skill"
COUNTRIES = [
    "France",
    "Japan",
    "Italy",
    "Spain",
    "Kenya",
    "Peru",
    "Egypt",
    "Chile",
    "Norway",
    "Ghana",
    "Cuba",
    "Iran",
]
NEGATIVES = [
    "Merge these two PDF files into one.",
    "Write a commit message for my staged changes.",
    "Plot monthly sales from sales.csv as a bar chart.",
    "Review this diff for security problems.",
    "Find the release date of Python 3.13 online.",
    "Fill in the tax form in form.pdf with my address.",
    "Rebase my feature branch onto main.",
    "Compute the median price per region in data.xlsx.",
]


def queries() -> list[dict[str, Any]]:
    positives = [{"query": f"What is the capital of {c}?", "should_trigger": True} for c in COUNTRIES]
    negatives = [{"query": q, "should_trigger": False} for q in NEGATIVES]
    return [{"id": f"t{i}", **row} for i, row in enumerate(positives + negatives)]


def write_skill(tmp_path: Path, description: str = INITIAL_DESCRIPTION) -> Path:
    path = tmp_path / "capitals.md"
    path.write_text(
        f"---\nname: {SKILL_NAME}\ndescription: {description}\n---\n\nAnswer with the city only.\n",
        encoding="utf-8",
    )
    return path


def write_triggers(tmp_path: Path) -> Path:
    return e2e_config.write_jsonl(tmp_path / "triggers.jsonl", queries())


def our_description(listing: str) -> str:
    """Our skill's description in a skill listing (`- capitals: ...`), as every harness shows it."""
    match = re.search(rf"^\s*-\s*{SKILL_NAME}:\s*(.*?)(?:\s*\(file: [^)]*\))?$", listing, re.MULTILINE)
    return match.group(1) if match else ""  # Codex adds `(file: r0/<name>/SKILL.md)`


def should_load(listing: str, query: str) -> bool:
    """The scripted target's rule: our skill for a capital-city request whose words its description has."""
    return KEYWORD in query.lower() and KEYWORD in our_description(listing).lower()


def analyst_reply(prompt: str) -> dict[str, str]:
    """The scripted optimizer: the missed requests point to the word the description lacks."""
    missed = prompt.split("but did not", 1)[1].split("##", 1)[0] if "but did not" in prompt else ""
    if KEYWORD in missed.lower():
        return {
            "rationale": "the missed requests all ask for a capital city",
            "description": TRAINED_DESCRIPTION,
        }
    return {"rationale": "nothing to change", "description": INITIAL_DESCRIPTION}


def description_config(tmp_path: Path, model_lines: list[str], *, repeats: int = 2) -> Path:
    lines = [
        "benchmark:",
        f"  triggers: {write_triggers(tmp_path)}",
        f"  trigger_repeats: {repeats}",
        "  trigger_split: [0.5, 0.25, 0.25]",
        "  seed: 1",
        "skill:",
        f"  init: {write_skill(tmp_path)}",
        f"  name: {SKILL_NAME}",
        "model:",
        *model_lines,
        "train:",
        "  epochs: 1",
        "  batch_size: 10",
        "  concurrency: 4",
        "optimizer:",
        "  target: description",
        "cache:",
        f"  dir: {tmp_path / 'cache'}",
    ]
    return e2e_config.write_config(tmp_path, lines)


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))
