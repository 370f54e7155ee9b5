"""`skillgrad train --backend claude_code_exec`: the REAL Claude Code CLI as both roles, through the
scripted fake Anthropic API. The target invokes its skill, reads task.md with Bash and answers; the
optimizer returns its edits as structured output."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests import e2e_config
from tests.e2e_config import capitals_data, one_epoch_lines, qa_lines
from tests.fakes.anthropic_server import FakeAnthropic, FakeReply, FakeRequest, text, tool_use

CAPITALS = {"France": "Paris", "Japan": "Tokyo", "Italy": "Rome", "Spain": "Madrid"}
GOOD_RULE = "Reply with only the answer span, no sentence around it."
SKILL_NAME = "capitals"
FAKE_KEY = "sk-ant-FAKE-e2e-0123456789abcdef"


def is_optimizer(req: FakeRequest) -> bool:
    return "You improve a SKILL document" in req.system_text()


def target_turn(req: FakeRequest) -> FakeReply:
    """Skill first, then `cat task.md`, then the answer; the skill decides the answer's form."""
    results = req.tool_results()
    if not results:
        return tool_use("Skill", {"skill": SKILL_NAME}, say="Loading my skill.")
    if len(results) == 1:
        return tool_use("Bash", {"command": "cat task.md", "description": "read the task"})
    country = results[-1]["text"].split("capital of ")[1].split("?")[0]
    city = CAPITALS[country]
    if GOOD_RULE in json.dumps(req.body):  # the skill body reached the conversation
        return text(city, input_tokens=50, output_tokens=3)
    return text(f"I believe the capital of {country} is probably {city}.", input_tokens=50, output_tokens=12)


def handler(req: FakeRequest) -> FakeReply:
    if is_optimizer(req):
        edit = {"op": "add", "target": "", "content": GOOD_RULE, "rationale": "answers carry extra words"}
        return tool_use("StructuredOutput", {"edits": [edit]}, input_tokens=300, output_tokens=40)
    if "Bash" in req.tool_names():
        return target_turn(req)
    return text("aux")


def write_config(tmp_path: Path, api: FakeAnthropic) -> Path:
    lines = [
        *qa_lines(capitals_data(tmp_path, CAPITALS), 2),
        "skill:", f"  name: {SKILL_NAME}",
        "model:", f"  base_url: {api.base_url}", f"  api_key: {FAKE_KEY}",
        "  optimizer_model: claude-sonnet-4-5", "  target_model: claude-sonnet-4-5",
        "  claude_code_timeout_s: 120", "  timeout_s: 120",
        *one_epoch_lines(2, tmp_path / "cache"),
    ]  # fmt: skip
    return e2e_config.write_config(tmp_path, lines)


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.slow
def test_train_with_claude_code_as_both_roles(tmp_path: Path) -> None:
    with FakeAnthropic(handler) as api:
        out = tmp_path / "run"
        cmd = [sys.executable, "-m", "skillgrad.cli", "train", "--config", str(write_config(tmp_path, api))]
        cmd += ["--out", str(out), "--backend", "claude_code_exec"]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=280)
        analyst = [r for r in api.message_requests if is_optimizer(r)]
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert not api.handler_errors
    summary = read_json(out / "summary.json")
    assert summary["baseline_val_score"] < 1.0 == summary["best_val_score"]
    assert summary["accepted"] == 1 and summary["best_version"] == "v0001"
    assert GOOD_RULE in (out / "skills" / "v0001.md").read_text(encoding="utf-8")
    config = read_json(out / "config.json")
    assert config["model"]["optimizer_backend"] == config["model"]["target_backend"] == "claude_code_exec"
    assert read_json(out / "steps" / "0001" / "merged_patch.json")["selected"][0]["content"] == GOOD_RULE
    # one claude_trace_steps.txt (and raw transcript) per rollout: 2 baseline + 2 train + 2 candidate
    traces = sorted(out.rglob("claude_trace_steps.txt"))
    assert len(traces) == 6
    for trace in traces:
        content = trace.read_text(encoding="utf-8")
        assert "[tool_call Skill]" in content and "[tool_call Bash] cat task.md" in content
        assert "What is the capital of" in content
    # the analyst saw the trace section, Claude Code ran it with the stage's schema
    assert analyst and "#### Claude Trace Steps" in analyst[0].user_text()
    assert analyst[0].structured_schema() is not None
    for path in out.rglob("*"):
        if path.is_file():
            body = path.read_bytes().decode("utf-8")  # every file is UTF-8
            if path.suffix == ".json":
                json.loads(body)
            elif path.suffix == ".jsonl":
                [json.loads(line) for line in body.splitlines()]
            assert FAKE_KEY not in body
