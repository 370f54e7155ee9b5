"""`skillgrad train` / `skillgrad eval` as subprocesses against a scripted OpenAI-compatible server."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.fakes.openai_server import Request, ScriptedOpenAI, json_reply, rate_limited, server_error, text

CAPITALS = {
    "France": "Paris",
    "Japan": "Tokyo",
    "Italy": "Rome",
    "Spain": "Madrid",
    "Kenya": "Nairobi",
    "Peru": "Lima",
    "Egypt": "Cairo",
    "Chile": "Santiago",
    "Norway": "Oslo",
    "Ghana": "Accra",
}
GOOD_RULE = "Reply with only the answer span, no sentence around it."
BAD_RULE = "Always answer in French."
FAKE_KEY = "sk-test-FAKE-e2e-0123456789abcdef"


def write_data(tmp_path: Path) -> Path:
    path = tmp_path / "capitals.jsonl"
    rows = [
        {"id": f"q{i}", "question": f"What is the capital of {country}?", "answers": [city]}
        for i, (country, city) in enumerate(CAPITALS.items())
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def is_optimizer(request: Request) -> bool:
    return "You improve a SKILL document" in request.system


def target_answer(request: Request) -> str:
    country = request.user.split("capital of ")[1].split("?")[0]
    city = CAPITALS[country]
    if BAD_RULE in request.system:
        return "Je ne sais pas."
    if GOOD_RULE in request.system:
        return city
    return f"I believe the capital of {country} is probably {city}, as far as I know."


def world(rule: str):
    def handler(request: Request):
        if is_optimizer(request):
            edit = {"op": "add", "target": "", "content": rule, "rationale": "answers carry extra words"}
            return json_reply({"edits": [edit]}, usage=(300, 40))
        return text(target_answer(request), 20, 8)

    return handler


def write_config(tmp_path: Path, server: ScriptedOpenAI, **train) -> Path:
    data = write_data(tmp_path)
    settings = {"epochs": 1, "batch_size": 4, "minibatch_size": 2, "concurrency": 2, **train}
    lines = [
        "benchmark:",
        "  name: qa",
        f"  data: {data}",
        "  train_size: 4",
        "  val_size: 4",
        "  test_size: 2",
        "  seed: 3",
        "model:",
        "  backend: openai_chat",
        f"  base_url: {server.base_url}",
        f"  api_key: {FAKE_KEY}",
        "  optimizer_model: fake-optimizer",
        "  target_model: fake-target",
        "  max_retries: 3",
        "train:",
        *[f"  {k}: {v}" for k, v in settings.items()],
        "optimizer:",
        "  learning_rate: 2",
        "  min_learning_rate: 1",
        "cache:",
        f"  dir: {tmp_path / 'cache'}",
    ]
    path = tmp_path / "config.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def skillgrad(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "skillgrad.cli", *args],
        capture_output=True,
        text=True,
        timeout=240,
    )


def read_json(path: Path):
    return json.loads(path.read_text(encoding="utf-8"))


def history(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "history.jsonl").read_text(encoding="utf-8").splitlines()]


def assert_all_utf8_json(out: Path) -> None:
    for path in out.rglob("*"):
        if path.is_file():
            content = path.read_bytes().decode("utf-8")  # raises if not UTF-8
            if path.suffix == ".json":
                json.loads(content)
            if path.suffix == ".jsonl":
                [json.loads(line) for line in content.splitlines()]


def test_improving_edit_is_accepted(tmp_path: Path) -> None:
    with ScriptedOpenAI(world(GOOD_RULE)) as server:
        out = tmp_path / "run"
        proc = skillgrad("train", "--config", str(write_config(tmp_path, server)), "--out", str(out))
        assert proc.returncode == 0, proc.stderr
    summary = read_json(out / "summary.json")
    assert summary["baseline_val_score"] < 1.0
    assert summary["best_val_score"] == 1.0 > summary["baseline_val_score"]
    assert summary["accepted"] == 1 and summary["best_version"] == "v0001"
    assert summary["test"]["best"] == 1.0 > summary["test"]["baseline"]
    assert (out / "skills" / "v0000.md").read_text(encoding="utf-8") == ""
    assert GOOD_RULE in (out / "skills" / "v0001.md").read_text(encoding="utf-8")
    assert (out / "best_skill.md").read_text(encoding="utf-8") == (out / "skills" / "v0001.md").read_text(
        encoding="utf-8"
    )
    step = out / "steps" / "0001"
    assert read_json(step / "gate.json")["accepted"] is True
    assert read_json(step / "merged_patch.json")["selected"][0]["content"] == GOOD_RULE
    assert read_json(step / "edit_report.json")[0]["status"] == "applied"
    baseline = sorted(p.name for p in (out / "steps" / "0000" / "rollouts" / "val").iterdir())
    assert len(baseline) == 4
    score = read_json(out / "steps" / "0000" / "rollouts" / "val" / baseline[0] / "score.json")
    assert score["expected"] and "feedback" in score
    assert history(out)[0]["action"] == "accepted"
    usage = summary["usage"]["by_role"]
    assert usage["optimizer"]["calls"] >= 1 and usage["target"]["calls"] == 4 + 4 + 4 + 4
    config = read_json(out / "config.json")
    assert config["model"]["optimizer_backend"] == "openai_chat"
    assert_all_utf8_json(out)
    assert FAKE_KEY not in "".join(p.read_text(encoding="utf-8") for p in out.rglob("*") if p.is_file())
    # The analyst saw the task, the answer, the expected answer and the feedback.
    prompt = next(r for r in server.requests if is_optimizer(r)).user
    assert (
        "What is the capital of" in prompt and "Expected answer:" in prompt and "Grader feedback:" in prompt
    )
    assert "#### Claude Trace Steps" not in prompt  # chat target: no trace section


def test_harmful_edit_is_rejected_and_shown_to_later_analysts(tmp_path: Path) -> None:
    with ScriptedOpenAI(world(BAD_RULE)) as server:
        out = tmp_path / "run"
        cfg = write_config(tmp_path, server, batch_size=2, minibatch_size=2, epochs=2)
        # form_fix=rule: a step left with the rejected rule alone is skipped (no first examples)
        proc = skillgrad("train", "--config", str(cfg), "--out", str(out), "--set", "optimizer.form_fix=rule")
        assert proc.returncode == 0, proc.stderr
        analyst_prompts = [r.user for r in server.requests if is_optimizer(r)]
    summary = read_json(out / "summary.json")
    assert summary["accepted"] == 0 and summary["rejected"] == 1
    assert summary["best_val_score"] == summary["baseline_val_score"]
    assert not (out / "skills" / "v0001.md").exists()
    assert (out / "best_skill.md").read_text(encoding="utf-8") == ""
    steps = history(out)
    assert steps[0]["action"] == "rejected" and steps[0]["val_score"] == 0.0
    # Step 2 proposes it again in the same epoch: dropped before selection, nothing to validate.
    assert steps[1]["action"] == "skipped" and steps[1]["dropped"]["rejected earlier"] == 1
    assert not (out / "steps" / "0002" / "rollouts" / "val").exists()
    # Epoch 2 still holds the skill it was rejected against: it keeps the rejection, shows it to
    # its analysts and drops the edit again instead of replaying step 1 (issue 37, item 10).
    assert [s["action"] for s in steps[2:]] == ["skipped", "skipped"]
    assert all(s["dropped"]["rejected earlier"] == 1 for s in steps[2:])
    assert not (out / "steps" / "0003" / "rollouts" / "val").exists()
    assert "Rejected edits" not in analyst_prompts[0]
    assert all("Rejected edits" in p and BAD_RULE in p for p in analyst_prompts[1:])


def test_invalid_optimizer_json_is_retried_then_reported(tmp_path: Path) -> None:
    def handler(request: Request):
        if is_optimizer(request):
            return text("Sure! Here are my edits: add a rule about answer spans.")
        return text(target_answer(request))

    with ScriptedOpenAI(handler) as server:
        out = tmp_path / "run"
        cfg = write_config(tmp_path, server, minibatch_size=4)
        proc = skillgrad("train", "--config", str(cfg), "--out", str(out), "--set", "model.json_retries=2")
        optimizer_calls = [r for r in server.requests if is_optimizer(r)]
    assert proc.returncode == 1
    assert "stage 'reflect'" in proc.stderr and "schema-valid JSON" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(optimizer_calls) == 3  # first try + 2 re-asks
    assert "could not be used" in optimizer_calls[1].user
    # Finished work is kept: the baseline and the step's rollouts are on disk.
    assert len(list((out / "steps" / "0000" / "rollouts" / "val").glob("*/score.json"))) == 4
    assert len(list((out / "steps" / "0001" / "rollouts" / "train").glob("*/score.json"))) == 4
    assert read_json(out / "summary.json")["stopped"] == "error"
    error = read_json(out / "steps" / "0001" / "reflections" / "mb_00.json")["error"]
    assert "schema-valid JSON" in error


def train_with_cut_replies(
    tmp_path: Path, rule: str, cut_reply: Callable[[int], str | None]
) -> tuple[subprocess.CompletedProcess[str], Path, int]:
    """`skillgrad train` over 2 steps of 2 tasks (one JSON re-ask) whose n-th analyst call (from
    1) replies `cut_reply(n)` when that is a text, else proposes `rule`; (the process, its run
    folder, the analyst calls). The form fix adds no first examples to a step without edits
    (optimizer.form_fix=rule): these runs are about the analysts' replies."""
    asked: list[Request] = []

    def handler(request: Request):
        if is_optimizer(request):
            asked.append(request)
            if (reply := cut_reply(len(asked))) is not None:
                return text(reply)
        return world(rule)(request)

    with ScriptedOpenAI(handler) as server:
        out = tmp_path / "run"
        cfg = write_config(tmp_path, server, batch_size=2, minibatch_size=2)
        sets = ["--set", "model.json_retries=1", "--set", "optimizer.form_fix=rule"]
        proc = skillgrad("train", "--config", str(cfg), "--out", str(out), *sets)
    return proc, out, len(asked)


def test_a_step_whose_analysts_reply_without_json_is_skipped_once_an_analyst_answered(tmp_path: Path) -> None:
    """Step 1's analyst answers (its rule is rejected); step 2's replies are cut JSON after the
    retries: the step goes on without edits and the run ends with its final test, not an error."""
    cut = '{"edits": [{"op": "add", "target": "", "content": "Reply with'
    proc, out, asked = train_with_cut_replies(tmp_path, BAD_RULE, lambda n: cut if n > 1 else None)
    assert proc.returncode == 0, proc.stderr
    assert asked == 1 + 2  # step 1 answered; step 2: first try + 1 re-ask
    steps = history(out)
    assert [s["action"] for s in steps] == ["rejected", "skipped"]
    assert "schema-valid JSON" in read_json(out / "steps" / "0002" / "reflections" / "mb_00.json")["error"]
    summary = read_json(out / "summary.json")
    assert summary["stopped"] == "completed" and summary["test"] is not None
    assert read_json(out / "state.json")["reflections_answered"] == 1
    assert "step 2: every reflection failed, the step goes on without edits" in (out / "train.log").read_text(
        encoding="utf-8"
    )


@pytest.mark.parametrize("fence", ["", "```json\n"])
def test_a_first_step_whose_analyst_reply_is_cut_inside_its_json_goes_on(tmp_path: Path, fence: str) -> None:
    """Step 1's analyst opens the JSON object and is cut inside it on every try (a reply run to its
    cap, as the 1.5B's repeated rationale on hyperbaton seed 4): the step goes on without edits
    instead of ending the run, and step 2's analyst is asked and its rule validated. A reply in
    prose on the first step still ends the run (test_invalid_optimizer_json_is_retried_then_reported)."""
    cut = fence + '{"edits": [{"op": "add", "target": "", "rationale": "The expected'
    proc, out, asked = train_with_cut_replies(tmp_path, GOOD_RULE, lambda n: cut if n <= 2 else None)
    assert proc.returncode == 0, proc.stderr
    assert asked == 2 + 1  # step 1: first try + 1 re-ask, both cut; step 2 answered
    steps = history(out)
    assert [s["action"] for s in steps] == ["skipped", "accepted"]
    assert "invalid JSON" in read_json(out / "steps" / "0001" / "reflections" / "mb_00.json")["error"]
    assert GOOD_RULE in (out / "best_skill.md").read_text(encoding="utf-8")
    assert read_json(out / "summary.json")["stopped"] == "completed"
    assert "step 1: every reflection failed, the step goes on without edits" in (out / "train.log").read_text(
        encoding="utf-8"
    )


def test_rate_limits_and_server_errors_are_retried(tmp_path: Path) -> None:
    failures = iter([rate_limited(), server_error(500), server_error(503)])

    def handler(request: Request):
        if not is_optimizer(request):
            failure = next(failures, None)
            if failure is not None:
                return failure
        return world(GOOD_RULE)(request)

    with ScriptedOpenAI(handler) as server:
        out = tmp_path / "run"
        proc = skillgrad("train", "--config", str(write_config(tmp_path, server)), "--out", str(out))
        statuses = len(server.requests)
    assert proc.returncode == 0, proc.stderr
    summary = read_json(out / "summary.json")
    assert summary["accepted"] == 1
    assert summary["usage"]["by_role"]["target"]["calls"] == 16
    assert statuses == 16 + summary["usage"]["by_role"]["optimizer"]["calls"] + 3


def test_results_do_not_depend_on_completion_order(tmp_path: Path) -> None:
    def run(seed: int) -> tuple[list[dict], str]:
        rng = random.Random(seed)

        def handler(request: Request):
            time.sleep(rng.random() * 0.05)
            return world(GOOD_RULE)(request)

        with ScriptedOpenAI(handler) as server:
            out = tmp_path / f"run{seed}"
            cfg = write_config(tmp_path, server, concurrency=4, batch_size=2, minibatch_size=1)
            proc = skillgrad("train", "--config", str(cfg), "--out", str(out), "--no-cache")
            assert proc.returncode == 0, proc.stderr
        steps = [{k: v for k, v in s.items() if k != "usage"} for s in history(out)]
        return steps, (out / "best_skill.md").read_text(encoding="utf-8")

    assert run(1) == run(2)


def test_eval_scores_one_skill(tmp_path: Path) -> None:
    skill = tmp_path / "skill.md"
    skill.write_text(f"# Capitals\n\n{GOOD_RULE}\n", encoding="utf-8")
    with ScriptedOpenAI(world(GOOD_RULE)) as server:
        out = tmp_path / "eval"
        cfg = write_config(tmp_path, server)
        proc = skillgrad(
            "eval", "--config", str(cfg), "--skill", str(skill), "--split", "val", "--out", str(out)
        )
        assert proc.returncode == 0, proc.stderr
        assert not any(is_optimizer(r) for r in server.requests)
    report = read_json(out / "eval.json")
    assert report["mean_score"] == 1.0 and report["n"] == 4 and report["split"] == "val"
    assert len(list((out / "rollouts" / "val").glob("*/score.json"))) == 4


@pytest.mark.parametrize(
    ("mutate", "fragment"),
    [
        (lambda d, c: c.unlink(), "config file not found"),
        (lambda d, c: c.write_text("model: [\n", encoding="utf-8"), "line"),
        (lambda d, c: d.write_text('{"id": "a", "question": "q", "answers": ["x"]}\n{broken\n'), ":2"),
        (lambda d, c: c.write_text(c.read_text() + "skill:\n  init: skill.md\n"), "skill.md"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_writes_nothing(tmp_path: Path, mutate, fragment) -> None:
    with ScriptedOpenAI(world(GOOD_RULE)) as server:
        cfg = write_config(tmp_path, server)
        (tmp_path / "skill.md").write_bytes(b"\xff\xfe bad bytes")
        mutate(tmp_path / "capitals.jsonl", cfg)
        out = tmp_path / "run"
        proc = skillgrad("train", "--config", str(cfg), "--out", str(out))
        assert not server.requests
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().count("\n") == 0 and "Traceback" not in proc.stderr
    assert fragment in proc.stderr
    assert not out.exists()
