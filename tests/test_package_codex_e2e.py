"""A skill package trained with the REAL pinned Codex CLI as target (scripted Responses API): the
whole folder is installed where Codex discovers repository skills (`.agents/skills/<name>/`), the
scripted agent reads the package's reference and calls the house CLI as it says, and the analyst
(Codex too, through --output-schema) fixes the reference."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from tests.fakes.codex_cli import require_codex_cli
from tests.fakes.responses_server import Reply, ResponsesRequest, ScriptedResponses, message, shell
from tests.test_codex_train_e2e import read_json, skillgrad
from tests.test_package_claude_code_e2e import NEW_LINE, OLD_LINE, STARTER, house_call

pytestmark = pytest.mark.slow
SKILL_NAME = "housecli"
FAKE_KEY = "sk-FAKE-codex-pkg-0123456789abcdef"
REFERENCE = f".agents/skills/{SKILL_NAME}/references/cli.md"


def handler(request: ResponsesRequest) -> Reply:
    if request.json_schema is not None:
        edit = {
            "op": "replace",
            "file": "references/cli.md",
            "target": OLD_LINE,
            "content": NEW_LINE,
            "rationale": "grams",
        }
        return Reply([message(json.dumps({"edits": [edit]}))], usage=(300, 40))
    outputs = request.tool_outputs
    if not outputs:
        return Reply([message("Reading the task."), shell("cat task.md")])
    if len(outputs) == 1:
        return Reply([shell(f"cat {REFERENCE}")])
    if len(outputs) == 2:
        return Reply([shell(house_call(outputs[0], outputs[1]))])
    found = re.search(r"quote (Q\S+)", outputs[-1])
    return Reply([message(found.group(1) if found else "no quote")], usage=(50, 3))


def test_package_trains_with_codex(tmp_path: Path) -> None:
    shutil.copytree(STARTER, tmp_path / "skill")
    with ScriptedResponses(handler) as api:
        lines = [
            "benchmark:", "  name: housecli", "  train_size: 2", "  val_size: 2", "  test_size: 0",
            "  seed: 3",
            "skill:", "  init: skill", f"  name: {SKILL_NAME}",
            "model:", "  backend: codex_exec", f"  base_url: {api.base_url}", f"  api_key: {FAKE_KEY}",
            f"  codex_cli_path: {require_codex_cli()}", "  codex_timeout_s: 120", "  timeout_s: 120",
            "  target_model: gpt-5.5",
            "train:", "  epochs: 1", "  batch_size: 2", "  minibatch_size: 2", "  concurrency: 2",
            "optimizer:", "  learning_rate: 2", "  min_learning_rate: 1",
            "cache:", f"  dir: {tmp_path / 'cache'}",
        ]  # fmt: skip
        config = tmp_path / "config.yaml"
        config.write_text("\n".join(lines) + "\n", encoding="utf-8")
        out = tmp_path / "run"
        proc = skillgrad("train", "--config", str(config), "--out", str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = read_json(out / "summary.json")
    assert summary["baseline_val_score"] == 0.0 and summary["best_val_score"] == 1.0
    assert NEW_LINE in (out / "skills" / "v0001" / "references" / "cli.md").read_text(encoding="utf-8")
    workspaces = [p for p in out.rglob("workspace") if p.is_dir()]
    assert len(workspaces) == 6
    for workspace in workspaces:
        installed = workspace / ".agents" / "skills" / SKILL_NAME
        assert (installed / "SKILL.md").is_file() and (installed / "references" / "cli.md").is_file()
    traces = "".join(p.read_text(encoding="utf-8") for p in out.rglob("trace_steps.txt"))
    assert f"[tool_call exec_command] cat {REFERENCE}" in traces
