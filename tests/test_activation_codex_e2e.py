"""`optimizer.target: description` with the REAL pinned Codex CLI as target and optimizer, through
the scripted Responses API. The skill sits in `.agents/skills/` among the shipped distractors and
is not named in the prompt; the scripted model reads `.agents/skills/capitals/SKILL.md` only when
the description in the CLI's skill list has the word the missed requests point to."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests import activation_world as world
from tests.fakes.codex_cli import require_codex_cli
from tests.fakes.responses_server import Reply, ResponsesRequest, ScriptedResponses, message, shell

FAKE_KEY = "sk-FAKE-codex-activation-0123456789"
READ_SKILL = f"cat .agents/skills/{world.SKILL_NAME}/SKILL.md"

pytestmark = pytest.mark.slow


def handler(request: ResponsesRequest) -> Reply:
    if world.ANALYST_MARK in request.developer_text:
        return Reply([message(json.dumps(world.analyst_reply(request.prompt)))], usage=(400, 40))
    if request.tool_outputs:  # the skill was read: its body says to answer with the city only
        return Reply([message("Paris")], usage=(60, 2))
    if world.should_load(request.developer_text, request.prompt):
        return Reply([message("This is a capital-city question."), shell(READ_SKILL)])
    return Reply([message("I can help with that directly.")], usage=(60, 8))


def test_description_training_with_codex(tmp_path: Path) -> None:
    with ScriptedResponses(handler) as api:
        lines = [
            f"  base_url: {api.base_url}",
            f"  api_key: {FAKE_KEY}",
            f"  codex_cli_path: {require_codex_cli()}",
            "  target_model: gpt-5.5",
            "  codex_timeout_s: 120",
        ]
        config = world.description_config(tmp_path, lines)
        out = tmp_path / "run"
        cmd = [sys.executable, "-m", "skillgrad.cli", "train", "--config", str(config), "--out", str(out)]
        proc = subprocess.run([*cmd, "--backend", "codex_exec"], capture_output=True, text=True, timeout=280)
        targets = [r for r in api.requests if world.ANALYST_MARK not in r.developer_text]
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = world.read_json(out / "summary.json")
    assert summary["baseline_val_score"] < summary["best_val_score"] == 1.0  # trigger F1 on val
    assert summary["test"]["baseline"] < summary["test"]["best"] == 1.0  # and on test
    # the installed description is the trained one, beside the distractors
    skills = next((out / "test" / "v0001").glob("*/workspace/.agents/skills"))
    assert json.dumps(world.TRAINED_DESCRIPTION) in (skills / "capitals" / "SKILL.md").read_text()
    assert {p.name for p in skills.iterdir()} >= {"capitals", "pdf-forms", "data-analysis", "code-review"}
    assert any(world.TRAINED_DESCRIPTION in r.developer_text for r in targets)
    # never named: no `$capitals` mention; the prompt is the request itself
    assert targets and all(r.prompt in {q["query"] for q in world.queries()} for r in targets)
    traces = [p.read_text() for p in (out / "test" / "v0001").glob("*/trace_steps.txt")]
    assert any(f"[tool_call exec_command] {READ_SKILL}" in t for t in traces)
