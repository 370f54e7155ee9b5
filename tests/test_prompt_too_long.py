"""A reflection prompt past the optimizer's context window: the server's refusal is told apart
(`PromptTooLong`), the analyst is asked again with fewer tasks shown, and a step whose prompt no
context holds goes on without edits once the run has had an answer (else the run stops)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from skillgrad.backends.common import says_prompt_too_long
from tests.fakes.openai_server import Request, ScriptedOpenAI, Status, json_reply, text
from tests.test_train_e2e import (
    BAD_RULE,
    GOOD_RULE,
    history,
    is_optimizer,
    read_json,
    skillgrad,
    target_answer,
    write_config,
)

# Real refusals: llama.cpp's server (what the 1.5B's 4,096 tokens answered on
# salient_translation_error_detection), OpenAI's, vLLM's, Anthropic's
TOO_LONG = [
    "request (4890 tokens) exceeds the available context size (4096 tokens), try increasing it",
    "This model's maximum context length is 8192 tokens. However, your messages resulted in 9012 "
    "tokens. Please reduce the length of the messages.",
    "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4232 "
    "in the messages, 768 in the completion). Please reduce the length of the messages or completion.",
    "prompt is too long: 215000 tokens > 200000 maximum",
]
OTHER_REFUSALS = [
    "Invalid value for 'response_format': json_schema is not supported",
    "Rate limit reached for requests",
    "'messages' must contain at least one message",
    "The model `fake-optimizer` does not exist",
]


@pytest.mark.parametrize("message", TOO_LONG)
def test_a_refusal_of_the_prompts_length_is_told_apart(message: str) -> None:
    assert says_prompt_too_long(message)


@pytest.mark.parametrize("message", OTHER_REFUSALS)
def test_other_refusals_are_not_taken_for_length(message: str) -> None:
    assert not says_prompt_too_long(message)


def tasks_shown(request: Request) -> int:
    return request.user.count("### Task ")


def train_refused(
    tmp_path: Path, most_tasks: int, rule: str, tasks: int, answered_steps: int = 99
) -> tuple[subprocess.CompletedProcess[str], Path, list[int]]:
    """`skillgrad train` over steps of `tasks` tasks (one minibatch each) against a server whose
    analyst refuses, as llama.cpp does, every prompt showing more than `most_tasks` tasks, and
    every prompt from step `answered_steps + 1` on, else proposes `rule`; (the process, its run
    folder, the tasks each analyst prompt showed)."""
    shown: list[int] = []
    steps = 0

    def handler(request: Request):
        nonlocal steps
        if not is_optimizer(request):
            return text(target_answer(request), 20, 8)
        count = tasks_shown(request)
        if not shown or count >= shown[-1]:
            steps += 1  # a step's first prompt: one asked again shows fewer tasks
        shown.append(count)
        if steps > answered_steps or count > most_tasks:
            message = f"request ({900 * count} tokens) exceeds the available context size"
            return Status(400, message + " (4096 tokens), try increasing it", "exceed_context_size_error")
        edit = {"op": "add", "target": "", "content": rule, "rationale": "answers carry extra words"}
        return json_reply({"edits": [edit]}, usage=(300, 40))

    with ScriptedOpenAI(handler) as server:
        out = tmp_path / "run"
        cfg = write_config(tmp_path, server, epochs=1, batch_size=tasks, minibatch_size=tasks)
        # form_fix=rule: a step left without edits stays so (no first examples)
        proc = skillgrad("train", "--config", str(cfg), "--out", str(out), "--set", "optimizer.form_fix=rule")
    return proc, out, shown


def test_a_prompt_past_the_context_is_asked_again_with_the_failed_tasks(tmp_path: Path) -> None:
    proc, out, shown = train_refused(tmp_path, 2, GOOD_RULE, tasks=4)
    assert proc.returncode == 0, proc.stderr
    assert shown == [4, 2]  # refused with 4, answered with 2
    assert [s["action"] for s in history(out)] == ["accepted"]
    assert GOOD_RULE in (out / "best_skill.md").read_text(encoding="utf-8")
    record = read_json(out / "steps" / "0001" / "reflections" / "mb_00.json")
    assert "error" not in record and len(record["tasks"]) == 2
    log = (out / "train.log").read_text(encoding="utf-8")
    said = "step 1: reflection mb_00: the prompt is past the optimizer's context; asked again with 2 of its 4"
    assert said in log


def test_a_first_step_no_context_holds_stops_the_run_naming_the_context(tmp_path: Path) -> None:
    proc, out, shown = train_refused(tmp_path, 0, GOOD_RULE, tasks=4)
    assert proc.returncode == 1
    assert "every reflection of step 1 failed" in proc.stderr and "context size" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert shown == [4, 2, 1]
    assert read_json(out / "summary.json")["stopped"] == "error"
    assert "context size" in read_json(out / "steps" / "0001" / "reflections" / "mb_00.json")["error"]


def test_a_later_step_no_context_holds_goes_on_without_edits(tmp_path: Path) -> None:
    """Step 1's analyst answers (its rule is rejected); step 2's prompt is refused down to one
    task: the step goes on without edits and the run ends with its final test."""
    proc, out, shown = train_refused(tmp_path, 4, BAD_RULE, tasks=2, answered_steps=1)
    assert proc.returncode == 0, proc.stderr
    assert shown == [2, 2, 1]
    assert [s["action"] for s in history(out)] == ["rejected", "skipped"]
    summary = read_json(out / "summary.json")
    assert summary["stopped"] == "completed" and summary["test"] is not None
    log = (out / "train.log").read_text(encoding="utf-8")
    assert "step 2: every reflection failed, the step goes on without edits" in log
    assert "context size" in read_json(out / "steps" / "0002" / "reflections" / "mb_00.json")["error"]
