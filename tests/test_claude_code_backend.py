"""claude_code_exec through the REAL bundled Claude Code CLI against a scripted fake Anthropic API.

Each test that starts the CLI is marked slow (seconds per run); they still run by default.
"""

from __future__ import annotations

import json
import os
import stat
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from skillgrad.backends import claude_code
from skillgrad.backends.interface import Message
from skillgrad.backends.registry import availability, make_agent, make_chat
from skillgrad.backends.workspace import skill_markdown
from skillgrad.benchmarks.contract import Task
from skillgrad.config import Config
from skillgrad.errors import StructuredOutputError
from tests.fakes.anthropic_server import FakeAnthropic, FakeReply, FakeRequest, http_error, text, tool_use

SCHEMA = {
    "type": "object",
    "properties": {"edits": {"type": "array", "items": {"type": "string"}}},
    "required": ["edits"],
}


def make_cfg(api: FakeAnthropic | None, **model: Any) -> Config:
    values: dict[str, Any] = {
        "backend": "claude_code_exec",
        "target_model": "claude-sonnet-4-5",
        "optimizer_model": "claude-sonnet-4-5",
        "max_retries": 0,
        "json_retries": 1,
        "timeout_s": 60,
        "claude_code_timeout_s": 60,
        **model,
    }
    if api is not None:
        values.update(base_url=api.base_url, api_key="sk-ant-fake-key")
    return Config.model_validate({"model": values, "skill": {"name": "qa-skill"}})


def agent_handler(workspace: Path) -> Any:
    """Bash, a failing command, Write, Read of task.md, then the answer; aux calls get plain text."""

    def handler(req: FakeRequest) -> FakeReply:
        if "Bash" not in req.tool_names():
            return text("aux")
        done = len(req.tool_results())
        script = [
            lambda: tool_use("Bash", {"command": "echo hello", "description": "greet"}, say="Starting."),
            lambda: tool_use("Bash", {"command": "ls /nonexistent_dir_xyz"}),
            lambda: tool_use("Write", {"file_path": str(workspace / "notes.txt"), "content": "note 1\n"}),
            lambda: tool_use("Read", {"file_path": str(workspace / "task.md")}),
        ]
        if done < len(script):
            return script[done]()
        return text("Paris", input_tokens=100, output_tokens=7)

    return handler


def test_availability_and_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    cfg = make_cfg(None)
    ok, note = availability(cfg, "claude_code_exec")
    assert ok and "claude" in note and "logged-in CLI" in note  # no key anywhere: says so
    cfg.model.api_key = "sk-ant-test-FAKE-000000000"  # type: ignore[assignment]
    assert "logged-in" not in availability(cfg, "claude_code_exec")[1]
    cfg.model.claude_code_cli_path = "/nonexistent/claude"
    ok, reason = availability(cfg, "claude_code_exec")
    assert not ok and "claude_code_cli_path" in reason


def test_skill_markdown_front_matter() -> None:
    md = skill_markdown("qa-skill", "---\ndescription: Answer capitals.\n---\nBe terse.\n")
    assert md.startswith('---\nname: qa-skill\ndescription: "Answer capitals."\n---\n')
    assert md.rstrip().endswith("Be terse.") and md.count("---") == 2
    assert "(No guidance yet.)" in skill_markdown("qa-skill", "")


@pytest.mark.slow
def test_agent_runs_tools_and_returns_trace(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    task = Task("t1", "What is the capital of France?", context="France is a country. " * 500)
    with FakeAnthropic(agent_handler(workspace.resolve())) as api:
        agent = make_agent(make_cfg(api))
        result = agent.run(task, "Answer with the city name only.", workspace)
    assert not api.handler_errors
    assert result.error is None and not result.is_error
    assert result.answer == "Paris"
    kinds = [(s.kind, s.tool, s.is_error) for s in result.trace]
    assert kinds == [
        ("text", None, False),
        ("tool_call", "Bash", False),
        ("tool_result", "Bash", False),
        ("tool_call", "Bash", False),
        ("tool_result", "Bash", True),
        ("tool_call", "Write", False),
        ("tool_result", "Write", False),
        ("tool_call", "Read", False),
        ("tool_result", "Read", False),
        ("text", None, False),
    ]
    assert result.trace[1].text == "echo hello" and result.trace[2].text == "hello"
    assert "What is the capital of France?" in result.trace[8].text  # the agent read task.md
    assert [s.text for s in result.trace].count("Paris") == 1  # the final answer once
    # workspace: the skill as a real project skill, the task and its untruncated context as files
    skill_md = (workspace / ".claude/skills/qa-skill/SKILL.md").read_text()
    assert skill_md.startswith("---\nname: qa-skill\n") and "Answer with the city name only." in skill_md
    assert (workspace / "context.md").read_text() == task.context
    assert "context.md" in (workspace / "task.md").read_text()
    assert (workspace / "notes.txt").read_text() == "note 1\n"
    # usage from the final result record only: five requests' input tokens summed by the CLI
    assert result.usage.calls == 1 and result.usage.input_tokens == 4 * 10 + 100
    assert result.usage.output_tokens == 4 * 5 + 7 and result.usage.cost_usd is not None
    # raw transcript: JSON-able stream-json-shaped dicts that re-parse to the same trace
    assert json.loads(json.dumps(result.raw)) == result.raw
    assert result.raw[0]["type"] == "system" and result.raw[-1]["type"] == "result"
    from skillgrad.traces.claude import steps_from_events

    assert steps_from_events(result.raw).steps == result.trace
    # isolation: our skill is listed, bundled and ancestor skills are not; only allowed tools + Skill
    first = next(r for r in api.message_requests if "Bash" in r.tool_names())
    body = json.dumps(first.body)
    assert "qa-skill" in body and "dataviz" not in body
    assert set(first.tool_names()) == {"Read", "Glob", "Grep", "Bash", "Write", "Edit", "Skill"}
    assert first.body["model"] == "claude-sonnet-4-5"


@pytest.mark.slow
def test_agent_recovers_from_429_and_cut_stream(tmp_path: Path) -> None:
    calls: list[str] = []

    def handler(req: FakeRequest) -> FakeReply:
        if "Bash" not in req.tool_names():
            return text("aux")
        calls.append("stream" if req.stream else "json")
        if len(calls) == 1:
            return http_error(429)
        if len(calls) == 2:
            return FakeReply([{"type": "text", "text": "Paris, I think, is the answer"}], cut_stream=True)
        return text("Paris")

    with FakeAnthropic(handler) as api:
        result = make_agent(make_cfg(api)).run(Task("t", "Capital of France?"), "", tmp_path / "ws")
    assert not result.is_error, result.error
    assert result.answer == "Paris"
    assert len(calls) >= 3 and not (tmp_path / "ws" / "context.md").exists()


@pytest.mark.slow
def test_agent_timeout_is_a_failed_result(tmp_path: Path) -> None:
    release = threading.Event()

    def handler(req: FakeRequest) -> FakeReply:
        release.wait(30)  # hang the API until the test is over
        return text("too late")

    with FakeAnthropic(handler) as api:
        agent = make_agent(make_cfg(api, claude_code_timeout_s=4))
        start = time.monotonic()
        result = agent.run(Task("t", "Q?"), "", tmp_path / "ws")
        elapsed = time.monotonic() - start
        release.set()
    assert result.is_error and result.error and "timed out" in result.error
    assert elapsed < 20
    assert result.usage.cost_usd is None and result.answer == ""
    assert result.trace[-1].is_error and "timed out" in result.trace[-1].text


def test_agent_cli_crash_is_a_failed_result(tmp_path: Path) -> None:
    script = tmp_path / "fake-claude"
    script.write_text("#!/bin/sh\necho 'fatal: broken install' >&2\nexit 1\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    cfg = make_cfg(None, claude_code_cli_path=str(script))
    result = make_agent(cfg).run(Task("t", "Q?"), "skill", tmp_path / "ws")
    assert result.is_error and result.error and "Claude Code" in result.error
    assert [s.is_error for s in result.trace] == [True] and result.answer == ""


@pytest.mark.slow
def test_optimizer_structured_output(tmp_path: Path) -> None:
    def handler(req: FakeRequest) -> FakeReply:
        assert req.structured_schema() == SCHEMA
        return tool_use("StructuredOutput", {"edits": ["add: be terse"]}, input_tokens=30, output_tokens=9)

    with FakeAnthropic(handler) as api:
        chat = make_chat(make_cfg(api), "optimizer")
        messages = [Message("system", "You are the SKILL ANALYST."), Message("user", "Propose edits.")]
        reply = chat.complete(messages, schema=SCHEMA, effort="low", stage="reflect")
    assert not api.handler_errors
    assert reply.data == {"edits": ["add: be terse"]}
    assert reply.usage.input_tokens == 30 and reply.usage.output_tokens == 9 and reply.usage.calls == 1
    req = api.message_requests[0]
    assert "You are the SKILL ANALYST." in req.system_text() and "Propose edits." in req.user_text()
    assert req.tool_names() == ["StructuredOutput"]  # no other tools for the optimizer


@pytest.mark.slow
def test_optimizer_reasks_then_parses_text_fallback() -> None:
    def handler(req: FakeRequest) -> FakeReply:
        if "Your previous reply could not be used" in req.user_text():
            return text('Here you go: {"edits": ["delete: old rule"]}')  # no tool call: text fallback
        return text("I refuse to answer in JSON.")

    with FakeAnthropic(handler) as api:
        chat = make_chat(make_cfg(api, json_retries=1), "optimizer")
        reply = chat.complete([Message("user", "Propose edits.")], schema=SCHEMA, stage="merge")
    assert reply.data == {"edits": ["delete: old rule"]}
    assert reply.usage.calls == 2  # two CLI sessions, usage summed


@pytest.mark.slow
def test_optimizer_invalid_replies_raise_structured_output_error() -> None:
    with FakeAnthropic(lambda req: text("still not JSON")) as api:
        chat = make_chat(make_cfg(api, json_retries=0), "optimizer")
        with pytest.raises(StructuredOutputError) as info:
            chat.complete([Message("user", "Propose edits.")], schema=SCHEMA, stage="rank")
    assert info.value.stage == "rank" and "still not JSON" in str(info.value)
    assert "claude_code_exec" in str(info.value)


def test_cli_env_never_touches_os_environ() -> None:
    before = dict(os.environ)
    cfg = make_cfg(
        None, base_url="http://127.0.0.1:1", api_key="k", claude_code_permission_mode="bypassPermissions"
    )
    env = claude_code.cli_env(cfg, "target")
    assert env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:1" and env["IS_SANDBOX"] == "1"
    assert "IS_SANDBOX" not in claude_code.cli_env(cfg, "optimizer")
    assert dict(os.environ) == before
