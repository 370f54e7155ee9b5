"""Small pieces the backends share: error text, role checks, key availability, prompt layout."""

from __future__ import annotations

from types import ModuleType

from skillgrad.backends.base import Message, Role
from skillgrad.config import Config


def one_line(text: str, secret: str | None, limit: int = 300) -> str:
    """Collapse whitespace, cut to `limit` characters and mask `secret` wherever it appears."""
    if secret:
        text = text.replace(secret, "***")
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def describe_sdk_error(exc: Exception, sdk: ModuleType) -> str:
    """What went wrong, in a few words. The openai and anthropic SDKs share one error hierarchy."""
    if isinstance(exc, sdk.AuthenticationError):
        return f"authentication failed (HTTP 401; check the API key): {exc.message}"
    if isinstance(exc, sdk.PermissionDeniedError):
        return f"permission denied (HTTP 403): {exc.message}"
    if isinstance(exc, sdk.APIStatusError):
        return f"HTTP {exc.status_code}: {exc.message}"
    if isinstance(exc, sdk.APITimeoutError):
        return "request timed out after the SDK's retries (raise model.timeout_s or model.max_retries)"
    if isinstance(exc, sdk.APIConnectionError):
        return f"could not connect after the SDK's retries: {exc.message}"
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
