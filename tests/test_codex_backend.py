"""codex_exec against the REAL pinned Codex CLI, driven by a scripted Responses API on 127.0.0.1:
a tool-using target task, the optimizer's structured replies, isolation, time and tool limits."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from skillgrad.backends import codex_args, codex_exec
from skillgrad.backends.interface import Message
from skillgrad.backends.registry import availability, make_agent, make_chat
from skillgrad.benchmarks.contract import Task
from skillgrad.config import Config
from skillgrad.errors import StructuredOutputError, UserError
from tests.fakes.codex_cli import require_codex_cli
from tests.fakes.responses_server import (
    Hang,
    Reply,
    ResponsesRequest,
    ScriptedResponses,
    add_file,
    message,
    reasoning,
    sequence,
    shell,
)

FAKE_KEY = "sk-FAKE-codex-0123456789abcdef"
SKILL_RULE = "Reply with the city name only."
SCHEMA = {
    "type": "object",
    "properties": {"edits": {"type": "array", "items": {"type": "string"}}},
    "required": ["edits"],
}
TASK = Task("q1", "What is the capital of France?", "", ("Paris",))

pytestmark = pytest.mark.slow


def codex_config(server: ScriptedResponses, **model: object) -> Config:
    cfg = Config()
    cfg.model.backend = cfg.model.optimizer_backend = cfg.model.target_backend = "codex_exec"
    cfg.model.codex_cli_path = str(require_codex_cli())
    cfg.model.base_url = server.base_url
    cfg.model.api_key = FAKE_KEY  # type: ignore[assignment]
    cfg.model.target_model = cfg.model.optimizer_model = "gpt-5.5"
    cfg.model.max_retries = 0
    cfg.model.codex_timeout_s = 90
    cfg.skill.name = "capitals"
    for key, value in model.items():
        setattr(cfg.model, key, value)
    return cfg


def tool_task(request: ResponsesRequest) -> Reply:
    """A failing command, a succeeding one, a file write, then the answer."""
    done = len(request.tool_outputs)
    if done == 0:
        return Reply(
            [reasoning("Find the task first."), message("Reading the task."), shell("cat missing.md")]
        )
    if done == 1:
        return Reply([shell("cat task.md")])
    if done == 2:
        return Reply([add_file("answer.txt", "Paris")])
    return Reply([message("Paris")], usage=(50, 2))


def test_target_runs_tools_and_returns_trace(tmp_path: Path) -> None:
    with ScriptedResponses(tool_task) as server:
        agent = make_agent(codex_config(server))
        result = agent.run(TASK, f"# Capitals\n{SKILL_RULE}\n", tmp_path / "ws")
        requests = server.requests
    assert not result.is_error, result.error
    assert result.answer == "Paris"
    assert (tmp_path / "ws" / "answer.txt").read_text(encoding="utf-8").strip() == "Paris"
    assert (tmp_path / "ws" / ".agents" / "skills" / "capitals" / "SKILL.md").is_file()
    kinds = [(s.kind, s.tool, s.is_error) for s in result.trace]
    assert kinds == [
        ("text", None, False),
        ("tool_call", "exec_command", False),
        ("tool_result", "exec_command", True),
        ("tool_call", "exec_command", False),
        ("tool_result", "exec_command", False),
        ("tool_call", "apply_patch", False),
        ("tool_result", "apply_patch", False),
        ("text", None, False),
    ]
    assert result.trace[1].text == "cat missing.md" and "exit code 1" in result.trace[2].text
    assert "What is the capital of France?" in result.trace[4].text
    assert result.trace[5].text == "add answer.txt"
    assert [s.text for s in result.trace].count("Paris") == 1  # the final answer once
    assert "Find the task first." not in json.dumps([s.to_json() for s in result.trace])  # reasoning dropped
    # usage is the turn's: 4 requests of (20, 5) but the last (50, 2)
    assert (result.usage.input_tokens, result.usage.output_tokens) == (110, 17)
    assert result.usage.cost_usd is None
    # the skill reached the model as a real Codex skill: listed, named in the prompt, injected
    first = requests[0]
    assert "capitals" in first.developer_text and any(
        "Use the $capitals skill" in t for t in first.user_texts
    )
    assert any(SKILL_RULE in text and "<skill>" in text for text in first.user_texts)
    assert first.headers["authorization"] == f"Bearer {FAKE_KEY}"
    assert FAKE_KEY not in os.environ.get(codex_args.KEY_VAR, "")


def test_api_key_never_reaches_the_agents_commands(tmp_path: Path) -> None:
    with ScriptedResponses(sequence(Reply([shell("env")]), Reply([message("done")]))) as server:
        result = make_agent(codex_config(server)).run(TASK, SKILL_RULE, tmp_path / "ws")
        sent = server.requests[1].tool_outputs[0]
    assert "CODEX_HOME=" in sent and "PATH=" in sent  # the command ran and printed its environment
    assert FAKE_KEY not in sent and FAKE_KEY not in json.dumps([s.to_json() for s in result.trace])
    assert server.requests[0].headers["authorization"] == f"Bearer {FAKE_KEY}"


def test_optimizer_returns_schema_valid_json(tmp_path: Path) -> None:
    with ScriptedResponses(lambda r: Reply([message('{"edits": ["be brief"]}')])) as server:
        chat = make_chat(codex_config(server), "optimizer")
        reply = chat.complete(
            [Message("system", "You improve a SKILL document."), Message("user", "Propose edits.")],
            schema=SCHEMA,
            stage="reflect",
        )
        request = server.requests[0]
    assert reply.data == {"edits": ["be brief"]}
    assert reply.usage.input_tokens == 20 and reply.usage.calls == 1
    assert request.json_schema == {**SCHEMA, "additionalProperties": False}  # strict, as the CLI sends it
    assert "You improve a SKILL document." in request.developer_text and request.prompt == "Propose edits."
    assert "exec_command" not in request.tool_names and "web_search" not in request.tool_names


def test_optimizer_invalid_json_is_reasked_then_a_clear_error() -> None:
    bad, good = Reply([message("Sure! Here are my edits: none")]), Reply([message('{"edits": []}')])
    with ScriptedResponses(sequence(bad, good)) as server:
        reply = make_chat(codex_config(server), "optimizer").complete(
            [Message("user", "Propose edits.")], schema=SCHEMA, stage="reflect"
        )
        second = server.requests[1].prompt
    assert reply.data == {"edits": []} and reply.usage.calls == 2
    assert "Sure! Here are my edits" in second and "could not be used: invalid JSON" in second
    with ScriptedResponses(sequence(bad)) as server:
        chat = make_chat(codex_config(server, json_retries=1), "optimizer")
        with pytest.raises(StructuredOutputError) as caught:
            chat.complete([Message("user", "Propose edits.")], schema=SCHEMA, stage="merge")
        assert len(server.requests) == 2
    assert "codex_exec" in str(caught.value) and "'merge'" in str(caught.value)


def test_optimizer_that_calls_a_tool_is_stopped_and_reasked() -> None:
    with ScriptedResponses(
        sequence(Reply([add_file("x.txt", "hi")]), Reply([message('{"edits": []}')]))
    ) as server:
        reply = make_chat(codex_config(server), "optimizer").complete(
            [Message("user", "Propose edits.")], schema=SCHEMA, stage="reflect"
        )
    assert reply.data == {"edits": []}


def test_user_codex_home_skills_and_agents_md_are_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A poisoned CODEX_HOME config, user skills, and an enclosing repo's AGENTS.md and skills."""
    poison = "POISONED-INSTRUCTION-7f3a"
    user_home = tmp_path / "user_codex"
    (user_home / "skills" / "evil").mkdir(parents=True)
    (user_home / "config.toml").write_text(f'developer_instructions = "{poison}"\n', encoding="utf-8")
    (user_home / "skills" / "evil" / "SKILL.md").write_text(
        f"---\nname: evil\ndescription: {poison}\n---\n{poison}\n", encoding="utf-8"
    )
    (user_home / "AGENTS.md").write_text(poison, encoding="utf-8")
    home = tmp_path / "home"
    (home / ".agents" / "skills" / "evil").mkdir(parents=True)
    (home / ".agents" / "skills" / "evil" / "SKILL.md").write_text(
        f"---\nname: evil2\ndescription: {poison}\n---\n", encoding="utf-8"
    )
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "AGENTS.md").write_text(poison, encoding="utf-8")
    (repo / ".agents" / "skills" / "evil").mkdir(parents=True)
    (repo / ".agents" / "skills" / "evil" / "SKILL.md").write_text(
        f"---\nname: evil3\ndescription: {poison}\n---\n", encoding="utf-8"
    )
    monkeypatch.setenv("CODEX_HOME", str(user_home))
    monkeypatch.setenv("HOME", str(home))
    with ScriptedResponses(lambda r: Reply([message("Paris")])) as server:
        result = make_agent(codex_config(server)).run(TASK, SKILL_RULE, repo / "runs" / "ws")
        bodies = [json.dumps(r) for r in server.requests]
    assert not result.is_error, result.error
    assert bodies and all(poison not in body for body in bodies)
    assert SKILL_RULE in bodies[0]  # our own skill is there


def test_timeout_stops_the_session(tmp_path: Path) -> None:
    with ScriptedResponses(lambda r: Hang(60)) as server:
        agent = make_agent(codex_config(server, codex_timeout_s=5))
        started = time.monotonic()
        result = agent.run(TASK, SKILL_RULE, tmp_path / "ws")
        elapsed = time.monotonic() - started
    assert elapsed < 30
    assert result.is_error and "timed out after 5s" in (result.error or "")
    assert result.trace[-1].is_error and "timed out" in result.trace[-1].text


def test_max_turns_stops_a_looping_agent(tmp_path: Path) -> None:
    with ScriptedResponses(lambda r: Reply([shell("echo again")])) as server:
        result = make_agent(codex_config(server, codex_max_turns=3)).run(TASK, SKILL_RULE, tmp_path / "ws")
        calls = len(server.requests)
    assert result.is_error and "tool-call limit (3, model.codex_max_turns)" in (result.error or "")
    tool_calls = [s for s in result.trace if s.kind == "tool_call"]
    assert 3 <= len(tool_calls) <= 4 and calls <= 5
    assert result.trace[-1].is_error


def test_missing_turn_completed_means_unfinished(tmp_path: Path) -> None:
    """The CLI's stream broke off: no turn.completed, so the task fails (no fake pass)."""
    from skillgrad.backends.codex_process import CodexRun

    events = [{"type": "thread.started", "thread_id": "t"}, {"type": "turn.started"}]
    events.append({"type": "item.completed", "item": {"id": "i0", "type": "agent_message", "text": "Paris"}})
    session = codex_exec._session(CodexRun(events=events), None)
    assert session.is_error and session.terminal_reason == "unfinished" and session.final_answer == "Paris"


def test_private_home_copies_only_the_login_when_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = tmp_path / "user_codex"
    user.mkdir()
    (user / "auth.json").write_text('{"OPENAI_API_KEY": null, "tokens": {}}', encoding="utf-8")
    (user / "config.toml").write_text('model = "poison"\n', encoding="utf-8")
    monkeypatch.setenv("CODEX_HOME", str(user))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    cfg = Config()
    plain = codex_args.private_home(cfg, tmp_path / "a")
    assert Path(plain["CODEX_HOME"]).is_dir() and not list(Path(plain["CODEX_HOME"]).iterdir())
    cfg.model.codex_reuse_login = True
    reused = Path(codex_args.private_home(cfg, tmp_path / "b")["CODEX_HOME"])
    assert sorted(p.name for p in reused.iterdir()) == ["auth.json"]
    assert codex_args.provider_args(cfg, "target") == []  # the CLI's own provider, with that login
    cfg.model.base_url = "http://127.0.0.1:9/v1"
    assert 'model_providers.skillgrad.base_url="http://127.0.0.1:9/v1"' in codex_args.provider_args(
        cfg, "target"
    )


def _fake_cli(tmp_path: Path, body: str) -> Path:
    script = tmp_path / "codex"
    script.write_text(f"#!/bin/sh\n{body}\n", encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script


def test_sandbox_that_cannot_start_is_a_one_line_error(tmp_path: Path) -> None:
    landlock = 'echo "error: Landlock is not supported by this kernel" >&2; exit 1'
    cli = _fake_cli(tmp_path, f'[ "$1" = --version ] && echo "codex-cli 0.169.0" && exit 0\n{landlock}')
    cfg = Config()
    cfg.model.target_backend = "codex_exec"
    cfg.model.codex_cli_path = str(cli)
    with pytest.raises(UserError) as caught:
        make_agent(cfg)
    text = str(caught.value)
    assert "model.codex_sandbox=workspace-write" in text and "Landlock is not supported" in text
    assert "danger-full-access" in text and "\n" not in text
    cfg.model.codex_sandbox = "danger-full-access"  # no sandbox to start: no check
    assert make_agent(cfg).name == "codex_exec"


def test_availability_names_the_cli_or_the_fix(tmp_path: Path) -> None:
    cfg = Config()
    cfg.model.codex_cli_path = str(tmp_path / "nope" / "codex")
    ok, reason = availability(cfg, "codex_exec")
    assert not ok and "model.codex_cli_path" in reason
    cfg.model.codex_cli_path = str(require_codex_cli())
    ok, reason = availability(cfg, "codex_exec")
    assert ok and str(require_codex_cli()) in reason and f"codex-cli {codex_exec.PINNED_VERSION}" in reason
    cfg.model.codex_cli_path = str(
        _fake_cli(tmp_path, 'echo "env: node: No such file or directory" >&2; exit 127')
    )
    ok, reason = availability(cfg, "codex_exec")
    assert not ok and "does not run" in reason and "node: No such file" in reason
    listing = subprocess.run(
        [sys.executable, "-m", "skillgrad.cli", "backends", "--set", f"model.codex_cli_path={tmp_path}/none"],
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    line = next(ln for ln in listing.splitlines() if ln.startswith("codex_exec"))
    assert "agent harness" in line and "not usable: model.codex_cli_path" in line
