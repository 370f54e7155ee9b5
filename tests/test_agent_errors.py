"""An agent error is not a zero (issue 37): a task whose agent failed runs again within
`train.rollout_retries`, then counts as missing: left out of the gate's pairing, never memoised as
a score in state.json, never cached, shown in gate.json, history.jsonl and summary.json. A
candidate that passes only with its errors left out is held, not rejected: its edits stay allowed.

The world (a scripted OpenAI-compatible server, both roles): five val items. The initial skill is
right on v0 and v1, wrong on v2 and v3, and its runs of v4 always fail (an outage). RULE_A changes
nothing but answers v4: with the outage as a zero it would win an item for free. RULE_B fixes v2
but its runs of v0 and v1 always fail. The first run of v3 ever made fails once (a blip: retried).
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from pathlib import Path

import skillgrad
from skillgrad import AgentResult, Score, Task
from skillgrad.skilldoc import SkillDoc
from tests.fakes.openai_server import Request, Response, ScriptedOpenAI, json_reply, server_error, text

RULE_A = "Rule A: always give the code."
RULE_B = "Rule B: look the code up twice."
SPLITS = {
    "train": [f"t{i}" for i in range(6)],
    "val": [f"v{i}" for i in range(5)],
    "test": ["x0", "x1"],
}


class Items:
    name = "codes"

    def load(self, split: str) -> list[Task]:
        return [Task(i, f"What is the code of item {i}?", answers=(f"code-{i}",)) for i in SPLITS[split]]

    def score(self, task: Task, result: AgentResult) -> Score:
        ok = task.answers[0] in result.answer
        return Score(float(ok), ok, "right" if ok else f"expected {task.answers[0]}")


class World:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.asked: Counter[tuple[str, str]] = Counter()  # (item, the rule in the skill) -> requests
        self.blipped = False

    def __call__(self, request: Request) -> Response:
        if "You improve a SKILL document" in request.system:
            prompt = request.user
            skill = prompt.split("<skill>")[1].split("</skill>")[0]
            rejected = prompt.split("## Rejected edits")[1] if "## Rejected edits" in prompt else ""
            rule = next((r for r in (RULE_A, RULE_B) if r not in skill and r not in rejected), None)
            edits = [{"op": "add", "target": "", "content": rule, "rationale": "misses"}] if rule else []
            return json_reply({"edits": edits}, usage=(300, 40))
        item = request.user.split("item ")[1].split("?")[0]
        rule = "A" if RULE_A in request.system else "B" if RULE_B in request.system else "-"
        with self.lock:
            self.asked[(item, rule)] += 1
            blip = item == "v3" and not self.blipped
            self.blipped = True if item == "v3" else self.blipped
        if blip or item == "x1" or (item == "v4" and rule != "A") or (rule == "B" and item in ("v0", "v1")):
            return server_error(500)
        right = item in ("v0", "v1", "x0") or (item == "v4" and rule == "A") or (item == "v2" and rule == "B")
        return text(f"code-{item}" if right else "no idea", 20, 4)


def config(server: ScriptedOpenAI, cache: Path) -> dict:
    return {
        "benchmark": {"train_size": 6, "val_size": 5, "test_size": 2},
        "model": {
            "backend": "openai_chat",
            "base_url": server.base_url,
            "api_key": "sk-test-errors-0123456789",
            "optimizer_model": "fake-optimizer",
            "target_model": "fake-target",
            "max_retries": 0,  # a 500 is the agent's failure at once: the trainer's retry is what is tested
        },
        "train": {"epochs": 1, "batch_size": 2, "minibatch_size": 2, "concurrency": 1},
        # form_fix=rule: RULE_B follows RULE_A (the form fix's first examples would take its step)
        "optimizer": {"learning_rate": 1, "min_learning_rate": 1, "form_fix": "rule"},
        "cache": {"dir": str(cache)},
    }


def read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def test_agent_errors_are_retried_then_missing_never_zeros(tmp_path: Path) -> None:
    world = World()
    with ScriptedOpenAI(world) as server:
        result = skillgrad.train(config(server, tmp_path / "cache"), benchmark=Items(), out=tmp_path / "run")
    run = tmp_path / "run"
    state = read(run / "state.json")
    baseline = SkillDoc("").content_hash
    # the blip on v3 was run again and scored: a failure is not cached, so the retry was a real call
    assert world.asked[("v3", "-")] == 2 and state["val_results"][baseline]["v3"] == [0.0]
    # the outage on v4: tried 1 + train.rollout_retries times, then missing, never a 0 in the memo
    assert world.asked[("v4", "-")] == 2
    assert state["val_results"][baseline]["v4"] == [] and state["val_missing"][baseline] == {"v4": [0]}
    assert result.baseline_val == 0.5  # v0, v1 right and v2, v3 wrong: the missing v4 is no zero

    history = [json.loads(line) for line in (run / "history.jsonl").read_text().splitlines()]
    assert [h["edits"][0]["content"] for h in history] == [RULE_A, RULE_B, RULE_B]
    # RULE_A's only "gain" is the item the incumbent could not run: no free win, it is out
    first = read(run / "steps" / "0001" / "gate.json")
    assert history[0]["action"] == "rejected" and not first["accepted"] and first["missing"] == 0
    assert first["reason"] == "validation 0.5000 ties current 0.5000 on the 4 items both have outcomes for"
    # RULE_B passes with its failed runs left out (v2 fixed, v3 as before), not with them as
    # failures (v0 and v1 lost): held, not kept, and its edit is not refused for the epoch
    second = read(run / "steps" / "0002" / "gate.json")
    assert second["held"] and not second["accepted"] and second["missing"] == 3  # v0, v1, v4
    assert "held: passes with 3 run(s) whose agent failed left out" in second["reason"]
    assert history[1]["missing"] == 3 and history[1]["val_score"] == 0.5  # v2 right, v3 wrong
    # ... so step 3 proposes it again; the missing runs run again (they were never scores)
    assert world.asked[("v0", "B")] == world.asked[("v1", "B")] == 4  # 2 validations x (1 + 1 retry)
    assert history[2]["cached"] is False and read(run / "steps" / "0003" / "gate.json")["held"]
    assert all(e["content"] != RULE_B for e in state["rejected_edits"])
    assert [e["content"] for e in state["rejected_edits"]] == [RULE_A]

    summary = read(run / "summary.json")
    assert summary["val_missing"] == 1 + 3  # the baseline's v4; RULE_B's v0, v1 and v4
    assert summary["test"]["missing"] == {"v0000": 1} and summary["test"]["baseline"] == 1.0  # x1 n/a
