"""What `skillgrad train --help` and `skillgrad eval --help` say above and below their flags: a
summary of what the command does and writes, and examples to copy (the README's and the guides'
commands). Kept apart from `cli.py`, which builds the parsers from these."""

from __future__ import annotations

import argparse
from typing import Any

TRAIN = {
    "description": """\
Train a skill (SKILL.md, or a skill package folder) against a benchmark: the target runs the
training tasks with the skill, the optimizer reads the scored runs and proposes edits, and an
edit is kept only when it raises the validation score. Everything the run does is written to its
run folder (--out), which a Ctrl-C or a crash leaves resumable. The closing lines give the scores
before and after, the best skill and the report command.""",
    "epilog": """\
examples:
  skillgrad train --config configs/quickstart.yaml --out runs/quickstart   # offline, the packaged model
  skillgrad train --config configs/quickstart.yaml --estimate              # its cost; spends nothing
  skillgrad train --config configs/qa.yaml --backend openai_chat --data my_items.jsonl
  skillgrad train --config configs/qa.yaml --set train.epochs=1 --set budget.max_usd=2
  skillgrad train --resume runs/quickstart                                 # continue where it stopped

An --out that holds a run is kept: the new run writes to OUT-2 (it says so). budget.max_usd refuses
a run whose estimate costs more, before it starts. Every config key: docs/reference/configuration.md.""",
}

EVAL = {
    "description": """\
Score one skill on one split of a benchmark: the target runs every task of the split with the
skill, and the mean score, the passed and failed tasks and each rollout are written to the output
folder (eval.json, rollouts/).""",
    "epilog": """\
examples:
  skillgrad eval --config configs/quickstart.yaml --skill runs/quickstart/best_skill.md
  skillgrad eval --config configs/quickstart.yaml --skill runs/quickstart/skills/v0000.md --split val
  skillgrad eval --config configs/qa.yaml --backend openai_chat --skill my_skill/ --out runs/eval-mine""",
}


def parser_kwargs(texts: dict[str, str]) -> dict[str, Any]:
    """add_parser's keywords for a command with `texts`: its line breaks kept as written."""
    return {**texts, "formatter_class": argparse.RawDescriptionHelpFormatter}
