"""Small pieces the backends share: error text, role checks, key availability, prompt layout."""

from __future__ import annotations

from types import ModuleType

from skillgrad.config import Config
from skillgrad.errors import FatalBackendError
from skillgrad.values import Message, Role

# How servers say a prompt is past the context window: OpenAI and vLLM ("maximum context length",
# code context_length_exceeded), llama.cpp ("exceeds the available context size"), Anthropic
# ("prompt is too long"), Ollama and others ("context window", "context length")
_PROMPT_TOO_LONG = (
    "context length",
    "context_length",
    "context size",
    "context window",
    "prompt is too long",
)
_OUT_OF_CREDIT = ("insufficient_quota", "exceeded your current quota", "credit balance", "billing")


def one_line(text: str, secret: str | None, limit: int = 300) -> str:
    """Collapse whitespace, cut to `limit` characters and mask `secret` wherever it appears."""
    if secret:
        text = text.replace(secret, "***")
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def describe_sdk_error(exc: Exception, sdk: ModuleType, attempts: int = 1) -> str:
    """What went wrong (after `attempts` attempts), in a few words. The openai and anthropic SDKs
    share one error hierarchy."""
    tried = f" ({attempts} attempts)" if attempts > 1 else ""
    if isinstance(exc, sdk.AuthenticationError):
        return f"authentication failed (HTTP 401; check the API key): {exc.message}"
    if isinstance(exc, sdk.PermissionDeniedError):
        return f"permission denied (HTTP 403): {exc.message}"
    if isinstance(exc, sdk.APIStatusError):
        return f"HTTP {exc.status_code}{tried}: {exc.message}"
    if isinstance(exc, sdk.APITimeoutError):
        return f"request timed out{tried} (raise model.timeout_s or model.max_retries)"
    if isinstance(exc, sdk.APIConnectionError):
        return f"could not connect{tried}: {exc.message}"
    if isinstance(exc, ValueError):
        return f"malformed response: {exc}"
    return f"{type(exc).__name__}: {exc}"


def roles_using(cfg: Config, backend: str) -> list[Role]:
    """The roles configured on `backend` (both when neither is: `skillgrad backends` asks)."""
    roles: list[Role] = [r for r in ("optimizer", "target") if cfg.model.backend_for(r) == backend]
    return roles or ["optimizer", "target"]


def key_availability(
    cfg: Config, backend: str, key_for: dict[Role, str | None], env_var: str, server: str
) -> tuple[bool, str]:
    """Usable when each role on `backend` has an API key or a base_url (a keyless server)."""
    for role in roles_using(cfg, backend):
        if not cfg.model.base_url_for(role) and not key_for[role]:
            return False, (
                f"no API key for the {role} role: set {env_var}, model.api_key "
                f"(or model.{role}_api_key), or model.base_url for {server}"
            )
    return True, ""


def split_messages(messages: list[Message]) -> tuple[str, str]:
    """(system prompt, user prompt). Several non-system turns are laid out with role headings."""
    system = "\n\n".join(m.content for m in messages if m.role == "system")
    turns = [m for m in messages if m.role != "system"]
    if len(turns) == 1 and turns[0].role == "user":
        return system, turns[0].content
    return system, "\n\n".join(f"### {m.role}\n\n{m.content}" for m in turns)


def key_source(cfg: Config, role: Role, env_var: str) -> str:
    """Where the role's API key comes from, spelled as the user would fix it."""
    m = cfg.model
    if (m.optimizer_api_key if role == "optimizer" else m.target_api_key) is not None:
        return f"model.{role}_api_key"
    return "model.api_key" if m.api_key is not None else env_var


def is_fatal_status(status: int | None, text: str) -> bool:
    """An HTTP answer after which no call can succeed: refused credentials (401/403), payment
    required (402), or a 400/429 whose message says the quota or credit is used up (a plain rate
    limit is transient and is retried)."""
    if status in (401, 402, 403):
        return True
    lowered = text.lower()
    return status in (400, 429) and any(word in lowered for word in _OUT_OF_CREDIT)


def says_prompt_too_long(text: str) -> bool:
    """True when a server's refusal says the prompt is longer than the model's context window."""
    lowered = text.lower()
    return any(words in lowered for words in _PROMPT_TOO_LONG)


def fatal_error(backend: str, where: str, status: int | None, detail: str, key: str) -> FatalBackendError:
    """The one line that stops the run: what was refused, by whom, and which key to fix."""
    refused = status in (401, 403) or status is None
    kind = "authentication failed, the API key was refused" if refused else "no quota or credit left"
    code = f" (HTTP {status})" if status else ""
    return FatalBackendError(
        f"{backend}: {where} {kind}{code}: {detail}; fix {key} (no further call can succeed)"
    )


def fatal_sdk_error(
    exc: Exception, sdk: ModuleType, backend: str, where: str, key: str, secret: str | None
) -> FatalBackendError | None:
    """The FatalBackendError for an openai/anthropic SDK exception that is one, else None."""
    if not isinstance(exc, sdk.APIStatusError):
        return None
    message = str(exc.message)
    if not is_fatal_status(exc.status_code, f"{message} {getattr(exc, 'body', '')}"):
        return None
    return fatal_error(backend, where, exc.status_code, one_line(message, secret, 200), key)
