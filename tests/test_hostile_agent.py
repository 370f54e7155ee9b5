"""Issue 12, defect 8: the report trusts only what the run's records list. The REAL Claude Code CLI,
scripted through the fake Anthropic API, plants `../../zz-planted/` next to its own task folder with
an `answer.txt` symlinked to a file outside the run and a fake perfect `score.json`, and links its
own answer to that file too."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.fakes.anthropic_server import FakeAnthropic, FakeReply, FakeRequest, text, tool_use
from tests.needs import need

FAKE_KEY = "sk-ant-FAKE-planted-0123456789"
OUTSIDE = "OUTSIDE-FILE-CONTENT-7f3a"


def planting_agent(outside: Path):  # type: ignore[no-untyped-def]
    command = (
        "mkdir -p ../../zz-planted && "
        f"ln -sf {outside} ../../zz-planted/answer.txt && "
        'echo \'{"value": 1.0, "passed": true, "feedback": "planted"}\' > ../../zz-planted/score.json && '
        f"ln -sf {outside} planted_link.txt && echo planted"
    )

    def handler(req: FakeRequest) -> FakeReply:
        if not req.tool_results():
            return tool_use("Bash", {"command": command, "description": "plant"})
        return text("Rome")  # wrong: the real score is 0

    return handler


def eval_one_task(
    tmp_path: Path,
    handler: Callable[[FakeRequest], FakeReply],
    question: str,
    answer: str,
    skill_text: str,
    out: Path,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """`skillgrad eval` of one val task with the real Claude Code CLI as target, scripted by
    `handler` through the fake Anthropic API; the eval folder is `out`."""
    data = tmp_path / "items.jsonl"
    data.write_text(json.dumps({"id": "q1", "question": question, "answers": [answer]}) + "\n")
    skill = tmp_path / "skill.md"
    skill.write_text(skill_text, encoding="utf-8")
    with FakeAnthropic(handler) as api:
        lines = [
            "benchmark:", "  name: qa", f"  data: {data}", "  train_size: 0", "  val_size: 1",
            "  test_size: 0", "model:", "  target_backend: claude_code_exec",
            "  optimizer_backend: claude_code_exec",
            f"  base_url: {api.base_url}", f"  api_key: {FAKE_KEY}", "  target_model: claude-sonnet-4-5",
            "  claude_code_timeout_s: 120", "cache:", "  enabled: false",
        ]  # fmt: skip
        config = tmp_path / "config.yaml"
        config.write_text("\n".join(lines) + "\n", encoding="utf-8")
        cmd = [sys.executable, "-m", "skillgrad.cli", "eval", "--config", str(config), "--skill", str(skill)]
        return subprocess.run(
            [*cmd, "--split", "val", "--out", str(out)], capture_output=True, text=True, timeout=240, env=env
        )


@pytest.mark.slow
def test_planted_folder_and_symlinks_are_not_shown_or_counted(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text(OUTSIDE, encoding="utf-8")
    out = tmp_path / "eval"
    proc = eval_one_task(
        tmp_path, planting_agent(outside), "Capital of France?", "Paris", "Answer briefly.\n", out
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    split = out / "rollouts" / "val"
    assert (split / "zz-planted" / "score.json").is_file()  # the agent did plant it
    report = subprocess.run(
        [sys.executable, "-m", "skillgrad.cli", "report", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert report.returncode == 0, report.stderr
    html = Path(report.stdout.strip().splitlines()[-1]).read_text(encoding="utf-8")
    assert OUTSIDE not in html  # (the trace does show the agent's command, naming the folder)
    from skillgrad.report.data import load_run

    (val,) = load_run(out).rollout_sets
    assert [t.task_id for t in val.tasks] == ["q1"] and val.mean == 0.0
    kept = list(split.rglob("planted_link.txt"))
    assert kept == []  # links in a kept workspace are removed after scoring


def processes_with(marker: str) -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(entry.name)
            except OSError:
                pass
    return found


@pytest.mark.slow
def test_agent_processes_end_with_the_task_and_see_nothing_of_the_trainer(tmp_path: Path) -> None:
    """Issue 12, defect 7 for agent targets: a `setsid` child the agent leaves behind dies with the
    task; the agent cannot read the trainer's command line or its other credentials."""
    import os
    import time
    import uuid

    from skillgrad.backends.containment import ContainedCli

    need(
        ContainedCli("true", {}).contained,
        "this kernel gives no unprivileged PID namespaces: agents run uncontained",
    )
    orphan = f"orphan-{uuid.uuid4().hex}"
    out = tmp_path / f"eval-trainermark-{uuid.uuid4().hex[:8]}"  # in the trainer's command line
    mark = out.name
    command = (
        f"(setsid sh -c 'sleep 300; echo {orphan}' > /dev/null 2>&1 &) ; "
        f"printf '%s%s' '{mark[:12]}' '{mark[12:]}' > .pattern; "  # never whole in any command line
        "cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' ' | grep -o -f .pattern | wc -l > seen.txt; "
        "env > env.txt; echo ok"
    )

    def handler(req: FakeRequest) -> FakeReply:
        if not req.tool_results():
            return tool_use("Bash", {"command": command, "description": "leave a daemon"})
        return text("Paris")

    env = {**os.environ, "OPENAI_API_KEY": "sk-other-role-0123456789"}
    proc = eval_one_task(tmp_path, handler, "Capital of France?", "Paris", "Answer briefly.\n", out, env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    workspace = out / "rollouts" / "val" / "q1" / "workspace"
    assert (workspace / "seen.txt").read_text().strip() == "0"  # no view of the trainer's processes
    assert "OPENAI_API_KEY" not in (workspace / "env.txt").read_text()
    deadline = time.monotonic() + 10
    while processes_with(orphan) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert processes_with(orphan) == []


@pytest.mark.slow
def test_a_claude_code_reply_over_a_megabyte_is_kept_whole(tmp_path: Path) -> None:
    """Issue 12, defect 12: the SDK's 1 MB line buffer no longer fails a long reply."""
    big = "word " * 300_000  # 1.5 MB of text in one assistant message
    out = tmp_path / "eval"
    proc = eval_one_task(tmp_path, lambda req: text(big), "Say a lot.", "word", "Answer.\n", out)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Event loop is closed" not in proc.stderr
    answer = (out / "rollouts" / "val" / "q1" / "answer.txt").read_text(encoding="utf-8")
    assert len(answer) > 1_400_000


def redirecting_agent(outside: Path):  # type: ignore[no-untyped-def]
    """In a train rollout, replace the step's reflections/ (not yet written) by a link out of the
    run, as a probe did; elsewhere answer plainly."""
    command = f"rm -rf ../../../../reflections && ln -sfn {outside} ../../../../reflections && echo done"

    def handler(req: FakeRequest) -> FakeReply:
        if "You improve a SKILL document" in req.system_text():
            edit = {"op": "add", "target": "", "content": "Answer with the city only.", "rationale": "r"}
            return tool_use("StructuredOutput", {"edits": [edit]})
        if "Bash" not in req.tool_names():
            return text("aux")
        results = req.tool_results()
        if not results:
            return tool_use("Bash", {"command": "pwd", "description": "where am I"})
        if len(results) == 1 and "/rollouts/train/" in results[0]["text"]:
            return tool_use("Bash", {"command": command, "description": "redirect"})
        return text("Paris")

    return handler


@pytest.mark.slow
def test_a_target_cannot_redirect_the_run_folder_through_a_symlink(tmp_path: Path) -> None:
    """Issue 40, item 3: a Claude Code target replaces `steps/0001/reflections` by a symlink to a
    folder outside the run before the trainer writes the step's reflections there; every write
    of the run folder refuses to follow it: nothing lands outside, the reflections are in the run."""
    outside = tmp_path / "OUTSIDE"
    outside.mkdir()
    data = tmp_path / "items.jsonl"
    rows = [{"id": f"q{i}", "question": "Capital of France?", "answers": ["Rome"]} for i in range(2)]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "run"
    with FakeAnthropic(redirecting_agent(outside)) as api:
        lines = [
            "benchmark:", "  name: qa", f"  data: {data}", "  train_size: 1", "  val_size: 1",
            "  test_size: 0", "model:", "  backend: claude_code_exec", f"  base_url: {api.base_url}",
            f"  api_key: {FAKE_KEY}", "  target_model: claude-sonnet-4-5",
            "  optimizer_model: claude-sonnet-4-5",
            "  claude_code_timeout_s: 120", "  timeout_s: 120", "  max_retries: 0",
            "train:", "  epochs: 1", "  batch_size: 1", "  minibatch_size: 1", "cache:", "  enabled: false",
        ]  # fmt: skip
        config = tmp_path / "config.yaml"
        config.write_text("\n".join(lines) + "\n", encoding="utf-8")
        cmd = [sys.executable, "-m", "skillgrad.cli", "train", "--config", str(config), "--out", str(out)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=280)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert list(outside.iterdir()) == []  # nothing of the run was written outside it
    reflections = out / "steps" / "0001" / "reflections"
    assert not reflections.is_symlink() and (reflections / "mb_00.json").is_file()
    assert json.loads((reflections / "mb_00.json").read_text(encoding="utf-8"))["minibatch"] == 0
