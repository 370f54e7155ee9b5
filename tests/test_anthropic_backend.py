"""anthropic_chat on the official anthropic SDK, against the scripted fake Messages API."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from skillgrad.backends import anthropic_api
from skillgrad.backends.interface import Message
from skillgrad.backends.registry import availability, make_agent, make_chat
from skillgrad.benchmarks.contract import Task
from skillgrad.config import Config
from skillgrad.errors import BackendError, StructuredOutputError
from tests.fakes.anthropic_server import (
    FakeAnthropic,
    FakeReply,
    FakeReplyList,
    FakeRequest,
    http_error,
    text,
)

SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
KEY = "sk-ant-secret-test-key"


def make_cfg(api: FakeAnthropic | None, **model: Any) -> Config:
    values: dict[str, Any] = {"backend": "anthropic_chat", "max_retries": 0, "json_retries": 1, **model}
    if api is not None:
        values.update(base_url=api.base_url, api_key=KEY)
    return Config.model_validate({"model": values})


def test_availability(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    ok, reason = availability(make_cfg(None), "anthropic_chat")
    assert not ok and "ANTHROPIC_API_KEY" in reason
    assert availability(make_cfg(None, api_key="k"), "anthropic_chat") == (True, "")
    assert availability(make_cfg(None, base_url="http://127.0.0.1:9"), "anthropic_chat")[0]
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    assert availability(make_cfg(None), "anthropic_chat")[0]


def test_prices() -> None:
    assert anthropic_api.prices_for("claude-sonnet-4-5-20250929") == (3.0, 15.0)
    assert anthropic_api.prices_for("claude-opus-4-5") == (5.0, 25.0)
    assert anthropic_api.prices_for("claude-opus-4-1-20250805") == (15.0, 75.0)
    assert anthropic_api.prices_for("claude-3-5-haiku-latest") == (0.8, 4.0)
    assert anthropic_api.prices_for("claude-opus-5-5") == (4.0, 20.0)  # not claude-opus-5's price
    assert anthropic_api.prices_for("my-gateway-model") is None


def test_build_request_merges_turns_and_asks_for_json() -> None:
    messages = [Message("system", "S"), Message("user", "a"), Message("user", "b"), Message("assistant", "c")]
    request = anthropic_api.build_request("m", messages, max_output_tokens=64, schema=SCHEMA)
    assert request["messages"] == [
        {"role": "user", "content": "a\n\nb"},
        {"role": "assistant", "content": "c"},
    ]
    assert request["system"].startswith("S\n\n") and '"required": ["answer"]' in request["system"]


def test_complete_text_usage_and_cost() -> None:
    def handler(req: FakeRequest) -> FakeReply:
        return text("hello there", input_tokens=1000, output_tokens=100)

    with FakeAnthropic(handler) as api:
        chat = make_chat(make_cfg(api, optimizer_model="claude-sonnet-5-5"), "optimizer")
        reply = chat.complete([Message("system", "Be brief."), Message("user", "Hi")], stage="reflect")
    assert reply.text == "hello there" and reply.data is None
    assert reply.usage.input_tokens == 1000 and reply.usage.output_tokens == 100 and reply.usage.calls == 1
    assert reply.usage.cost_usd == pytest.approx((1000 * 2 + 100 * 10) / 1e6)
    body = api.message_requests[0].body
    assert body["system"] == "Be brief." and body["messages"] == [{"role": "user", "content": "Hi"}]
    headers = api.message_requests[0].headers  # the SDK sends the key as x-api-key or a bearer token
    assert KEY in (headers.get("x-api-key", ""), headers.get("authorization", "").removeprefix("Bearer "))


def test_unknown_model_cost_is_none() -> None:
    with FakeAnthropic(lambda req: text("x")) as api:
        reply = make_chat(make_cfg(api, optimizer_model="gateway-model"), "optimizer").complete(
            [Message("user", "Hi")], stage="s"
        )
    assert reply.usage.cost_usd is None


def test_structured_output_reasks_until_valid() -> None:
    replies = FakeReplyList([text("Sure! Here it is"), text('```json\n{"answer": "42"}\n```')])
    with FakeAnthropic(replies) as api:
        reply = make_chat(make_cfg(api), "optimizer").complete(
            [Message("user", "Q")], schema=SCHEMA, stage="merge"
        )
    assert reply.data == {"answer": "42"} and reply.usage.calls == 2
    second = api.message_requests[1]
    assert [m["role"] for m in second.messages] == ["user", "assistant", "user"]
    assert "could not be used" in second.last_user_text()


def test_structured_output_error_after_retries() -> None:
    with FakeAnthropic(lambda req: text("no json here")) as api:
        chat = make_chat(make_cfg(api, json_retries=1), "optimizer")
        with pytest.raises(StructuredOutputError) as info:
            chat.complete([Message("user", "Q")], schema=SCHEMA, stage="rank")
    assert "anthropic_chat" in str(info.value) and "'rank'" in str(info.value)
    assert "no json here" in str(info.value) and len(api.message_requests) == 2


def test_transient_errors_are_retried_by_the_sdk() -> None:
    replies = FakeReplyList([http_error(429), http_error(500), text("ok")])
    with FakeAnthropic(replies) as api:
        reply = make_chat(make_cfg(api, max_retries=2), "optimizer").complete(
            [Message("user", "Q")], stage="s"
        )
    assert reply.text == "ok" and len(api.message_requests) == 3


@pytest.mark.parametrize("status, words", [(500, "HTTP 500"), (401, "authentication failed")])
def test_permanent_failures_raise_backend_error_without_the_key(status: int, words: str) -> None:
    with FakeAnthropic(lambda req: http_error(status)) as api:
        chat = make_chat(make_cfg(api, max_retries=1), "optimizer")
        with pytest.raises(BackendError) as info:
            chat.complete([Message("user", "Q")], stage="reflect")
    message = str(info.value)
    assert words in message and "'reflect'" in message and KEY not in message and "\n" not in message


def test_chat_target_via_registry(tmp_path: Path) -> None:
    def handler(req: FakeRequest) -> FakeReply:
        assert "Answer in capitals." in req.system_text()
        return text(" PARIS ")

    with FakeAnthropic(handler) as api:
        agent = make_agent(make_cfg(api, target_model="claude-haiku-4-5"))
        result = agent.run(Task("t", "Capital of France?"), "Answer in capitals.", tmp_path)
    assert result.answer == "PARIS" and not result.is_error and result.usage.cost_usd is not None


def test_target_backend_error_is_a_failed_result(tmp_path: Path) -> None:
    with FakeAnthropic(lambda req: http_error(500)) as api:
        result = make_agent(make_cfg(api)).run(Task("t", "Q?"), "", tmp_path)
    assert result.is_error and result.error and "HTTP 500" in result.error
