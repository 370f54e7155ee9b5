"""`anthropic_chat`: the ChatModel protocol on the official `anthropic` SDK (Messages API).

Transient failures (429, 5xx, 529 overloaded, timeouts, dropped connections) are retried by
skillgrad's loop (`backends.retry`, `model.max_retries`; the SDK's own retries are off, so the
budget reserves and counts each attempt); what still fails becomes a one-line `BackendError` naming
backend, model and base_url, never the API key. Structured output asks for JSON in the system
prompt and goes through `structured.complete_structured` (the same validation and re-asks as every
backend), which works on every Claude model and on Anthropic-compatible gateways alike.

`reasoning_effort` and `temperature` are not sent: the current SDK's `messages.create` has no
temperature parameter, and `output_config.effort` is model-specific, so a request that one model
accepts another rejects.

Layout (LiteLLM "transformation" style): `build_request` and `parse_message` are pure functions;
`AnthropicChat` only sends (the client, retries and error mapping are `SdkChat`'s).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from skillgrad.backends import price_tables
from skillgrad.backends.sdk_chat import RoleSettings, SdkChat, SdkClients, keyed_availability
from skillgrad.config import Config
from skillgrad.lazy import lazy_import
from skillgrad.templates import render
from skillgrad.values import Effort, Message, Role, Usage

if TYPE_CHECKING:
    import anthropic
else:
    anthropic = lazy_import("anthropic")  # loaded on first use

BACKEND = "anthropic_chat"
KEY_ENV = "ANTHROPIC_API_KEY"
DEFAULT_MODEL = price_tables.DEFAULT_MODELS[BACKEND]
ANTHROPIC_BASE_URL = "https://api.anthropic.com"

# List prices in USD per 1M tokens (input, output), matched by model-id prefix: `catalog`.
# Unknown models get cost_usd=None.
PRICES_PER_MTOK = price_tables.ANTHROPIC_PER_MTOK
prices_for = price_tables.anthropic_per_mtok
# Cache reads cost a tenth of the input price, cache writes (5 minutes) a quarter more.
_CACHE_READ, _CACHE_WRITE = 0.1, 1.25

# ---------------------------------------------------------------------------------------------
# pure request / response mapping


def price_usd(model: str, usage: dict[str, Any]) -> float | None:
    """List price of one call from its `usage` block, or None for a model without a list price."""
    prices = prices_for(model)
    if prices is None:
        return None
    tokens_in = int(usage.get("input_tokens") or 0)
    read = int(usage.get("cache_read_input_tokens") or 0)
    write = int(usage.get("cache_creation_input_tokens") or 0)
    weighted_in = tokens_in + read * _CACHE_READ + write * _CACHE_WRITE
    return (weighted_in * prices[0] + int(usage.get("output_tokens") or 0) * prices[1]) / 1_000_000


def _turns(messages: list[Message]) -> list[dict[str, Any]]:
    """Non-system messages, consecutive same-role ones merged (the API wants alternating turns)."""
    turns: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "system":
            continue
        if turns and turns[-1]["role"] == m.role:
            turns[-1]["content"] += "\n\n" + m.content
        else:
            turns.append({"role": m.role, "content": m.content})
    if not turns or turns[0]["role"] != "user":
        turns.insert(0, {"role": "user", "content": "(see the instructions)"})
    return turns


def build_request(
    model: str,
    messages: list[Message],
    *,
    max_output_tokens: int,
    schema: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The keyword arguments of one `messages.create` call."""
    system = "\n\n".join(m.content for m in messages if m.role == "system")
    if schema is not None:
        instruction = render("skillgrad.backends", "anthropic_json_instruction")
        system = (system + "\n\n" if system else "") + instruction + json.dumps(schema)
    request: dict[str, Any] = {
        "model": model,
        "max_tokens": max_output_tokens,
        "messages": _turns(messages),
    }
    if system:
        request["system"] = system
    return request


def parse_message(payload: dict[str, Any], model: str) -> tuple[str, Usage]:
    """(reply text, usage) from a Messages API response body. Raises ValueError if malformed."""
    content = payload.get("content")
    if not isinstance(content, list):
        raise ValueError("the response has no content list")
    text = "".join(str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text")
    raw = payload.get("usage") or {}
    tokens_in = sum(
        int(raw.get(k) or 0)
        for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
    )
    usage = Usage(tokens_in, int(raw.get("output_tokens") or 0), 1, price_usd(model, raw))
    return text, usage


# ---------------------------------------------------------------------------------------------
# configuration and I/O


def availability(cfg: Config) -> tuple[bool, str]:
    """Usable if the SDK imports and each role on this backend has an API key or a base_url."""
    return keyed_availability(cfg, BACKEND, KEY_ENV, "an Anthropic-compatible gateway")


def new_run_state() -> SdkClients:
    """The run's SDK clients: roles on the same endpoint share one."""
    return SdkClients()


def create_chat(cfg: Config, role: Role, state: SdkClients | None = None) -> AnthropicChat:
    return AnthropicChat.for_role(RoleSettings.of(cfg, role, KEY_ENV, DEFAULT_MODEL), state)


class AnthropicChat(SdkChat):
    """ChatModel over `anthropic.Anthropic().messages`. Thread-safe (one shared SDK client).
    `temperature` is not sent (see the module docstring)."""

    name = BACKEND
    sdk = anthropic
    client_class = "Anthropic"
    default_base_url = ANTHROPIC_BASE_URL
    key_env = KEY_ENV
    where = "model {model} at {base_url}, stage '{stage}':"
    failure = "{name}: stage '{stage}' failed (model {model}, {base_url}): {detail}"

    def _send(
        self, messages: list[Message], schema: dict[str, Any] | None, effort: Effort | None, stage: str
    ) -> tuple[str, Usage]:
        request = build_request(self.model, messages, max_output_tokens=self.max_output_tokens, schema=schema)
        response = self._client.messages.create(**request)
        return parse_message(response.model_dump(), self.model)
