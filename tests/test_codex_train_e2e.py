"""`skillgrad train --backend codex_exec`: the REAL pinned Codex CLI as both roles through the scripted
Responses API, from v0000 to v0001; mixed runs with Claude Code in the other role; a skill trained on
one harness evaluated on the other (`skillgrad eval --target-backend ...`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests import e2e_config
from tests import test_claude_code_train_e2e as claude_e2e
from tests.e2e_config import capitals_data, one_epoch_lines, qa_lines
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.codex_cli import require_codex_cli
from tests.fakes.responses_server import Reply, ResponsesRequest, ScriptedResponses, message, shell

CAPITALS = claude_e2e.CAPITALS
GOOD_RULE = claude_e2e.GOOD_RULE
SKILL_NAME = claude_e2e.SKILL_NAME
FAKE_KEY = "sk-FAKE-codex-e2e-0123456789abcdef"

pytestmark = pytest.mark.slow


def is_analyst(request: ResponsesRequest) -> bool:
    return "You improve a SKILL document" in request.developer_text


def handler(request: ResponsesRequest) -> Reply:
    """Optimizer: one edit. Target: `cat task.md`, then an answer whose form the skill decides."""
    if request.json_schema is not None:
        edit = {"op": "add", "target": "", "content": GOOD_RULE, "rationale": "answers carry extra words"}
        return Reply([message(json.dumps({"edits": [edit]}))], usage=(300, 40))
    if not request.tool_outputs:
        return Reply([message("Reading the task."), shell("cat task.md")])
    country = request.tool_outputs[-1].split("capital of ")[1].split("?")[0]
    city = CAPITALS[country]
    if GOOD_RULE in json.dumps(request):  # the installed skill's body reached the model
        return Reply([message(city)], usage=(50, 3))
    return Reply([message(f"I believe the capital of {country} is probably {city}.")], usage=(50, 12))


def write_config(tmp_path: Path, extra: list[str]) -> Path:
    lines = [
        *qa_lines(capitals_data(tmp_path, CAPITALS), 2),
        "skill:", f"  name: {SKILL_NAME}",
        "model:", f"  api_key: {FAKE_KEY}", f"  codex_cli_path: {require_codex_cli()}",
        "  codex_timeout_s: 120", "  claude_code_timeout_s: 120", "  timeout_s: 120", *extra,
        *one_epoch_lines(2, tmp_path / "cache"),
    ]  # fmt: skip
    return e2e_config.write_config(tmp_path, lines)


def skillgrad(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "skillgrad.cli", *args], capture_output=True, text=True, timeout=280
    )


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def assert_trained(out: Path, proc: subprocess.CompletedProcess[str]) -> None:
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = read_json(out / "summary.json")
    assert summary["baseline_val_score"] < 1.0 == summary["best_val_score"]
    assert summary["accepted"] == 1 and summary["best_version"] == "v0001"
    assert GOOD_RULE in (out / "skills" / "v0001.md").read_text(encoding="utf-8")
    for path in out.rglob("*"):
        if path.is_file():
            body = path.read_bytes().decode("utf-8")  # every file is UTF-8
            if path.suffix == ".json":
                json.loads(body)
            elif path.suffix == ".jsonl":
                [json.loads(line) for line in body.splitlines()]
            assert FAKE_KEY not in body


def test_train_with_codex_as_both_roles(tmp_path: Path) -> None:
    with ScriptedResponses(handler) as api:
        out = tmp_path / "run"
        config = write_config(tmp_path, [f"  base_url: {api.base_url}", "  target_model: gpt-5.5"])
        proc = skillgrad("train", "--config", str(config), "--out", str(out), "--backend", "codex_exec")
        analyst = [r for r in api.requests if is_analyst(r)]
    assert_trained(out, proc)
    config_json = read_json(out / "config.json")
    assert config_json["model"]["optimizer_backend"] == config_json["model"]["target_backend"] == "codex_exec"
    # one trace_steps.txt, trace.json and raw transcript per rollout: 2 baseline + 2 train + 2 candidate
    traces = sorted(out.rglob("trace_steps.txt"))
    assert len(traces) == 6 and not list(out.rglob("claude_trace_steps.txt"))
    for trace in traces:
        content = trace.read_text(encoding="utf-8")
        assert "[tool_call exec_command] cat task.md" in content and "What is the capital of" in content
        steps = read_json(trace.parent / "trace.json")
        assert [s["kind"] for s in steps] == ["text", "tool_call", "tool_result", "text"]
        events = [json.loads(line) for line in (trace.parent / "transcript.jsonl").read_text().splitlines()]
        assert events[-1]["type"] == "turn.completed"
    assert (out / "steps/0001/rollouts/train").is_dir()
    # the analyst saw the Codex trace section and answered through --output-schema
    assert len(analyst) == 1 and analyst[0].json_schema is not None
    assert (
        "#### Codex Trace Steps" in analyst[0].prompt and "#### Claude Trace Steps" not in analyst[0].prompt
    )
    assert "[tool_call exec_command] cat task.md" in analyst[0].prompt
    usage = read_json(out / "summary.json")["usage"]
    assert json.dumps(usage)  # tokens are counted from turn.completed; cost is unknown, never invented


def test_trace_gate_hides_codex_traces(tmp_path: Path) -> None:
    with ScriptedResponses(handler) as api:
        out = tmp_path / "run"
        config = write_config(
            tmp_path,
            [f"  base_url: {api.base_url}", "  target_model: gpt-5.5", "  trace_to_optimizer: false"],
        )
        proc = skillgrad("train", "--config", str(config), "--out", str(out), "--backend", "codex_exec")
        analyst = [r for r in api.requests if is_analyst(r)]
    assert_trained(out, proc)
    assert len(list(out.rglob("trace_steps.txt"))) == 6  # still written for the user
    assert analyst and "Trace Steps" not in analyst[0].prompt


def test_claude_target_codex_optimizer_then_transfer_to_codex(tmp_path: Path) -> None:
    with FakeAnthropic(claude_e2e.handler) as anthropic, ScriptedResponses(handler) as responses:
        out = tmp_path / "run"
        extra = [
            f"  target_base_url: {anthropic.base_url}",
            f"  optimizer_base_url: {responses.base_url}",
            "  target_model: claude-sonnet-4-5",
            "  optimizer_model: gpt-5.5",
        ]
        config = write_config(tmp_path, extra)
        proc = skillgrad(
            "train", "--config", str(config), "--out", str(out),
            "--target-backend", "claude_code_exec", "--optimizer-backend", "codex_exec",
        )  # fmt: skip
        analyst = [r for r in responses.requests if is_analyst(r)]
        assert_trained(out, proc)
        assert len(list(out.rglob("claude_trace_steps.txt"))) == 6
        assert analyst and "#### Claude Trace Steps" in analyst[0].prompt
        # the Claude-trained skill, measured on Codex
        eval_out = tmp_path / "eval"
        ev = skillgrad(
            "eval", "--config", str(config), "--skill", str(out / "best_skill.md"), "--split", "val",
            "--target-backend", "codex_exec", "--set", f"model.target_base_url={responses.base_url}",
            "--set", "model.target_model=gpt-5.5", "--out", str(eval_out),
        )  # fmt: skip
    assert ev.returncode == 0, ev.stderr[-3000:]
    report = read_json(eval_out / "eval.json")
    assert report["target_backend"] == "codex_exec" and report["mean_score"] == 1.0 and report["n"] == 2


def test_codex_target_claude_optimizer(tmp_path: Path) -> None:
    with FakeAnthropic(claude_e2e.handler) as anthropic, ScriptedResponses(handler) as responses:
        out = tmp_path / "run"
        extra = [
            f"  target_base_url: {responses.base_url}",
            f"  optimizer_base_url: {anthropic.base_url}",
            "  target_model: gpt-5.5",
            "  optimizer_model: claude-sonnet-4-5",
        ]
        proc = skillgrad(
            "train", "--config", str(write_config(tmp_path, extra)), "--out", str(out),
            "--target-backend", "codex_exec", "--optimizer-backend", "claude_code_exec",
        )  # fmt: skip
        analyst = [r for r in anthropic.message_requests if claude_e2e.is_optimizer(r)]
    assert_trained(out, proc)
    assert analyst and "#### Codex Trace Steps" in analyst[0].user_text()
