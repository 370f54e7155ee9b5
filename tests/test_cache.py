"""Call cache: keys, hits and misses, salts, corrupt entries, concurrency, agent results."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from skillgrad.backends.interface import AgentResult, Message, Reply, Usage
from skillgrad.benchmarks.contract import Task
from skillgrad.cache import (
    CachedAgent,
    CachedAgentResult,
    CachedChatModel,
    CachedReply,
    CallCache,
    request_key,
    saved_usage,
)
from skillgrad.errors import BudgetExceeded, FatalBackendError
from skillgrad.traces.steps import TraceStep

MESSAGES = [Message("system", "be brief"), Message("user", "what is 2+2?")]


class CountingChat:
    name = "fake_chat"
    model = "m1"

    def __init__(self, delay: float = 0.0) -> None:
        self.calls = 0
        self.delay = delay
        self._lock = threading.Lock()

    def complete(
        self, messages: list[Message], *, schema: dict[str, Any] | None = None, effort: Any = None, stage: str
    ) -> Reply:
        with self._lock:
            self.calls += 1
            n = self.calls
        time.sleep(self.delay)
        data = {"n": n} if schema else None
        return Reply(text=f"reply {n}", data=data, usage=Usage(10, 5, 1, 0.01))


class ScriptedAgent:
    name = "fake_agent"
    model = "a1"

    def __init__(self, fail_first: int = 0) -> None:
        self.calls = 0
        self.fail_first = fail_first

    def run(self, task: Task, skill: str, workspace: Path) -> AgentResult:
        self.calls += 1
        if self.calls <= self.fail_first:
            return AgentResult(answer="", is_error=True, error="harness crashed")
        workspace.mkdir(parents=True, exist_ok=True)
        (workspace / "out.txt").write_text(f"solution {self.calls}", encoding="utf-8")
        (workspace / "input.txt").unlink(missing_ok=True)
        trace = [TraceStep("tool_call", "Write out.txt", tool="Write"), TraceStep("text", "done")]
        return AgentResult(
            answer=f"answer {self.calls}",
            trace=trace,
            usage=Usage(100, 20, 3, None),
            raw=[{"type": "result", "n": self.calls}],
            workspace=workspace,
        )


def chat(tmp_path: Path, inner: CountingChat | None = None, **kw: Any) -> CachedChatModel:
    return CachedChatModel(inner or CountingChat(), CallCache(tmp_path / "cache"), sampling={"t": 0}, **kw)


def test_hit_returns_stored_reply_unpaid(tmp_path: Path) -> None:
    model = chat(tmp_path)
    first = model.complete(MESSAGES, stage="reflect")
    second = model.complete(MESSAGES, stage="merge")  # the stage label is not part of the key
    assert model.inner.calls == 1  # type: ignore[attr-defined]
    assert not isinstance(first, CachedReply) and saved_usage(first) is None
    assert isinstance(second, CachedReply)
    assert second.text == first.text
    assert second.usage.calls == 0 and second.usage.total_tokens == 0 and second.usage.cost_usd == 0.0
    assert saved_usage(second) == Usage(10, 5, 1, 0.01)
    stats = model.stats.to_json()
    assert stats["hits"] == 1 and stats["misses"] == 1 and stats["saved"]["input_tokens"] == 10


def test_key_parts_and_salt(tmp_path: Path) -> None:
    inner = CountingChat()
    model = chat(tmp_path, inner)
    model.complete(MESSAGES, stage="s")
    model.complete(MESSAGES, effort="high", stage="s")
    model.complete(MESSAGES, schema={"type": "object"}, stage="s")
    model.with_salt("rollout-2").complete(MESSAGES, stage="s")
    CachedChatModel(inner, model.cache, sampling={"t": 1}).complete(MESSAGES, stage="s")
    assert inner.calls == 5
    model.with_salt("rollout-2").complete(MESSAGES, stage="s")
    assert inner.calls == 5  # same salt replays
    assert model.stats.hits == 1  # with_salt shares the counters


def test_schema_data_round_trips(tmp_path: Path) -> None:
    model = chat(tmp_path)
    first = model.complete(MESSAGES, schema={"type": "object"}, stage="s")
    again = chat(tmp_path).complete(MESSAGES, schema={"type": "object"}, stage="s")  # a new process
    assert again.data == first.data == {"n": 1}


def test_canonical_key_ignores_dict_order() -> None:
    a = {"backend": "x", "sampling": {"temperature": 0, "max_tokens": 5}, "schema": {"b": 1, "a": [1, 2]}}
    b = {"schema": {"a": [1, 2], "b": 1}, "sampling": {"max_tokens": 5, "temperature": 0}, "backend": "x"}
    assert request_key(a) == request_key(b)
    assert request_key(a) != request_key({**a, "salt": "1"})


@pytest.mark.parametrize(
    "damage",
    [
        lambda p: p.write_text("{not json", encoding="utf-8"),
        lambda p: p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2]),
        lambda p: p.write_bytes(b"\xff\xfe\x00"),
        lambda p: p.write_text(p.read_text(encoding="utf-8").replace("reply 1", "reply X"), encoding="utf-8"),
        lambda p: p.write_text(json.dumps({"version": 1, "key": "other"}), encoding="utf-8"),
        lambda p: p.write_text("[]", encoding="utf-8"),
    ],
    ids=["garbage", "truncated", "binary", "tampered", "wrong-key", "wrong-shape"],
)
def test_corrupt_entry_is_a_miss(tmp_path: Path, damage: Any) -> None:
    inner = CountingChat()
    model = chat(tmp_path, inner)
    model.complete(MESSAGES, stage="s")
    (entry,) = list((tmp_path / "cache").rglob("*.json"))
    damage(entry)
    reply = model.complete(MESSAGES, stage="s")
    assert inner.calls == 2 and reply.text == "reply 2"
    assert model.cache.corrupt == 1
    assert model.complete(MESSAGES, stage="s").text == "reply 2"  # rewritten, valid again


def test_disabled_cache_always_calls(tmp_path: Path) -> None:
    inner = CountingChat()
    model = CachedChatModel(inner, CallCache(tmp_path / "c", enabled=False), sampling={})
    model.complete(MESSAGES, stage="s")
    model.complete(MESSAGES, stage="s")
    assert inner.calls == 2 and not (tmp_path / "c").exists()


def test_concurrent_identical_requests_pay_once(tmp_path: Path) -> None:
    inner = CountingChat(delay=0.05)
    model = chat(tmp_path, inner)
    replies: list[Reply] = []
    lock = threading.Lock()

    def worker(i: int) -> None:
        msgs = [Message("user", f"q{i % 4}")]
        reply = model.complete(msgs, stage="s")
        with lock:
            replies.append(reply)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(32)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert inner.calls == 4 and len(replies) == 32
    assert model.stats.hits == 28 and model.stats.misses == 4


def test_concurrent_writers_of_one_key_leave_a_valid_entry(tmp_path: Path) -> None:
    caches = [CallCache(tmp_path / "c") for _ in range(8)]  # separate instances: no shared claim
    key = request_key({"q": 1})
    misses: list[int] = []  # checked here: an assert in a thread only warns

    def writer(i: int) -> None:
        for _ in range(20):
            caches[i].put(key, {"text": "same", "data": None, "usage": {}})
            if caches[i].get(key) is None:
                misses.append(i)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert misses == []  # a reader never sees a half-written entry
    assert caches[0].get(key) == {"text": "same", "data": None, "usage": {}}
    assert not list((tmp_path / "c").rglob("*.tmp"))


def test_cache_redacts_before_writing(tmp_path: Path) -> None:
    cache = CallCache(
        tmp_path / "c", redact=lambda obj: json.loads(json.dumps(obj).replace("sk-secret", "[R]"))
    )
    CachedChatModel(CountingChat(), cache, sampling={}).complete([Message("user", "sk-secret")], stage="s")
    text = next((tmp_path / "c").rglob("*.json")).read_text(encoding="utf-8")
    assert "sk-secret" not in text


TASK = Task("t1", "write the solution", context="ctx", answers=("42",), meta={"b": 1, "a": 2})


def prepared(tmp_path: Path, name: str) -> Path:
    ws = tmp_path / name
    ws.mkdir()
    (ws / "input.txt").write_text("data", encoding="utf-8")
    return ws


def test_agent_hit_restores_workspace_and_result(tmp_path: Path) -> None:
    inner = ScriptedAgent()
    agent = CachedAgent(inner, CallCache(tmp_path / "c"), settings={"effort": "low"})
    first = agent.run(TASK, "skill v1", prepared(tmp_path, "w1"))
    ws2 = prepared(tmp_path, "w2")
    second = agent.run(TASK, "skill v1", ws2)
    assert inner.calls == 1
    assert isinstance(second, CachedAgentResult)
    assert second.answer == first.answer and second.trace == first.trace and second.raw == first.raw
    assert second.workspace == ws2 and second.usage.calls == 0
    assert saved_usage(second) == Usage(100, 20, 3, None)
    assert (ws2 / "out.txt").read_text(encoding="utf-8") == "solution 1"
    assert not (ws2 / "input.txt").exists()  # the agent deleted it; the replay does too


def test_agent_key_covers_skill_task_and_prepared_workspace(tmp_path: Path) -> None:
    inner = ScriptedAgent()
    agent = CachedAgent(inner, CallCache(tmp_path / "c"))
    agent.run(TASK, "skill v1", prepared(tmp_path, "w1"))
    agent.run(TASK, "skill v2", prepared(tmp_path, "w2"))
    agent.run(Task("t1", "write the solution", context="other"), "skill v1", prepared(tmp_path, "w3"))
    ws = prepared(tmp_path, "w4")
    (ws / "input.txt").write_text("different data", encoding="utf-8")
    agent.run(TASK, "skill v1", ws)
    assert inner.calls == 4
    agent.with_salt("again").run(TASK, "skill v1", prepared(tmp_path, "w5"))
    assert inner.calls == 5


def test_agent_errors_are_never_cached(tmp_path: Path) -> None:
    inner = ScriptedAgent(fail_first=2)
    agent = CachedAgent(inner, CallCache(tmp_path / "c"))
    assert agent.run(TASK, "s", prepared(tmp_path, "w1")).is_error
    assert agent.run(TASK, "s", prepared(tmp_path, "w2")).is_error
    ok = agent.run(TASK, "s", prepared(tmp_path, "w3"))
    assert not ok.is_error and inner.calls == 3
    assert isinstance(agent.run(TASK, "s", prepared(tmp_path, "w4")), CachedAgentResult)


class RaisingAgent(ScriptedAgent):
    """A target whose run ends by raising, after attempts it paid for (a retry the budget refused)."""

    def __init__(self, error: Exception) -> None:
        super().__init__()
        self.error = error

    def run(self, task: Task, skill: str, workspace: Path) -> AgentResult:
        raise self.error


def budget_stop() -> BudgetExceeded:
    stop = BudgetExceeded("budget.max_calls reached")
    stop.paid = Usage(20, 4, 1, None)  # as backends/retry.py's renew sets it
    return stop


@pytest.mark.parametrize("enabled", [True, False])
@pytest.mark.parametrize(
    "error", [budget_stop(), FatalBackendError("key refused", paid=Usage(20, 4, 1, None))]
)
def test_a_run_that_raises_reports_what_its_attempts_paid(
    tmp_path: Path, enabled: bool, error: Exception
) -> None:
    """paid.jsonl gets the attempts of a run that raised: with a server that answers late, a
    retry refused at budget.max_calls left the ledger at 100 calls and paid.jsonl at 94."""
    paid: list[Usage] = []
    agent = CachedAgent(RaisingAgent(error), CallCache(tmp_path / "c", enabled=enabled), on_paid=paid.append)
    with pytest.raises(type(error)):
        agent.run(TASK, "s", prepared(tmp_path, "w"))
    assert paid == [Usage(20, 4, 1, None)]


def test_agent_workspace_too_large_is_not_cached(tmp_path: Path) -> None:
    inner = ScriptedAgent()
    agent = CachedAgent(inner, CallCache(tmp_path / "c"), max_workspace_bytes=4)
    agent.run(TASK, "s", prepared(tmp_path, "w1"))
    agent.run(TASK, "s", prepared(tmp_path, "w2"))
    assert inner.calls == 2 and agent.stats.uncacheable == 2


def test_agent_entry_with_traversal_path_is_rejected(tmp_path: Path) -> None:
    inner = ScriptedAgent()
    cache = CallCache(tmp_path / "c")
    agent = CachedAgent(inner, cache)
    agent.run(TASK, "s", prepared(tmp_path, "w1"))
    (entry,) = list((tmp_path / "c").rglob("*.json"))
    data = json.loads(entry.read_text(encoding="utf-8"))
    payload = data["payload"]
    payload["files"] = {"../escape.txt": "eA=="}
    key = data["key"]
    cache.put(key, payload)  # a well-formed entry (valid checksum) with a hostile path
    agent.run(TASK, "s", prepared(tmp_path, "w2"))
    assert inner.calls == 2 and not (tmp_path / "escape.txt").exists()
