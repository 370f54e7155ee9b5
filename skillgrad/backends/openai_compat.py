"""`openai_chat`: the ChatModel protocol on the official `openai` SDK.

One `base_url` covers OpenAI itself, Azure's v1 endpoint, vLLM, Ollama, llama.cpp's server and any
other OpenAI-compatible Chat Completions server. Transient failures (429, 5xx, timeouts, dropped
connections) are retried by skillgrad's loop (`backends.retry`, `model.max_retries`; the SDK's own
retries are off, so the budget reserves and counts each attempt); everything that is still
failing afterwards becomes a one-line `BackendError` naming backend, model and base_url, never the
API key.

Layout (LiteLLM "transformation" style): `build_request` and `parse_completion` are pure functions
of their inputs; `OpenAIChat` only sends (the client, retries and error mapping are `SdkChat`'s).
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any

from skillgrad.backends import price_tables
from skillgrad.backends.sdk_chat import RoleSettings, SdkChat, SdkClients, keyed_availability
from skillgrad.config import Config
from skillgrad.lazy import lazy_import
from skillgrad.values import Effort, Message, Role, Usage

if TYPE_CHECKING:
    import openai
else:
    openai = lazy_import("openai")  # loaded on first use

BACKEND = "openai_chat"
KEY_ENV = "OPENAI_API_KEY"
DEFAULT_MODEL = price_tables.DEFAULT_MODELS[BACKEND]
OPENAI_BASE_URL = "https://api.openai.com/v1"

# List prices in USD per 1M tokens (input, output): `catalog`. Unknown models get cost_usd=None.
PRICES_PER_MTOK = price_tables.OPENAI_PER_MTOK
_REASONING_MODEL = re.compile(r"^(o\d+|gpt-5)([-.]|$)")
_SCHEMA_NAME = re.compile(r"[^a-zA-Z0-9_-]")


# ---------------------------------------------------------------------------------------------
# pure request / response mapping


def is_reasoning_model(model: str) -> bool:
    """o-series and gpt-5 models: accept `reasoning_effort`, reject a custom temperature."""
    return bool(_REASONING_MODEL.match(model.rsplit("/", 1)[-1].lower()))


def price_usd(model: str, input_tokens: int, output_tokens: int) -> float | None:
    """List price of one call for a known OpenAI model (dated snapshots included), else None."""
    prices = price_tables.openai_per_mtok(model)
    if prices is None:
        return None
    return (input_tokens * prices[0] + output_tokens * prices[1]) / 1_000_000


def response_format_for(schema: dict[str, Any], stage: str) -> dict[str, Any]:
    """A non-strict json_schema response format (strict mode rejects most real-world schemas)."""
    name = _SCHEMA_NAME.sub("_", stage)[:64] or "reply"
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": False}}


def build_request(
    model: str,
    messages: list[Message],
    *,
    temperature: float,
    max_output_tokens: int,
    schema: dict[str, Any] | None = None,
    stage: str = "reply",
    effort: Effort | None = None,
    use_response_format: bool = True,
) -> dict[str, Any]:
    """The keyword arguments of one `chat.completions.create` call."""
    request: dict[str, Any] = {
        "model": model,
        "messages": [{"role": m.role, "content": m.content} for m in messages],
    }
    if is_reasoning_model(model):
        request["max_completion_tokens"] = max_output_tokens
        if effort is not None:
            request["reasoning_effort"] = effort
    else:
        request["max_tokens"] = max_output_tokens
        request["temperature"] = temperature
    if schema is not None and use_response_format:
        request["response_format"] = response_format_for(schema, stage)
    return request


def parse_completion(payload: dict[str, Any], model: str) -> tuple[str, Usage]:
    """(reply text, usage) from a Chat Completions response body. Raises ValueError if malformed."""
    choices = payload.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ValueError("the response has no choices")
    message = choices[0].get("message") or {}
    content = message.get("content") if isinstance(message, dict) else None
    text = content if isinstance(content, str) else ""
    raw_usage = payload.get("usage")
    raw_usage = raw_usage if isinstance(raw_usage, dict) else {}
    input_tokens = _count(raw_usage.get("prompt_tokens"))
    output_tokens = _count(raw_usage.get("completion_tokens"))
    cost = price_usd(model, input_tokens, output_tokens)
    return text, Usage(input_tokens=input_tokens, output_tokens=output_tokens, calls=1, cost_usd=cost)


def _count(value: Any) -> int:
    """A token count as the server reported it; anything that is not a count is 0."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return 0
    return max(0, int(value))


def is_response_format_rejection(exc: Exception, request: dict[str, Any]) -> bool:
    """A 400 that blames `response_format` (the server lacks the feature), to a request that
    carried it. Any other 400 (a context too long, say) says nothing about the feature."""
    if not isinstance(exc, openai.BadRequestError) or "response_format" not in request:
        return False
    body = exc.body if isinstance(exc.body, dict) else {}
    blamed = f"{exc.message} {body.get('param') or ''} {exc.body}".lower()
    return any(word in blamed for word in ("response_format", "json_schema", "structured output"))


# ---------------------------------------------------------------------------------------------
# configuration and I/O


def availability(cfg: Config) -> tuple[bool, str]:
    """Usable if the SDK imports and each role on this backend has an API key or a base_url."""
    return keyed_availability(cfg, BACKEND, KEY_ENV, "a local OpenAI-compatible server")


def new_run_state() -> SdkClients:
    """The run's SDK clients: roles on the same endpoint share one."""
    return SdkClients()


def create_chat(cfg: Config, role: Role, state: SdkClients | None = None) -> OpenAIChat:
    return OpenAIChat.for_role(RoleSettings.of(cfg, role, KEY_ENV, DEFAULT_MODEL), state)


class OpenAIChat(SdkChat):
    """ChatModel over `openai.OpenAI().chat.completions`. Thread-safe (one shared SDK client)."""

    name = BACKEND
    sdk = openai
    client_class = "OpenAI"
    default_base_url = OPENAI_BASE_URL
    key_env = KEY_ENV
    use_response_format = True  # flipped off for good once the server rejects it with a 400

    def _send(
        self, messages: list[Message], schema: dict[str, Any] | None, effort: Effort | None, stage: str
    ) -> tuple[str, Usage]:
        request = self._request(messages, schema, effort, stage)
        return parse_completion(self._send_with_fallback(request), self.model)

    def _send_with_fallback(self, request: dict[str, Any]) -> dict[str, Any]:
        """Send; on a 400 to a `response_format` request, resend once without it, for good."""
        try:
            return self._post(request)
        except openai.APIError as exc:
            if not is_response_format_rejection(exc, request):
                raise
        self.use_response_format = False
        self._another_request()
        return self._post({k: v for k, v in request.items() if k != "response_format"})

    def _request(
        self, messages: list[Message], schema: dict[str, Any] | None, effort: Effort | None, stage: str
    ) -> dict[str, Any]:
        return build_request(
            self.model,
            messages,
            temperature=self.temperature,
            max_output_tokens=self.max_output_tokens,
            schema=schema,
            stage=stage,
            effort=effort,
            use_response_format=self.use_response_format,
        )

    def _post(self, request: dict[str, Any]) -> dict[str, Any]:
        # The SDK's own `post` (its documented way to any endpoint) with the body as it is, already
        # JSON-ready, and the reply as JSON: `chat.completions.create` would walk the request
        # through its typed-params transform and the reply into models, a few milliseconds of CPU
        # per call that delay every other call of a round. Timeouts and errors are the same.
        payload = self._client.post("/chat/completions", body=request, cast_to=object)
        if not isinstance(payload, dict):  # the SDK hands back bodies that are not JSON as text
            raise ValueError(f"the response is not a chat completion: {str(payload)[:200]!r}")
        return payload
