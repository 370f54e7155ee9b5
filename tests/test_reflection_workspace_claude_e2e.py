"""Issue 28 with the REAL Claude Code CLI (bundled in claude-agent-sdk) as the analyst, against the
scripted Anthropic API: the cause of failure sits in a middle step the budgeted view hides; the
analyst greps the trace_full.txt a gap marker names, reads the step and proposes the edit that
fixes it, which is accepted; with the digest, the same scripted analyst cannot see the cause. The
replay pays nothing, no key reaches the workspace, the record or the cache, writes and commands
are refused, the turn and time bounds end a reflection with a clear error the step survives, and
a SIGKILL during a reflection repays nothing finished on --resume."""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import threading
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
from tests.fakes.anthropic_server import FakeAnthropic, FakeReply, FakeRequest, text, tool_use
from tests.fakes.openai_server import Request, ScriptedOpenAI
from tests.reflection_world import (
    ANALYST_MARK,
    FAKE_KEY,
    GENERIC_RULE,
    OLD_FILE,
    claude_handler,
    config_lines,
    is_analyst,
)
from tests.test_hostile_secrets import leaked_forms
from tests.test_train_e2e import GOOD_RULE, target_answer
from tests.test_train_e2e import text as chat_text
from tests.test_train_e2e import write_config as write_chat_config

pytestmark = pytest.mark.slow
SCHEMA = {"type": "object", "properties": {"edits": {"type": "array"}}, "required": ["edits"]}
READING_TOOLS = {"Glob", "Grep", "Read", "StructuredOutput"}


def skillgrad(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "skillgrad.cli", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=280)


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def no_leak(folder: Path, key: str) -> int:
    """No file under `folder` holds `key` in any form (a cached workspace's base64 files decoded)."""
    checked = 0
    for path in (p for p in folder.rglob("*") if p.is_file() and not p.is_symlink()):
        bodies = [path.read_bytes().decode("utf-8", "replace")]
        if path.suffix == ".json" and '"payload"' in bodies[0]:
            files = json.loads(bodies[0])["payload"].get("files") or {}
            bodies += [base64.b64decode(v).decode("utf-8", "replace") for v in files.values()]
        for body in bodies:
            for form in leaked_forms(key):
                assert form not in body, f"{path} leaks {form!r}"
        checked += 1
    return checked


def tool_calls(requests: list[FakeRequest]) -> list[dict[str, Any]]:
    """The analyst's tool_use blocks as the API saw them, with the results the CLI sent back."""
    last = requests[-1]
    results = {r["tool_use_id"]: r for r in last.tool_results()}
    calls = [
        block
        for m in last.messages
        if m.get("role") == "assistant" and isinstance(m.get("content"), list)
        for block in m["content"]
        if isinstance(block, dict) and block.get("type") == "tool_use"
    ]
    return [{**c, "result": results.get(c["id"], {})} for c in calls]


def test_the_analyst_opens_the_hidden_step_and_its_edit_is_accepted(tmp_path: Path) -> None:
    with FakeAnthropic(claude_handler) as api:
        model = [
            f"  base_url: {api.base_url}",
            "  optimizer_model: claude-sonnet-4-5",
            "  target_model: claude-sonnet-4-5",
        ]
        config = str(e2e_config.write_config(tmp_path, config_lines(tmp_path, model, tmp_path / "cache")))
        runs = {}
        for name, mode in (("workspace", []), ("digest", ["--set", "optimizer.reflection=digest"])):
            before = len(api.message_requests)
            out = tmp_path / name
            runs[name] = skillgrad(
                "train", "--config", config, "--out", str(out), "--backend", "claude_code_exec", *mode
            )
            runs[name + "_analyst"] = [r for r in api.message_requests[before:] if is_analyst(r)]  # type: ignore[assignment]
        served = len(api.requests)
        replay = skillgrad(
            "train", "--config", config, "--out", str(tmp_path / "replay"), "--backend", "claude_code_exec"
        )
        assert len(api.requests) == served  # the replay made no API call: every answer came from the cache
        assert not api.handler_errors
    for name in ("workspace", "digest"):
        assert runs[name].returncode == 0, runs[name].stderr[-3000:]
    assert replay.returncode == 0, replay.stderr[-3000:]
    out = tmp_path / "workspace"

    # the cause was not in the prompt; a gap marker said where the hidden steps were
    analyst = runs["workspace_analyst"]
    assert len(analyst) == 3 and set(analyst[0].tool_names()) == READING_TOOLS
    prompt = analyst[0].system_text() + analyst[0].user_text()
    assert OLD_FILE not in prompt and "tasks/01/trace_full.txt lines " in prompt
    assert "## Your workspace: the evidence in full" in analyst[0].system_text()
    # the tool calls reached the API with the workspace's paths; the real CLI read the real files
    grep, read = tool_calls(analyst)
    assert grep["name"] == "Grep" and grep["input"]["path"] == "tasks/01/trace_full.txt"
    assert OLD_FILE in grep["result"]["text"] and not grep["result"]["is_error"]
    assert read["name"] == "Read" and read["input"]["file_path"] == "tasks/01/trace_full.txt"
    assert f"# {OLD_FILE} (the list as of 1989)" in read["result"]["text"]
    # the edit names what it found, lands, and is accepted
    summary = read_json(out / "summary.json")
    assert (
        summary["baseline_val_score"] == 0.0 and summary["best_val_score"] == 1.0 and summary["accepted"] == 1
    )
    assert OLD_FILE in (out / "best_skill.md").read_text(encoding="utf-8")

    # the record keeps what was opened, the folder is there to check it against
    record = read_json(out / "steps/0001/reflections/mb_00.json")
    folder = out / "steps/0001/reflections/mb_00"
    assert record["reflection"] == "workspace" and record["workspace"] == "mb_00"
    assert record["session"]["turns"] >= 3 and record["session"]["tool_calls"] == 2
    search, opened_read = record["opened"]
    lines = (folder / "tasks/01/trace_full.txt").read_text(encoding="utf-8").splitlines()
    cause = next(n for n, line in enumerate(lines, 1) if f"# {OLD_FILE}" in line and "tool_result" in line)
    assert search["tool"] == "Grep" and cause in search["hits"][0]["lines"]
    assert opened_read["path"] == "tasks/01/trace_full.txt"
    assert opened_read["lines"][0] <= cause <= opened_read["lines"][1]
    assert sorted(p.name for p in (folder / "tasks/01").iterdir()) == [
        "answer.txt", "expected.txt", "score.json", "task.md", "trace_full.txt", "transcript.jsonl"
    ]  # fmt: skip
    assert (folder / "tasks/01/expected.txt").read_text() == "Berlin\n" or (
        folder / "tasks/01/expected.txt"
    ).read_text().strip() in ("Abuja", "Astana", "Naypyidaw")

    # the digest: the same analyst without tools, no pointer, no cause, a generic edit, rejected
    digest = runs["digest_analyst"]
    assert len(digest) == 1 and "Grep" not in digest[0].tool_names()
    assert OLD_FILE not in digest[0].user_text() and "trace_full.txt" not in digest[0].user_text()
    digest_summary = read_json(tmp_path / "digest" / "summary.json")
    assert digest_summary["accepted"] == 0 and digest_summary["best_val_score"] == 0.0
    assert (
        read_json(tmp_path / "digest/steps/0001/reflections/mb_00.json")["edits"][0]["content"]
        == GENERIC_RULE
    )

    # the replay: the same reflection, from the cache, the same evidence
    again = read_json(tmp_path / "replay/steps/0001/reflections/mb_00.json")
    assert again["opened"] == record["opened"] and again["edits"] == record["edits"]
    assert read_json(tmp_path / "replay/summary.json")["accepted"] == 1

    # the report shows which lines the edit came from
    report = skillgrad("report", str(out))
    assert report.returncode == 0, report.stderr
    html = (out / "report.html").read_text(encoding="utf-8")
    assert f"tasks/01/trace_full.txt lines {opened_read['lines'][0]}-{opened_read['lines'][1]}" in html
    assert (
        f"{cause}: {lines[cause - 1]}" in html and f"# {OLD_FILE} (the list as of 1989)" in lines[cause - 1]
    )

    # the agent echoed its key mid-session: no form of it in any workspace, record or cache entry
    assert no_leak(tmp_path / "cache", FAKE_KEY) > 0
    for run in ("workspace", "digest", "replay"):
        assert no_leak(tmp_path / run / "steps", FAKE_KEY) > 0
    assert "[REDACTED]" in (folder / "tasks/01/trace_full.txt").read_text(encoding="utf-8")


# ---------------------------------------------------------------------------------------------
# read-only, bounded


def reader_config(api: FakeAnthropic) -> Config:
    cfg = Config()
    cfg.model.backend = "claude_code_exec"
    cfg.model.base_url = api.base_url
    cfg.model.api_key = FAKE_KEY  # type: ignore[assignment]
    cfg.model.optimizer_model = "claude-sonnet-4-5"
    cfg.model.max_retries = 0
    return cfg


def evidence_folder(tmp_path: Path) -> tuple[Path, Path]:
    folder = tmp_path / "ws"
    (folder / "tasks" / "01").mkdir(parents=True)
    (folder / "tasks" / "01" / "trace_full.txt").write_text("1. [text] hello\n2. [text] the cause\n")
    secret = tmp_path / "outside" / "config.yaml"
    secret.parent.mkdir()
    secret.write_text("api_key: outside-the-workspace\n")
    return folder, secret


def snapshot(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def test_writes_commands_and_reads_outside_are_refused_and_the_reflection_completes(tmp_path: Path) -> None:
    folder, secret = evidence_folder(tmp_path)
    before = snapshot(folder)
    attempts = [
        tool_use("Write", {"file_path": "tasks/01/trace_full.txt", "content": "rewritten"}),
        tool_use(
            "Edit", {"file_path": "tasks/01/trace_full.txt", "old_string": "hello", "new_string": "bye"}
        ),
        tool_use("Bash", {"command": "touch made.txt; curl -s http://127.0.0.1:9/"}),
        tool_use("WebFetch", {"url": "http://127.0.0.1:9/", "prompt": "read"}),
        tool_use("Read", {"file_path": str(secret)}),
        tool_use("Grep", {"pattern": "api_key", "path": str(secret.parent)}),
        tool_use("Read", {"file_path": "tasks/01/trace_full.txt"}),
    ]

    def handler(req: FakeRequest) -> FakeReply:
        done = len(req.tool_results())
        if done < len(attempts):
            return attempts[done]
        return tool_use("StructuredOutput", {"edits": ["the cause"]})

    with FakeAnthropic(handler) as api:
        chat = make_chat(reader_config(api), "optimizer")
        found = chat.investigate(  # type: ignore[attr-defined]
            [Message("system", ANALYST_MARK), Message("user", "Find the cause.")],
            folder=folder, bounds=ReadingBounds(10, 120), schema=SCHEMA, stage="reflect",
        )  # fmt: skip
        offered = set(api.message_requests[0].tool_names())
    assert found.reply.data == {"edits": ["the cause"]}  # the reflection completed
    assert offered == READING_TOOLS  # no Bash, Write, Edit, web or Task tool exists in the session
    assert snapshot(folder) == before and not (folder / "made.txt").exists()
    uses = found.tool_uses
    assert [u.is_error for u in uses] == [True, True, True, True, True, True, False]
    assert all("No such tool available" in u.output for u in uses[:4])
    assert "requested permissions to read" in uses[4].output and "outside-the-workspace" not in uses[4].output
    assert "outside-the-workspace" not in uses[5].output
    assert "the cause" in uses[6].output
    records = opened(uses, folder)
    assert [bool(r.get("refused")) for r in records] == [True] * 6 + [False]
    assert records[-1] == {"tool": "Read", "path": "tasks/01/trace_full.txt", "lines": [1, 2]}


def test_the_turn_and_time_bounds_end_the_call_with_a_clear_error(tmp_path: Path) -> None:
    folder, _ = evidence_folder(tmp_path)
    messages = [Message("system", ANALYST_MARK), Message("user", "Find the cause.")]

    def reads_forever(req: FakeRequest) -> FakeReply:
        return tool_use("Read", {"file_path": "tasks/01/trace_full.txt"}, input_tokens=100, output_tokens=10)

    with FakeAnthropic(reads_forever) as api:
        chat = make_chat(reader_config(api), "optimizer")
        with pytest.raises(ReadingBoundError) as turns:
            chat.investigate(
                messages, folder=folder, bounds=ReadingBounds(2, 120), schema=SCHEMA, stage="reflect"
            )  # type: ignore[attr-defined]
        asked = len(api.message_requests)
    assert "used its 2 turns (optimizer.reflection_turns)" in str(
        turns.value
    ) and "raise optimizer.reflection_turns" in str(turns.value)
    assert (
        asked == 4 and len(turns.value.spent.tool_uses) >= 2
    )  # 2 reading turns + the answer's 2, then stopped
    assert turns.value.spent.reply.usage.input_tokens > 0  # what it spent is known, to be paid

    def slow(req: FakeRequest) -> FakeReply:
        time.sleep(2.5)
        return reads_forever(req)

    with FakeAnthropic(slow) as api:
        chat = make_chat(reader_config(api), "optimizer")
        started = time.monotonic()
        with pytest.raises(ReadingBoundError, match=r"optimizer.reflection_timeout_s=4s"):
            chat.investigate(
                messages, folder=folder, bounds=ReadingBounds(50, 4), schema=SCHEMA, stage="reflect"
            )  # type: ignore[attr-defined]
        assert time.monotonic() - started < 20  # no retry after the bound


class ChatTargetWorld:
    """An OpenAI-compatible chat target (fast) and the real Claude Code analyst reading its
    workspace; the analyst can loop, and the world can SIGKILL the trainer mid-reflection."""

    def __init__(self, loop: bool = False) -> None:
        self.loop = loop
        self.lock = threading.Lock()
        self.pid: int | None = None
        self.kill_on: str | None = None  # "reflection": at an analyst's second turn; "validation"
        self.killed = threading.Event()
        self.targets: list[tuple[str, str]] = []  # (system, question) of every target call
        self.answered: list[str] = []  # the minibatches whose analyst answered (by their first task)
        self.orphaned = 0  # analyst requests that came while the trainer was dead

    def _kill(self) -> None:
        if self.pid:
            os.kill(self.pid, signal.SIGKILL)
        self.kill_on = None
        self.killed.set()

    def target(self, request: Request) -> Any:
        with self.lock:
            if self.kill_on == "validation" and GOOD_RULE in request.system:
                self._kill()
            self.targets.append((request.system, request.user))
        return chat_text(target_answer(request), 20, 8)

    def analyst(self, req: FakeRequest) -> FakeReply:
        if not is_chat_analyst_text(req.system_text()):
            return text("aux")
        done = req.tool_results()
        with self.lock:
            if self.killed.is_set() and self.pid is None:
                self.orphaned += 1  # a session the killed trainer left behind goes on paying
            if self.kill_on == "reflection" and len(done) == 1 and self.answered:
                self._kill()
                self.pid = None
        if self.killed.is_set() and self.pid is None:
            time.sleep(0.5)  # answered like any turn, after the trainer is gone: would it go on?
            return tool_use("Read", {"file_path": "tasks/01/answer.txt"})
        if self.loop or not done:
            return tool_use("Glob", {"pattern": "tasks/*/answer.txt"})
        if len(done) == 1:
            return tool_use("Read", {"file_path": "tasks/01/answer.txt"})
        task = req.user_text().split("Question: ", 1)[1].split("\n", 1)[0]
        with self.lock:
            self.answered.append(task)
        edit = {
            "op": "add",
            "target": "",
            "content": GOOD_RULE,
            "rationale": "tasks/01/answer.txt: extra words",
        }
        return tool_use("StructuredOutput", {"edits": [edit]})


def is_chat_analyst_text(system: str) -> bool:
    return ANALYST_MARK in system


def chat_target_config(
    tmp_path: Path, openai: ScriptedOpenAI, anthropic: FakeAnthropic, *extra: str
) -> list[str]:
    config = write_chat_config(
        tmp_path, openai, batch_size=4, minibatch_size=2, concurrency=1, overlap="false"
    )
    sets = [
        "model.optimizer_backend=claude_code_exec", f"model.optimizer_base_url={anthropic.base_url}",
        "model.optimizer_model=claude-sonnet-4-5", "model.max_retries=0", *extra,
    ]  # fmt: skip
    return ["--config", str(config), *[a for s in sets for a in ("--set", s)]]


def test_a_bound_that_fires_is_recorded_and_the_step_survives(tmp_path: Path) -> None:
    world = ChatTargetWorld(loop=True)
    with ScriptedOpenAI(world.target) as openai, FakeAnthropic(world.analyst) as anthropic:
        # form_fix=rule: a step without edits is skipped (no first examples)
        args = chat_target_config(
            tmp_path, openai, anthropic, "optimizer.reflection_turns=2", "optimizer.form_fix=rule"
        )
        proc = skillgrad("train", *args, "--out", str(tmp_path / "run"))
    out = tmp_path / "run"
    assert proc.returncode == 0, proc.stderr[-3000:]
    history = [json.loads(line) for line in (out / "history.jsonl").read_text().splitlines()]
    assert [h["action"] for h in history] == ["skipped"]  # no edit, no candidate: the step went on
    for name in ("mb_00", "mb_01"):
        record = read_json(out / "steps/0001/reflections" / f"{name}.json")
        assert "optimizer.reflection_turns" in record["error"] and record["reflection"] == "workspace"
        assert record["opened"][0]["tool"] == "Glob" and record["session"]["usage"]["input_tokens"] > 0
    assert (
        "reflection mb_00: claude_code_exec: stage 'reflect' used its 2 turns"
        in (out / "train.log").read_text()
    )
    usage = read_json(out / "summary.json")["usage"]
    assert usage["by_role_stage"]["optimizer/reflect"]["calls"] == 2  # the bounded reflections were paid


def run_until_killed(args: list[str], out: Path, world: ChatTargetWorld, resume: bool) -> int:
    cmd = [sys.executable, "-m", "skillgrad.cli", "train"]
    cmd += ["--resume", str(out)] if resume else [*args, "--out", str(out)]
    env = {**os.environ, "ANTHROPIC_API_KEY": FAKE_KEY}  # a resumed run reads its keys from here
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    world.pid = proc.pid
    _, err = proc.communicate(timeout=240)
    assert "Traceback" not in err, err
    return proc.returncode


def test_sigkill_during_a_reflection_then_resume_repays_nothing_finished(tmp_path: Path) -> None:
    world = ChatTargetWorld()
    out = tmp_path / "run"
    with ScriptedOpenAI(world.target) as openai, FakeAnthropic(world.analyst) as anthropic:
        args = chat_target_config(tmp_path, openai, anthropic)
        runs: list[tuple[list[tuple[str, str]], list[str]]] = []
        for kill_on, resume in (("reflection", False), ("validation", True), (None, True)):
            world.killed.clear()
            world.kill_on = kill_on  # mb_00 answers, then mb_01 is killed on its second turn; then
            targets, answered = len(world.targets), len(world.answered)  # the candidate's validation
            code = run_until_killed(args, out, world, resume=resume)
            assert code == (0 if kill_on is None else -signal.SIGKILL)
            time.sleep(2.0)  # a CLI the killed trainer left behind would ask again meanwhile
            runs.append((world.targets[targets:], world.answered[answered:]))
    (first_calls, first_answers), (second_calls, second_answers), (last_calls, last_answers) = runs
    assert world.orphaned == 0  # the killed trainer's analyst died with it (backends/lifeline.py)
    # killed during mb_01: mb_00's finished answer is not asked again; mb_01 is redone, once
    assert len(first_answers) == 1 and len(second_answers) == 1 and second_answers != first_answers
    # killed during the validation: both reflections come from the cache, nothing is re-asked
    assert last_answers == []
    # no finished rollout is repaid: a resumed trainer asks the target nothing it was answered
    # before (the candidate's validation carries the new rule; the final test is new work)
    done = {question for system, question in first_calls}
    assert first_calls and second_calls and last_calls
    for system, question in second_calls + last_calls:
        assert GOOD_RULE in system or question not in done, question
    assert read_json(out / "summary.json")["accepted"] == 1
    for name in ("mb_00", "mb_01"):
        record = read_json(out / "steps/0001/reflections" / f"{name}.json")
        assert (
            record["edits"][0]["content"] == GOOD_RULE
            and record["opened"][1]["path"] == "tasks/01/answer.txt"
        )
