"""Issue 40, item 2: the budget counts what the provider bills. The SDKs' own retries are off
(`max_retries=0`); skillgrad's one retry loop reserves each attempt against `budget.max_calls`
before it is sent and meters it when it ends, so a server that answers late (each attempt it
holds past `model.timeout_s` is billed though the client gave up) never sees more requests than
the cap, never more open at once than `train.concurrency`, and the ledger, `paid.jsonl` and the
server count the same calls."""

from __future__ import annotations

import contextlib
import json
import threading
from pathlib import Path
from typing import Any

import skillgrad
from skillgrad import AgentResult, Score, Task
from skillgrad.values import Message
from tests.fakes.openai_server import Request, Response, ScriptedOpenAI, Text, json_reply

CAP, CONCURRENCY, TIMEOUT_S = 100, 16, 0.5
FAKE_KEY = "sk-test-FAKE-billed-0123456789abcdef"


class LateWorld:
    """Answers 2 requests in 5 (in arrival order) only after 3 timeouts: the client hangs up."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.count = 0

    def __call__(self, request: Request) -> Response:
        with self.lock:
            self.count += 1
            late = self.count % 5 in (1, 3)
        delay = 3 * TIMEOUT_S if late else 0.0
        if "You improve a SKILL document" in request.system:
            edit = {"op": "add", "target": "", "content": "Answer with the code only.", "rationale": "r"}
            reply = json_reply({"edits": [edit]}, usage=(300, 40))
            return Text(reply.content, usage=reply.usage, delay_s=delay)
        number = request.user.split("code of item ", 1)[-1].split("?", 1)[0]
        return Text(f"C{number}" if int(number) % 2 else "no idea", usage=(20, 4), delay_s=delay)


def tasks(n: int) -> list[Task]:
    return [Task(f"t{i:03d}", f"What is the code of item {i}?", answers=(f"C{i}",)) for i in range(n)]


def exact(answer: str, task: Task) -> bool:
    return answer.strip() == task.answers[0]


def config(server: ScriptedOpenAI, cache: Path) -> dict[str, Any]:
    return {
        "benchmark": {"train_size": 40, "val_size": 40, "test_size": 0, "seed": 0},
        "model": {
            "backend": "openai_chat", "base_url": server.base_url, "api_key": FAKE_KEY,
            "optimizer_model": "fake-optimizer", "target_model": "fake-target", "timeout_s": TIMEOUT_S,
        },
        "train": {"epochs": 1, "batch_size": 20, "minibatch_size": 10, "concurrency": CONCURRENCY},
        "budget": {"max_calls": CAP},
        "cache": {"dir": str(cache)},
    }  # fmt: skip


def paid_calls(out: Path) -> int:
    lines = (out / "paid.jsonl").read_text(encoding="utf-8").splitlines()
    return sum(json.loads(line)["usage"]["calls"] for line in lines)


def test_a_late_server_sees_no_more_calls_than_the_cap_and_the_ledger_counts_each(tmp_path: Path) -> None:
    world = LateWorld()
    with ScriptedOpenAI(world) as server:
        out = tmp_path / "run"
        result = skillgrad.train(
            config(server, tmp_path / "cache"), benchmark=tasks(80), scorer=exact, out=out
        )
        seen, most_open, abandoned = len(server.requests), server.max_open, server.abandoned
    figures = (
        f"server saw {seen} requests ({abandoned} held past the timeout), at most {most_open} open; "
        f"ledger {result.usage.total.calls}, paid.jsonl {paid_calls(out)}; "
        f"cap {CAP}, concurrency {CONCURRENCY}"
    )
    print(figures)
    assert result.stopped == "budget", figures
    assert abandoned > 0, figures  # the late answers did happen, and were retried
    assert seen <= CAP, figures  # every attempt was reserved before it was sent
    assert most_open <= CONCURRENCY, figures  # a retry waits for its own attempt to end
    assert result.usage.total.calls == paid_calls(out) == seen, figures  # each attempt is metered


class JudgedFacts:
    """A benchmark object scored by the run's judge (the optimizer role), one judge call a task."""

    name = "judged-facts"

    def __init__(self, n: int) -> None:
        self.tasks = tasks(n)
        self.judge: Any = None

    def load(self, split: str) -> list[Task]:
        return self.tasks

    def use_judge(self, judge: Any) -> None:
        self.judge = judge

    def score(self, task: Task, result: AgentResult) -> Score:
        messages = [Message("system", "JUDGE"), Message("user", f"{task.question} {result.answer}")]
        reply = self.judge.complete(messages, stage="judge")
        return Score(1.0 if reply.text == "yes" else 0.0, reply.text == "yes", "judged")


def test_judge_calls_are_reserved_like_every_other_call(tmp_path: Path) -> None:
    """Issue 37, item 5: a judge's call reserves before it starts, so the rollouts in flight and
    their judges together stay within budget.max_calls."""
    cap = 10

    def answer(request: Request) -> Response:
        return Text("yes" if request.system == "JUDGE" else "C1", usage=(10, 1), delay_s=0.05)

    with ScriptedOpenAI(answer) as server:
        cfg = config(server, tmp_path / "cache")
        cfg["budget"]["max_calls"], cfg["train"]["concurrency"] = cap, 8
        cfg["benchmark"] = {"train_size": 0, "val_size": 30, "test_size": 0}
        with contextlib.suppress(skillgrad.BudgetExceeded):  # the evaluation is cut short at the cap
            skillgrad.evaluate(cfg, "Answer.", benchmark=JudgedFacts(30), split="val", out=tmp_path / "eval")
        seen = len(server.requests)
        judged = sum(1 for r in server.requests if r.system == "JUDGE")
    print(f"server saw {seen} requests ({judged} of the judge); cap {cap}")
    assert judged > 0 and seen <= cap
