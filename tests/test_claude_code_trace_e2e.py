"""Long, messy Claude Code sessions through a whole `skillgrad train`: the REAL bundled CLI against the
scripted Anthropic API. The target runs a string of failing commands and answers with half an emoji
(a lone surrogate); the run completes, every file is valid UTF-8, and the analyst's prompt carries the
budgeted views of a minibatch of four sessions, together within `trace.prompt_chars`."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests import e2e_config
from tests.e2e_config import capitals_data, one_epoch_lines, qa_lines
from tests.fakes.anthropic_server import FakeAnthropic, FakeReply, FakeRequest, text, tool_use

CAPITALS = {
    "France": "Paris", "Japan": "Tokyo", "Italy": "Rome", "Spain": "Madrid",
    "Germany": "Berlin", "Portugal": "Lisbon", "Egypt": "Cairo", "Peru": "Lima",
}  # fmt: skip
GOOD_RULE = "Reply with only the answer span, no sentence around it."
SKILL_NAME = "capitals"
FAILING_CALLS = 8
PROMPT_CHARS = 3000
HEADING = "#### Claude Trace Steps\n"


def is_optimizer(req: FakeRequest) -> bool:
    return "You improve a SKILL document" in req.system_text()


def target_turn(req: FakeRequest) -> FakeReply:
    """Skill, `cat task.md`, eight failing `ls`, then an answer; the skill decides its form."""
    results = req.tool_results()
    if not results:
        return tool_use("Skill", {"skill": SKILL_NAME}, say="Loading my skill.")
    if len(results) == 1:
        return tool_use("Bash", {"command": "cat task.md", "description": "read the task"})
    if len(results) < 2 + FAILING_CALLS:
        return tool_use("Bash", {"command": f"ls /nonexistent-dir-{len(results)}"})
    task = next(r["text"] for r in results if "capital of" in r["text"])
    country = task.split("capital of ")[1].split("?")[0]
    if GOOD_RULE in json.dumps(req.body):
        return text(CAPITALS[country])
    # half an emoji: the JSON escape of a lone high surrogate, as a model stream can carry it
    return text(f"I believe the capital of {country} is probably {CAPITALS[country]} \ud83c.")


def handler(req: FakeRequest) -> FakeReply:
    if is_optimizer(req):
        edit = {"op": "add", "target": "", "content": GOOD_RULE, "rationale": "answers carry extra words"}
        return tool_use("StructuredOutput", {"edits": [edit]})
    if "Bash" in req.tool_names():
        return target_turn(req)
    return text("aux")


def write_config(tmp_path: Path, api: FakeAnthropic) -> Path:
    lines = [
        *qa_lines(capitals_data(tmp_path, CAPITALS), 4),
        "skill:", f"  name: {SKILL_NAME}",
        "model:", f"  base_url: {api.base_url}", "  api_key: sk-ant-FAKE-trace-e2e-000",
        "  optimizer_model: claude-sonnet-4-5", "  target_model: claude-sonnet-4-5",
        "  claude_code_timeout_s: 120", "  timeout_s: 120", "  claude_code_max_turns: 30",
        "trace:", "  total_chars: 1200", f"  prompt_chars: {PROMPT_CHARS}",
        *one_epoch_lines(4, tmp_path / "cache"),
    ]  # fmt: skip
    return e2e_config.write_config(tmp_path, lines)


def trace_sections(prompt: str) -> list[str]:
    """The trace sections of an analyst prompt: each heading up to the next task or the end."""
    parts = prompt.split(HEADING)[1:]
    return [re.split(r"\n### Task |\nPropose at most", part)[0] for part in parts]


@pytest.mark.slow
def test_long_sessions_with_a_lone_surrogate_train_to_the_end(tmp_path: Path) -> None:
    with FakeAnthropic(handler) as api:
        out = tmp_path / "run"
        cmd = [sys.executable, "-m", "skillgrad.cli", "train", "--config", str(write_config(tmp_path, api))]
        cmd += ["--out", str(out), "--backend", "claude_code_exec"]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=400)
        analyst = [r for r in api.message_requests if is_optimizer(r)]
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["accepted"] == 1 and summary["best_val_score"] == 1.0
    for path in out.rglob("*"):
        if path.is_file():
            body = path.read_bytes().decode("utf-8")  # strict: every file is valid UTF-8
            if path.suffix == ".json":
                json.loads(body)
    answers = [
        p.read_text(encoding="utf-8")
        for p in (out / "steps" / "0001" / "rollouts" / "train").rglob("answer.txt")
    ]
    assert answers and all("\ufffd" in a for a in answers)  # replaced, not dropped, not raised
    # the analyst saw each failed session's budgeted view: the ending kept, and each of the eight
    # different failing commands on its own line or counted by the gap that hides it
    prompt = analyst[0].user_text()
    sections = trace_sections(prompt)
    assert len(sections) == 4 and sum(len(HEADING) + len(s) for s in sections) <= PROMPT_CHARS
    for section in sections:
        shown = re.findall(r"^\d+-\d+\. \[tool_call Bash\] ls /nonexistent-dir-\d+ -> ERROR", section, re.M)
        hidden = sum(int(n) for n in re.findall(r"^\[\.\.\. .*?, (\d+) errors?", section, re.M))
        assert shown and len(shown) + hidden == FAILING_CALLS
        assert "I believe the capital of" in section and "\ufffd" in section
    written = next((out / "steps" / "0001" / "rollouts" / "train").iterdir()) / "claude_trace_steps.txt"
    view = written.read_text(encoding="utf-8")
    assert len(view.rstrip("\n")) <= 1200 and "-> ERROR" in view
