"""`skillgrad train` against the scripted OpenAI server: the analyst quotes a task's expected
answer first and states the rule second; at learning rate 1 the quote would take the one slot.
It is dropped before validation (no target call ever sees it) and the rule is validated and kept.
The analyst's prompt carries the step's census of misses and a passed/failed contrast."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.fakes.openai_server import Request, ScriptedOpenAI, json_reply, text
from tests.test_train_e2e import CAPITALS, GOOD_RULE, is_optimizer, read_json, skillgrad, write_config

SKILL = "# Capitals\n\nAnswer the question.\n"
SHORT_COUNTRY = "Japan"  # the target already answers this one with the span alone: a pass to contrast


def target(request: Request) -> str:
    country = request.user.split("capital of ")[1].split("?")[0]
    city = CAPITALS[country]
    if GOOD_RULE in request.system or country == SHORT_COUNTRY:
        return city
    return f"I believe the capital of {country} is probably {city}, as far as I know."


def quoted_answer(prompt: str) -> str:
    """The expected answer of the first failed task the analyst is shown."""
    failed = re.search(
        r"FAILED \(score [0-9.]+\)\nQuestion: [^\n]*\n+Agent's answer: [^\n]*\nExpected answer: (\w+)", prompt
    )
    assert failed is not None, prompt
    return failed.group(1)


def test_a_quoted_answer_is_dropped_before_validation_and_the_rule_is_kept(tmp_path: Path) -> None:
    quotes: list[str] = []

    def handler(request: Request):
        if is_optimizer(request):
            quotes.append(quoted_answer(request.user))
            quote = {"content": f"Answer with the city, e.g. {quotes[-1]}.", "op": "add", "target": "end"}
            rule = {"content": GOOD_RULE, "op": "add", "target": "end", "rationale": "extra words"}
            return json_reply({"edits": [{**quote, "rationale": "quote"}, rule]})
        return text(target(request), 20, 8)

    skill = tmp_path / "skill.md"
    skill.write_text(SKILL, encoding="utf-8")
    with ScriptedOpenAI(handler) as server:
        cfg = write_config(tmp_path, server, batch_size=4, minibatch_size=4)
        sets = ["optimizer.learning_rate=1", "optimizer.min_learning_rate=1", f"skill.init={skill}"]
        sets += ["optimizer.error_census=true", "optimizer.contrasts=2"]
        out = tmp_path / "run"
        proc = skillgrad(
            "train", "--config", str(cfg), "--out", str(out), *[a for s in sets for a in ("--set", s)]
        )
        assert proc.returncode == 0, proc.stderr
        requests = list(server.requests)

    analyst = [r for r in requests if is_optimizer(r)]
    assert len(analyst) == 1 and len(quotes) == 1
    prompt = analyst[0].user
    assert "## The answers of this whole step, counted by kind (4 tasks" in prompt
    assert "failed: the answer contains the expected answer plus extra words" in prompt
    assert "PASSED, task" in prompt and f"answered '{CAPITALS[SHORT_COUNTRY]}'" in prompt
    merged = read_json(out / "steps" / "0001" / "merged_patch.json")
    assert [e["content"] for e in merged["selected"]] == [GOOD_RULE]
    assert merged["dropped_counts"]["copies task text"] == 1
    dropped = merged["dropped"][0]
    assert dropped["dropped_because"] == "copies task text"
    assert dropped["detail"].endswith(f"quotes its expected answer '{quotes[0]}'")
    # no target call was ever made with the quote in its skill; the rule was validated and kept
    targets = [r for r in requests if not is_optimizer(r)]
    assert not any(f"e.g. {quotes[0]}" in r.system for r in targets)
    assert any(GOOD_RULE in r.system for r in targets)
    assert read_json(out / "steps" / "0001" / "gate.json")["accepted"] is True
    best = (out / "best_skill.md").read_text(encoding="utf-8")
    assert GOOD_RULE in best and quotes[0] not in best
    assert read_json(out / "summary.json")["task_text_copies"] == 1


def test_the_replay_bench_rebuilds_the_prompt_and_judges_each_edit(tmp_path: Path) -> None:
    """bench/analyst_replay.py on the run folder of a scripted run: the prompt rebuilt from the
    stored rollouts carries the census; the quote is judged a copy, the rule kept."""
    prompts: list[str] = []

    def handler(request: Request):
        if not is_optimizer(request):
            return text(target(request), 20, 8)
        prompts.append(request.user)
        quote = {
            "content": f"e.g. {quoted_answer(request.user)}",
            "op": "add",
            "target": "end",
            "rationale": "q",
        }
        rule = {"content": GOOD_RULE, "op": "add", "target": "end", "rationale": "r"}
        return json_reply({"edits": [quote, rule]})

    with ScriptedOpenAI(handler) as server:
        cfg = write_config(tmp_path, server, batch_size=4, minibatch_size=4)
        out = tmp_path / "run"
        on = ["--set", "optimizer.error_census=true", "--set", "optimizer.contrasts=2"]
        proc = skillgrad(
            "train", "--config", str(cfg), "--out", str(out), "--set", "optimizer.learning_rate=1", *on
        )
        assert proc.returncode == 0, proc.stderr
        bench = Path(__file__).resolve().parents[1] / "bench" / "analyst_replay.py"
        replay = subprocess.run(
            [sys.executable, str(bench), str(out), "--config", str(cfg), *on],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert replay.returncode == 0, replay.stderr
    assert len(prompts) == 2 and prompts[1] == prompts[0]  # rebuilt: the same prompt as the run's
    lines = replay.stdout.splitlines()
    assert lines[0].startswith("## 0001/mb_00")
    assert "=> copies task text (task q" in lines[2] and "quotes its expected answer" in lines[2]
    assert GOOD_RULE in lines[3] and lines[4].strip() == "=> kept"
