"""`optimizer.target: description` with the REAL Claude Code CLI as target and optimizer, through
the scripted Anthropic API. The skill is installed among the shipped distractors and not named;
the scripted model calls the `Skill` tool for it only when its description (in the CLI's skill
listing) has the word the missed requests point to, which the scripted optimizer writes in."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests import activation_world as world
from tests.fakes.anthropic_server import FakeAnthropic, FakeReply, FakeRequest, text, tool_use

FAKE_KEY = "sk-ant-FAKE-activation-0123456789"
LISTING = "The following skills are available for use with the Skill tool"

pytestmark = pytest.mark.slow


def _blocks(req: FakeRequest) -> list[str]:
    first = next((m for m in req.messages if m.get("role") == "user"), {})
    content = first.get("content")
    if isinstance(content, str):
        return [content]
    return [b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"]


def query_of(req: FakeRequest) -> str:
    """The session's prompt: the first user message's text that is not a system reminder."""
    return next((b for b in reversed(_blocks(req)) if not b.lstrip().startswith("<system-reminder>")), "")


def listing_of(req: FakeRequest) -> str:
    return next((b for b in _blocks(req) if LISTING in b), "")


def handler(req: FakeRequest) -> FakeReply:
    if world.ANALYST_MARK in req.system_text():
        return tool_use(
            "StructuredOutput", world.analyst_reply(req.user_text()), input_tokens=400, output_tokens=40
        )
    if "Skill" not in req.tool_names():
        return text("aux")
    if req.tool_results():  # the skill is loaded: its body says to answer with the city only
        return text("Paris", input_tokens=60, output_tokens=2)
    if world.should_load(listing_of(req), query_of(req)):
        return tool_use("Skill", {"skill": world.SKILL_NAME}, say="This is a capital-city question.")
    return text("I can help with that directly.", input_tokens=60, output_tokens=8)


def model_lines(api: FakeAnthropic) -> list[str]:
    return [
        f"  base_url: {api.base_url}",
        f"  api_key: {FAKE_KEY}",
        "  target_model: claude-sonnet-4-5",
        "  optimizer_model: claude-sonnet-4-5",
        "  claude_code_timeout_s: 120",
    ]


def test_description_training_with_claude_code(tmp_path: Path) -> None:
    with FakeAnthropic(handler) as api:
        config = world.description_config(tmp_path, model_lines(api))
        out = tmp_path / "run"
        cmd = [sys.executable, "-m", "skillgrad.cli", "train", "--config", str(config), "--out", str(out)]
        proc = subprocess.run(
            [*cmd, "--backend", "claude_code_exec"], capture_output=True, text=True, timeout=280
        )
        targets = [r for r in api.message_requests if "Skill" in r.tool_names()]
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert not api.handler_errors
    summary = world.read_json(out / "summary.json")
    assert summary["baseline_val_score"] < summary["best_val_score"] == 1.0  # trigger F1 on val
    assert summary["test"]["baseline"] < summary["test"]["best"] == 1.0  # and on test
    assert summary["best_version"] == "v0001"
    # the installed description is the trained one, beside the distractors, in the best skill's test
    skills = next((out / "test" / "v0001").glob("*/workspace/.claude/skills"))
    assert json.dumps(world.TRAINED_DESCRIPTION) in (skills / "capitals" / "SKILL.md").read_text()
    assert {p.name for p in skills.iterdir()} >= {"capitals", "pdf-forms", "git-workflow", "web-research"}
    assert any(world.TRAINED_DESCRIPTION in listing_of(r) for r in targets)
    # the skill is never named: each session's prompt is the request itself
    assert targets and all(query_of(r) in {q["query"] for q in world.queries()} for r in targets)
    # loading it is read from the trace: a Skill tool call in a positive query's trace
    traces = [p.read_text() for p in (out / "test" / "v0001").glob("*/claude_trace_steps.txt")]
    assert any("[tool_call Skill] capitals" in t for t in traces)
    gate = world.read_json(out / "steps" / "0001" / "gate.json")
    assert gate["accepted"] and gate["gate"] == "paired"
    for path in out.rglob("*"):
        if path.is_file() and "workspace" not in path.parts:
            assert FAKE_KEY not in path.read_text(encoding="utf-8", errors="replace")
