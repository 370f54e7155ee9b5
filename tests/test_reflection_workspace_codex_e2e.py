"""Issue 28 with the REAL pinned Codex CLI as the analyst (the target is the real Claude Code CLI
of tests/reflection_world.py), against the scripted Responses and Anthropic APIs: the analyst
greps the trace_full.txt a gap marker names with its shell, prints the lines around the hit with
`sed -n`, and proposes the edit that fixes the failure, which is accepted; with the digest it
cannot see the cause. Its read-only sandbox refuses writes, patches and the network, and the
tool-call and time bounds end a reflection with a clear error."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from skillgrad.backends.reading import ReadingBoundError, ReadingBounds
from skillgrad.backends.registry import make_chat
from skillgrad.config import Config
from skillgrad.evidence.opened import opened
from skillgrad.values import Message
from tests import e2e_config
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.codex_cli import require_codex_cli
from tests.fakes.responses_server import Reply, ResponsesRequest, ScriptedResponses, add_file, message, shell
from tests.reflection_world import (
    ANALYST_MARK,
    FAKE_KEY,
    GENERIC_RULE,
    OLD_FILE,
    claude_handler,
    codex_analyst_reply,
    config_lines,
)
from tests.test_reflection_workspace_claude_e2e import evidence_folder, no_leak, snapshot

pytestmark = pytest.mark.slow
SCHEMA = {"type": "object", "properties": {"edits": {"type": "array"}}, "required": ["edits"]}


def skillgrad(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "skillgrad.cli", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=280)


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def is_analyst(request: ResponsesRequest) -> bool:
    return ANALYST_MARK in request.developer_text


def test_the_codex_analyst_opens_the_hidden_step_and_its_edit_is_accepted(tmp_path: Path) -> None:
    with FakeAnthropic(claude_handler) as target, ScriptedResponses(codex_analyst_reply) as api:
        model = [
            f"  target_base_url: {target.base_url}", f"  optimizer_base_url: {api.base_url}",
            "  optimizer_model: gpt-5.5", "  target_model: claude-sonnet-4-5",
            f"  codex_cli_path: {require_codex_cli()}",
        ]  # fmt: skip
        config = str(e2e_config.write_config(tmp_path, config_lines(tmp_path, model, tmp_path / "cache")))
        roles = ["--target-backend", "claude_code_exec", "--optimizer-backend", "codex_exec"]
        runs, asked = {}, {}
        for name, mode in (("workspace", []), ("digest", ["--set", "optimizer.reflection=digest"])):
            before = len(api.requests)
            runs[name] = skillgrad("train", "--config", config, "--out", str(tmp_path / name), *roles, *mode)
            asked[name] = [r for r in api.requests[before:] if is_analyst(r)]
        served = len(api.requests) + len(target.requests)
        replay = skillgrad("train", "--config", config, "--out", str(tmp_path / "replay"), *roles)
        assert len(api.requests) + len(target.requests) == served  # the replay made no API call
    for proc in (runs["workspace"], runs["digest"], replay):
        assert proc.returncode == 0, proc.stderr[-3000:]
    out = tmp_path / "workspace"
    analyst = asked["workspace"]
    assert len(analyst) == 3 and "exec_command" in analyst[0].tool_names
    assert OLD_FILE not in analyst[0].prompt and "tasks/01/trace_full.txt lines " in analyst[0].prompt
    assert "## Your workspace: the evidence in full" in analyst[0].developer_text
    # the real CLI ran the shell in the workspace: the real grep and sed output went back to the API
    grep, lines = analyst[2].tool_outputs
    assert OLD_FILE in grep and f"# {OLD_FILE} (the list as of 1989)" in lines
    summary = read_json(out / "summary.json")
    assert summary["accepted"] == 1 and summary["best_val_score"] == 1.0
    assert OLD_FILE in (out / "best_skill.md").read_text(encoding="utf-8")
    record = read_json(out / "steps/0001/reflections/mb_00.json")
    assert [r["command"].split()[0] for r in record["opened"]] == ["grep", "sed"]
    trace = (out / "steps/0001/reflections/mb_00/tasks/01/trace_full.txt").read_text(encoding="utf-8")
    cause = next(
        n for n, line in enumerate(trace.splitlines(), 1) if f"# {OLD_FILE}" in line and "tool_result" in line
    )
    assert cause in record["opened"][0]["hits"][0]["lines"]
    start, end = record["opened"][1]["lines"]
    assert record["opened"][1]["path"] == "tasks/01/trace_full.txt" and start <= cause <= end
    assert record["session"] == {**record["session"], "tool_calls": 2, "turns": 3}
    # the digest: no shell, no pointer, no cause, a generic edit that is rejected
    digest = asked["digest"]
    assert (
        len(digest) == 1 and "exec_command" not in digest[0].tool_names and OLD_FILE not in digest[0].prompt
    )
    assert (
        read_json(tmp_path / "digest/steps/0001/reflections/mb_00.json")["edits"][0]["content"]
        == GENERIC_RULE
    )
    assert read_json(tmp_path / "digest/summary.json")["accepted"] == 0
    assert read_json(tmp_path / "replay/steps/0001/reflections/mb_00.json")["opened"] == record["opened"]
    for folder in ("cache", "workspace/steps", "replay/steps"):
        assert no_leak(tmp_path / folder, FAKE_KEY) > 0


def codex_reader(api: ScriptedResponses) -> Config:
    cfg = Config()
    cfg.model.backend = "codex_exec"
    cfg.model.codex_cli_path = str(require_codex_cli())
    cfg.model.base_url = api.base_url
    cfg.model.api_key = FAKE_KEY  # type: ignore[assignment]
    cfg.model.optimizer_model = "gpt-5.5"
    cfg.model.max_retries = 0
    return cfg


MESSAGES = [Message("system", ANALYST_MARK), Message("user", "Find the cause.")]


def test_the_read_only_sandbox_refuses_writes_patches_and_the_network(tmp_path: Path) -> None:
    folder, secret = evidence_folder(tmp_path)
    before = snapshot(folder)
    port: list[str] = []

    def handler(request: ResponsesRequest) -> Reply:
        attempts = [
            shell("echo rewritten > tasks/01/trace_full.txt; touch made.txt"),
            add_file("planted.txt", "hi"),
            shell(f"curl -sS -m 3 http://127.0.0.1:{port[0]}/v1/responses -d x"),
            shell("grep -n cause tasks/01/trace_full.txt"),
        ]
        done = len(request.tool_outputs)
        if done < len(attempts):
            return Reply([attempts[done]])
        return Reply([message(json.dumps({"edits": ["the cause"]}))])

    with ScriptedResponses(handler) as api:
        port.append(api.base_url.split(":")[2].split("/")[0])
        chat = make_chat(codex_reader(api), "optimizer")
        found = chat.investigate(
            MESSAGES, folder=folder, bounds=ReadingBounds(10, 120), schema=SCHEMA, stage="reflect"
        )  # type: ignore[attr-defined]
        outputs = api.requests[-1].tool_outputs
        served = len(api.requests)
    assert found.reply.data == {"edits": ["the cause"]}  # the reflection completed
    assert (
        snapshot(folder) == before
        and not (folder / "made.txt").exists()
        and not (folder / "planted.txt").exists()
    )
    assert "Read-only file system" in outputs[0]
    assert "read-only sandbox" in outputs[1]  # apply_patch rejected
    assert "Couldn't connect" in outputs[2] or "Failed to connect" in outputs[2]  # no network
    assert served == 5  # the curl never reached the API
    assert "2:2. [text] the cause" in outputs[3]
    records = opened(found.tool_uses, folder)
    assert records[-1]["hits"] == [{"path": "tasks/01/trace_full.txt", "lines": [2]}]
    assert secret.read_text() == "api_key: outside-the-workspace\n"


def test_the_tool_call_and_time_bounds_end_the_call_with_a_clear_error(tmp_path: Path) -> None:
    folder, _ = evidence_folder(tmp_path)

    def loops(request: ResponsesRequest) -> Reply:
        return Reply([shell("cat tasks/01/trace_full.txt")], usage=(100, 10))

    with ScriptedResponses(loops) as api:
        chat = make_chat(codex_reader(api), "optimizer")
        with pytest.raises(ReadingBoundError) as calls:
            chat.investigate(
                MESSAGES, folder=folder, bounds=ReadingBounds(2, 120), schema=SCHEMA, stage="reflect"
            )  # type: ignore[attr-defined]
    message_text = str(calls.value)
    assert (
        "used its 2 tool calls (optimizer.reflection_turns)" in message_text
        and "raise optimizer.reflection_turns" in message_text
    )
    assert len(calls.value.spent.tool_uses) == 3  # stopped as it started the third

    def slow(request: ResponsesRequest) -> Reply:
        return Reply([shell("cat tasks/01/trace_full.txt")], delay_s=2.5)

    with ScriptedResponses(slow) as api:
        chat = make_chat(codex_reader(api), "optimizer")
        started = time.monotonic()
        with pytest.raises(ReadingBoundError, match=r"optimizer.reflection_timeout_s=4s"):
            chat.investigate(
                MESSAGES, folder=folder, bounds=ReadingBounds(50, 4), schema=SCHEMA, stage="reflect"
            )  # type: ignore[attr-defined]
        assert time.monotonic() - started < 20
