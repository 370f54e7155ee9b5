"""The `openai_chat` backend against the scripted fake server, through the real openai SDK."""

from __future__ import annotations

import json
import socket
import urllib.parse
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

pytest.importorskip("openai")

from skillgrad.backends import openai_compat
from skillgrad.backends.common import one_line
from skillgrad.backends.interface import Message
from skillgrad.backends.registry import Backends
from skillgrad.config import Config
from skillgrad.errors import BackendError, StructuredOutputError
from tests.fakes.openai_server import (
    Request,
    Response,
    ScriptedOpenAI,
    Status,
    Text,
    bad_request,
    json_reply,
    malformed,
    rate_limited,
    sequence,
    server_error,
    unauthorized,
)

SECRET = "sk-test-SECRET-never-print-me"
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"type": "string"}, "confidence": {"type": "number"}},
    "required": ["answer"],
}
MESSAGES = [Message("system", "You are terse."), Message("user", "Capital of France?")]

pytestmark = pytest.mark.timeout(30)


def make_cfg(base_url: str, **model: Any) -> Config:
    settings: dict[str, Any] = {
        "backend": "openai_chat",
        "base_url": base_url,
        "api_key": SECRET,
        "max_retries": 2,
        "json_retries": 2,
        "timeout_s": 10,
        **model,
    }
    return Config.model_validate({"model": settings})


@pytest.fixture
def server() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI(lambda request: Text("unset")) as fake:
        yield fake


def chat(server: ScriptedOpenAI, role: str = "optimizer", **model: Any) -> openai_compat.OpenAIChat:
    return openai_compat.create_chat(make_cfg(server.base_url, **model), role)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# plain and structured replies


def test_plain_reply_maps_text_usage_and_request(server: ScriptedOpenAI) -> None:
    server.handler = lambda request: Text("Paris", usage=(1000, 200))
    reply = chat(server, temperature=0.3, max_output_tokens=77).complete(MESSAGES, stage="rollout")
    assert reply.text == "Paris" and reply.data is None
    assert (reply.usage.input_tokens, reply.usage.output_tokens, reply.usage.calls) == (1000, 200, 1)
    assert reply.usage.cost_usd == pytest.approx((1000 * 0.15 + 200 * 0.60) / 1e6)  # gpt-4o-mini list price
    [seen] = server.requests
    assert seen.path == "/v1/chat/completions"
    assert seen["model"] == openai_compat.DEFAULT_MODEL
    assert seen.system == "You are terse." and seen.user == "Capital of France?"
    assert seen["temperature"] == 0.3 and seen["max_tokens"] == 77
    assert "response_format" not in seen and "reasoning_effort" not in seen
    assert seen.headers["authorization"] == f"Bearer {SECRET}"


def test_role_model_and_unknown_price(server: ScriptedOpenAI) -> None:
    server.handler = lambda request: Text("ok", usage=(5, 1))
    reply = chat(server, role="target", target_model="qwen2.5-7b").complete(MESSAGES, stage="rollout")
    assert server.requests[0]["model"] == "qwen2.5-7b"
    assert reply.usage.cost_usd is None


def test_effort_sent_only_to_reasoning_models(server: ScriptedOpenAI) -> None:
    server.handler = lambda request: Text("ok")
    chat(server, optimizer_model="o4-mini").complete(MESSAGES, effort="high", stage="reflect")
    chat(server, optimizer_model="gpt-4o").complete(MESSAGES, effort="high", stage="reflect")
    reasoning, plain = server.requests
    assert reasoning["reasoning_effort"] == "high" and "temperature" not in reasoning
    assert reasoning["max_completion_tokens"] == 1024
    assert "reasoning_effort" not in plain


def test_schema_reply_returns_data_and_sends_response_format(server: ScriptedOpenAI) -> None:
    server.handler = lambda request: json_reply({"answer": "Paris", "confidence": 0.9})
    reply = chat(server).complete(MESSAGES, schema=SCHEMA, stage="reflect")
    assert reply.data == {"answer": "Paris", "confidence": 0.9}
    fmt = server.requests[0].response_format
    assert fmt == {
        "type": "json_schema",
        "json_schema": {"name": "reflect", "schema": SCHEMA, "strict": False},
    }


def test_invalid_json_is_reasked_then_succeeds(server: ScriptedOpenAI) -> None:
    server.handler = sequence(Text("Sure! The answer is Paris."), json_reply({"answer": "Paris"}))
    reply = chat(server).complete(MESSAGES, schema=SCHEMA, stage="merge")
    assert reply.data == {"answer": "Paris"}
    assert reply.usage.calls == 2
    first, second = server.requests
    assert len(second.messages) == len(first.messages) + 2
    assert second.messages[-2] == {"role": "assistant", "content": "Sure! The answer is Paris."}
    assert second.messages[-1]["role"] == "user"
    assert "could not be used" in second.user and '"required": ["answer"]' in second.user


def test_always_invalid_raises_structured_output_error(server: ScriptedOpenAI) -> None:
    server.handler = lambda request: Text("no json here")
    with pytest.raises(StructuredOutputError) as info:
        chat(server, json_retries=1).complete(MESSAGES, schema=SCHEMA, stage="rank")
    assert info.value.stage == "rank" and info.value.backend == "openai_chat"
    assert "'rank'" in str(info.value)
    assert len(server.requests) == 2  # first try + 1 re-ask


# ---------------------------------------------------------------------------------------------
# transport retries (the SDK's own backoff; the fake answers with retry-after-ms: 1)


@pytest.mark.parametrize("failure", [rate_limited(), server_error(500), server_error(503)])
def test_transient_error_then_success(server: ScriptedOpenAI, failure: Status) -> None:
    server.handler = sequence(failure, Text("Paris"))
    reply = chat(server).complete(MESSAGES, stage="rollout")
    assert reply.text == "Paris"
    assert len(server.requests) == 2


def test_retries_exhausted_raises_backend_error(server: ScriptedOpenAI) -> None:
    server.handler = lambda request: server_error(502)
    with pytest.raises(BackendError) as info:
        chat(server, max_retries=1).complete(MESSAGES, stage="rollout")
    assert "HTTP 502" in str(info.value)
    assert len(server.requests) == 2


def test_auth_error_is_backend_error_without_the_key(server: ScriptedOpenAI) -> None:
    server.handler = lambda request: unauthorized(f"Incorrect API key provided: {SECRET}")
    with pytest.raises(BackendError) as info:
        chat(server).complete(MESSAGES, stage="reflect")
    message = str(info.value)
    assert SECRET not in message and "\n" not in message
    assert "openai_chat" in message and "gpt-4o-mini" in message and server.base_url in message
    assert "401" in message
    assert len(server.requests) == 1  # 401 is not retried


def test_other_4xx_is_backend_error(server: ScriptedOpenAI) -> None:
    server.handler = lambda request: Status(404, "The model does not exist")
    with pytest.raises(BackendError, match="HTTP 404"):
        chat(server).complete(MESSAGES, schema=SCHEMA, stage="reflect")
    assert len(server.requests) == 1


@pytest.mark.parametrize("body", ['{"choices": [ this is not json', "[1, 2]", '"a string"', "plain text"])
def test_malformed_body_is_backend_error(server: ScriptedOpenAI, body: str) -> None:
    server.handler = lambda request: malformed(body)
    with pytest.raises(BackendError, match="malformed response"):
        chat(server, max_retries=0).complete(MESSAGES, stage="rollout")


# ---------------------------------------------------------------------------------------------
# servers without response_format


def no_response_format(request: Request) -> Response:
    if request.response_format is not None:
        return bad_request("Unknown parameter: 'response_format'", "response_format")
    return json_reply({"answer": "Paris"})


def test_response_format_rejected_is_retried_without_it_and_remembered(server: ScriptedOpenAI) -> None:
    server.handler = no_response_format
    model = chat(server)
    assert model.complete(MESSAGES, schema=SCHEMA, stage="reflect").data == {"answer": "Paris"}
    assert [r.response_format is not None for r in server.requests] == [True, False]
    server.clear()
    assert model.complete(MESSAGES, schema=SCHEMA, stage="reflect").data == {"answer": "Paris"}
    assert [r.response_format is not None for r in server.requests] == [False]


def test_a_400_that_does_not_blame_response_format_keeps_it(server: ScriptedOpenAI) -> None:
    """Issue 12: one "context too long" 400 must not switch response_format off for the run."""
    server.handler = lambda request: bad_request("This model's maximum context length is 8192 tokens")
    model = chat(server)
    with pytest.raises(BackendError, match="HTTP 400"):
        model.complete(MESSAGES, schema=SCHEMA, stage="reflect")
    assert len(server.requests) == 1 and model.use_response_format
    server.handler = lambda request: json_reply({"answer": "Paris"})
    server.clear()
    assert model.complete(MESSAGES, schema=SCHEMA, stage="reflect").data == {"answer": "Paris"}
    assert server.requests[0].response_format is not None


def test_second_400_after_dropping_response_format_is_backend_error(server: ScriptedOpenAI) -> None:
    def handler(request: Request) -> Response:
        if request.response_format is not None:
            return bad_request("Unknown parameter: 'response_format'", "response_format")
        return bad_request("messages: too long")

    server.handler = handler
    with pytest.raises(BackendError, match="HTTP 400"):
        chat(server).complete(MESSAGES, schema=SCHEMA, stage="reflect")
    assert len(server.requests) == 2


# ---------------------------------------------------------------------------------------------
# availability and pure mapping


def test_availability(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    ok, reason = openai_compat.availability(Config.model_validate({"model": {"backend": "openai_chat"}}))
    assert not ok and "OPENAI_API_KEY" in reason
    assert openai_compat.availability(make_cfg("http://127.0.0.1:1/v1", api_key=None))[0]
    keyed = Config.model_validate({"model": {"backend": "openai_chat", "api_key": SECRET}})
    assert openai_compat.availability(keyed)[0]
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    assert openai_compat.availability(Config.model_validate({"model": {"backend": "openai_chat"}}))[0]


def test_local_server_without_key(server: ScriptedOpenAI, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server.handler = lambda request: Text("hi")
    assert chat(server, api_key=None).complete(MESSAGES, stage="rollout").text == "hi"


def test_pure_mapping() -> None:
    assert openai_compat.price_usd("gpt-4o-mini-2024-07-18", 1_000_000, 0) == pytest.approx(0.15)
    assert openai_compat.price_usd("llama3", 10, 10) is None
    assert openai_compat.is_reasoning_model("o3-mini") and openai_compat.is_reasoning_model("gpt-5")
    assert not openai_compat.is_reasoning_model("gpt-4o") and not openai_compat.is_reasoning_model("omni")
    fmt = openai_compat.response_format_for(SCHEMA, "slow update/1")
    assert fmt["json_schema"]["name"] == "slow_update_1"
    text, usage = openai_compat.parse_completion({"choices": [{"message": {"content": None}}]}, "m")
    assert text == "" and usage.calls == 1 and usage.cost_usd is None
    with pytest.raises(ValueError):
        openai_compat.parse_completion({"foo": 1}, "m")
    # The body arrives as the server sent it: usage values that are not counts count as 0.
    for usage_value in ([1, 2], "12", {"prompt_tokens": "7", "completion_tokens": float("inf")}, None):
        body = {"choices": [{"message": {"content": "x"}}], "usage": usage_value}
        assert openai_compat.parse_completion(body, "m")[1].total_tokens == 0
    counts = {"prompt_tokens": 7, "completion_tokens": 2.0}
    body = {"choices": [{"message": {"content": "x"}}], "usage": counts}
    assert openai_compat.parse_completion(body, "m")[1].total_tokens == 9
    assert one_line(f"bad key {SECRET}\n  here", SECRET) == "bad key *** here"


def test_concurrent_calls_share_one_client(server: ScriptedOpenAI) -> None:
    server.handler = lambda request: Text(request.user.upper())
    model = chat(server)
    prompts = [f"q{i}" for i in range(16)]
    with ThreadPoolExecutor(8) as pool:
        replies = list(pool.map(lambda p: model.complete([Message("user", p)], stage="rollout"), prompts))
    assert [r.text for r in replies] == [p.upper() for p in prompts]
    assert sorted(r.user for r in server.requests) == sorted(prompts)


def test_roles_of_a_run_share_a_client_per_endpoint_and_key(server: ScriptedOpenAI) -> None:
    server.handler = lambda request: Text(request["model"])
    with ScriptedOpenAI(lambda request: Text("other:" + request["model"])) as other:
        cfg = make_cfg(server.base_url, optimizer_model="opt", target_model="tgt")
        backends = Backends(cfg)
        optimizer, target = backends.chat("optimizer"), backends.chat("target")
        hot = backends.chat("optimizer", temperature=0.9)  # the extra proposals' model
        assert optimizer._client is target._client is hot._client  # one pool, one TLS context
        split = make_cfg(server.base_url, target_base_url=other.base_url, target_api_key="sk-other")
        apart = Backends(split)
        assert apart.chat("optimizer")._client is not apart.chat("target")._client
        assert [m.complete(MESSAGES, stage="x").text for m in (optimizer, target, hot)] == [
            "opt",
            "tgt",
            "opt",
        ]
        assert apart.chat("target").complete(MESSAGES, stage="x").text.startswith("other:")
        assert other.requests[0].headers["authorization"] == "Bearer sk-other"
    assert {r.headers["authorization"] for r in server.requests} == {f"Bearer {SECRET}"}
    assert backends.chat("target")._client is not Backends(cfg).chat("target")._client  # per run


def test_fake_server_ignores_a_request_cut_short_by_a_dying_client() -> None:
    # A client killed mid-request (a Ray worker, in tests/test_ray_e2e.py) leaves fewer bytes
    # than its Content-Length, maybe none: that is no request, not an empty one for the handler.
    seen: list[Request] = []
    with ScriptedOpenAI(lambda request: seen.append(request) or Text("x")) as fake:
        host, port = urllib.parse.urlsplit(fake.base_url).netloc.split(":")
        with socket.create_connection((host, int(port)), timeout=10) as conn:
            head = f"POST /v1/chat/completions HTTP/1.1\r\nHost: {host}\r\nContent-Length: 200\r\n\r\n"
            conn.sendall(head.encode())  # killed before its body: not one byte of it arrives
            conn.shutdown(socket.SHUT_WR)
            conn.recv(65536)  # the fake's answer (or the close): the request was handled by then
        complete = openai_compat.create_chat(make_cfg(fake.base_url), "optimizer")
        assert complete.complete(MESSAGES, stage="x").text == "x"
    assert len(fake.requests) == len(seen) == 1 and seen[0]["model"] == openai_compat.DEFAULT_MODEL


def test_fake_server_records_and_reraises_handler_errors() -> None:
    def broken(request: Request) -> Response:
        raise KeyError("boom")

    fake = ScriptedOpenAI(broken)
    with pytest.raises(AssertionError, match="boom"), fake:
        with pytest.raises(BackendError, match="HTTP 500"):
            openai_compat.create_chat(make_cfg(fake.base_url), "optimizer").complete(MESSAGES, stage="x")
        assert len(fake.requests) == 1  # x-should-retry: false
    assert json.loads(json.dumps(fake.requests[0]))["model"] == openai_compat.DEFAULT_MODEL
