"""`skillgrad train --estimate`: counts from the loaded tasks and the rendered templates, printed
assumptions, and a projection within 1.5x of a real run of the shipped qa config (the quickstart's
real run is compared in tests/test_quickstart.py)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from skillgrad.benchmarks.contract import Task
from skillgrad.config import Config
from skillgrad.session.projection import Assumptions, analyst_prompt_chars, estimate, target_prompt_chars
from tests.fakes.openai_server import Request, ScriptedOpenAI, json_reply, text
from tests.test_train_e2e import is_optimizer, skillgrad

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.timeout(300)


def _cfg(target: str = "openai_chat", **train: int) -> Config:
    return Config.model_validate(
        {
            "model": {"backend": "openai_chat", "target_backend": target, "max_output_tokens": 1000},
            "train": {"epochs": 2, "batch_size": 4, "minibatch_size": 3, **train},
        }
    )


def _tasks(n: int, context_chars: int = 0) -> list[Task]:
    return [Task(f"t{i}", f"Question number {i}?", "c" * context_chars or None, ("a",)) for i in range(n)]


NO_RETRIES = Assumptions(retry_share=0.0)


def test_calls_follow_the_loop() -> None:
    splits = {"train": _tasks(10), "val": _tasks(5), "test": _tasks(3)}
    cfg = _cfg()
    cfg.train.overlap, cfg.optimizer.validation = False, "full"
    est = estimate(cfg, splits, "", NO_RETRIES)
    # batches of 4, 4, 2 -> 3 steps per epoch; analyst calls per epoch 2 + 2 + 1
    assert est["steps_per_epoch"] == 3 and est["steps"] == 6
    calls = {stage: v["calls"] for stage, v in est["by_stage"].items()}
    assert calls == {"baseline": 5, "rollout": 20, "validate": 30, "test": 6, "reflect": 10}
    assert est["total"]["calls"] == 71
    # racing in 2 waves: half the candidates stop after the first; overlap: half the steps are
    # rejected and the next batch (4) is rolled out again
    default = {stage: v["calls"] for stage, v in estimate(_cfg(), splits, "", NO_RETRIES)["by_stage"].items()}
    assert default["validate"] == round(30 * 0.75) and default["rollout"] == 20 + round(0.5 * 5 * 4)
    assert est["measured"]["tasks"] == {"train": 10, "val": 5, "test": 3}
    assert set(est["assumptions"]) >= {"chars_per_token", "answer_tokens", "validated_share", "not_counted"}


def test_retries_count_as_calls_where_skillgrad_makes_them() -> None:
    """Issue 40, item 2: a retry is a billed call that budget.max_calls counts, so the projection
    counts them: each stage's calls plus the assumed share retried, unless its backend does not
    retry through skillgrad (the local model; a harness target's session retries inside)."""
    splits = {"train": _tasks(40), "val": _tasks(20), "test": _tasks(10)}
    plain, retried = estimate(_cfg(), splits, "", NO_RETRIES), estimate(_cfg(), splits, "")
    for stage, counted in retried["by_stage"].items():
        calls = plain["by_stage"][stage]["calls"]
        assert counted["retries"] == round(calls * Assumptions().retry_share) > 0
        assert counted["calls"] == calls + counted["retries"]
    assert retried["total"]["calls"] == plain["total"]["calls"] + sum(
        s["retries"] for s in retried["by_stage"].values()
    )
    harness = estimate(_cfg("claude_code_exec"), splits, "")["by_stage"]
    assert harness["rollout"]["retries"] == 0 < harness["reflect"]["retries"]
    never = _cfg()
    never.model.max_retries = 0
    assert all(s["retries"] == 0 for s in estimate(never, splits, "")["by_stage"].values())
    cap = _cfg()
    cap.budget.max_calls = plain["total"]["calls"]  # enough without retries, not with them
    assert (
        estimate(cap, splits, "")["budget_check"]
        and not estimate(cap, splits, "", NO_RETRIES)["budget_check"]
    )


def test_tokens_come_from_the_tasks_and_the_rendered_templates() -> None:
    short, long = {"train": _tasks(4), "val": _tasks(2)}, {"train": _tasks(4, 4000), "val": _tasks(2, 4000)}
    a, b = estimate(_cfg(), short, ""), estimate(_cfg(), long, "")
    per_call = (b["by_stage"]["baseline"]["input_tokens"] - a["by_stage"]["baseline"]["input_tokens"]) / 2
    assert per_call == pytest.approx(4000 / 4, abs=10)  # the context, at 4 chars a token
    # the analyst's prompt is its real rendering: the system template alone is over 1000 chars
    assert analyst_prompt_chars(_cfg(), "", _tasks(1), Assumptions(), 0) > 1500
    assert target_prompt_chars("", _tasks(1)) > len("Question number 0?")
    skill = "x" * 2000
    assert target_prompt_chars(skill, _tasks(1)) - target_prompt_chars("", _tasks(1)) >= 1990
    # a capped target answers at most its cap
    capped = _cfg()
    capped.model.target_max_output_tokens = 32
    assert estimate(capped, short, "")["by_stage"]["baseline"]["output_tokens"] == 2 * 32


def test_agent_harness_turns_traces_and_budget_note() -> None:
    cfg = _cfg("claude_code_exec")
    cfg.budget.max_calls = 10
    splits = {"train": _tasks(4), "val": _tasks(2)}
    est = estimate(cfg, splits, "")
    assert est["assumptions"]["agent_turns"] == 8
    chat = estimate(_cfg(), splits, "")
    assert est["by_stage"]["baseline"]["input_tokens"] == 8 * chat["by_stage"]["baseline"]["input_tokens"]
    per_reflect = est["by_stage"]["reflect"]["input_tokens"] / est["by_stage"]["reflect"]["calls"]
    chat_reflect = chat["by_stage"]["reflect"]["input_tokens"] / chat["by_stage"]["reflect"]["calls"]
    assert per_reflect - chat_reflect == pytest.approx(3 * 4000 / 4, abs=2)  # a trace view per task
    assert est["budget_check"] and "max_calls" in est["budget_check"][0]
    assert estimate(cfg, {"train": [], "val": _tasks(2)}, "")["steps"] == 0


WORDS = ["the", "river", "town", "market", "bridge", "north", "winter", "harbour", "old", "stone"]


def _qa_rows(n: int) -> list[dict[str, object]]:
    rng = random.Random(0)
    rows = []
    for i in range(n):
        context = " ".join(rng.choice(WORDS) for _ in range(120)) + f". The keeper of item {i} is Mara{i}."
        rows.append(
            {"id": f"q{i}", "question": f"Who keeps item {i}?", "context": context, "answers": [f"Mara{i}"]}
        )
    return rows


def _qa_world(request: Request):
    """A chat model's replies, usage counted by the server at ~4 characters a token; each analyst
    reply proposes new rules, so every step validates a candidate."""
    if is_optimizer(request):
        n = len(request.user) % 97
        edit = {
            "content": f"Answer with the name only, as the context writes it (rule {n}).",
            "op": "add",
            "target": "end",
            "rationale": "answers carried a sentence around the name",
        }
        return json_reply({"edits": [edit, {**edit, "content": f"Do not explain the answer ({n})."}]})
    item = request.user.split("Who keeps item ")[1].split("?")[0]
    return text(
        f"According to the context, the keeper of item {item} is Mara{item}; it says so in its last sentence."
    )


def test_estimate_of_the_shipped_qa_config_is_within_1_5x_of_the_run(tmp_path: Path) -> None:
    data = tmp_path / "items.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in _qa_rows(70)), encoding="utf-8")
    with ScriptedOpenAI(_qa_world) as server:
        sets = [
            f"benchmark.data={data}",
            "model.backend=openai_chat",
            f"model.base_url={server.base_url}",
            "model.api_key=sk-test-FAKE-estimate",
            f"cache.dir={tmp_path / 'cache'}",
        ]
        args = ["--config", str(REPO / "configs" / "qa.yaml"), *[a for s in sets for a in ("--set", s)]]
        projected = skillgrad("train", *args, "--estimate", "--json")
        assert projected.returncode == 0, projected.stderr
        assert not server.requests
        run = skillgrad("train", *args, "--out", str(tmp_path / "run"))
        assert run.returncode == 0, run.stderr
    est = json.loads(projected.stdout)["total"]
    real = json.loads((tmp_path / "run" / "summary.json").read_text(encoding="utf-8"))["usage"]["total"]
    real_tokens = real["input_tokens"] + real["output_tokens"]
    assert 1 / 1.5 <= est["calls"] / real["calls"] <= 1.5, (est, real)
    assert 1 / 1.5 <= est["total_tokens"] / real_tokens <= 1.5, (est, real)
