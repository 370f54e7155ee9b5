"""The glue the two official-SDK chat backends share (`openai_chat`, `anthropic_chat`): the API
key of a role, availability, the role's settings, one SDK client per chat model, the
structured-output loop, the transport retries (skillgrad's loop, `backends.retry`: the SDK client
runs with `max_retries=0`, so every attempt is one the run's budget reserved and counts) and the
mapping of SDK errors to one-line `BackendError`s.

The openai and anthropic SDKs are built alike (a client class taking base_url / api_key /
max_retries / timeout / http_client, one error hierarchy), so a subclass names its SDK module and
client class and maps one request (`_send`); what differs between the providers (request and
response shapes, prices) stays in the backend's module as pure functions.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from types import ModuleType
from typing import Any, ClassVar, Self

from skillgrad.backends.common import (
    describe_sdk_error,
    fatal_sdk_error,
    key_availability,
    key_source,
    one_line,
    says_prompt_too_long,
)
from skillgrad.backends.deadline import NEVER_SENT, DeadlineTransport
from skillgrad.backends.interface import CallMeter
from skillgrad.backends.retry import UNANSWERED, AttemptFailed, renew, status_retry, with_retries
from skillgrad.backends.structured import complete_structured
from skillgrad.config import Config
from skillgrad.errors import BackendError, FatalBackendError, PromptTooLong
from skillgrad.values import Effort, Message, Reply, Role, Usage

# A local server or gateway (base_url) may need no key, but the SDKs refuse to start without one.
PLACEHOLDER_KEY = "not-needed"


def role_api_key(cfg: Config, role: Role, env_var: str) -> str | None:
    """The role's API key: model.<role>_api_key, model.api_key, else the environment variable."""
    return cfg.model.api_key_for(role) or os.environ.get(env_var) or None


def keyed_availability(cfg: Config, backend: str, env_var: str, server: str) -> tuple[bool, str]:
    """Usable if each role on `backend` has an API key or a base_url (`server` names the keyless kind)."""
    keys: dict[Role, str | None] = {r: role_api_key(cfg, r, env_var) for r in ("optimizer", "target")}
    return key_availability(cfg, backend, keys, env_var, server)


@dataclass(frozen=True)
class RoleSettings:
    """What an SDK chat model of one role takes from the config."""

    model: str
    base_url: str | None
    api_key: str | None
    key_name: str
    temperature: float
    max_output_tokens: int
    timeout_s: float
    max_retries: int
    json_retries: int

    @classmethod
    def of(cls, cfg: Config, role: Role, env_var: str, default_model: str) -> RoleSettings:
        m = cfg.model
        return cls(
            model=m.model_for(role) or default_model,
            base_url=m.base_url_for(role),
            api_key=role_api_key(cfg, role, env_var),
            key_name=key_source(cfg, role, env_var),
            temperature=m.temperature,
            max_output_tokens=m.max_output_tokens_for(role),
            timeout_s=m.timeout_s,
            max_retries=m.max_retries,
            json_retries=m.json_retries,
        )


class SdkClients:
    """A run's SDK clients (the backend's `new_run_state()`): chat models with the same endpoint,
    key and limits share one client, so a run builds one connection pool (and one TLS context)
    per endpoint instead of one per role. Thread-safe."""

    def __init__(self) -> None:
        self._clients: dict[tuple[Any, ...], Any] = {}
        self._lock = threading.Lock()

    def get(self, sdk: ModuleType, client_class: str, **settings: Any) -> Any:
        key = (sdk.__name__, client_class, *sorted(settings.items()))
        with self._lock:
            if key not in self._clients:
                self._clients[key] = _new_client(sdk, client_class, **settings)
            return self._clients[key]


def _new_client(
    sdk: ModuleType, client_class: str, *, base_url: str | None, api_key: str, timeout_s: float
) -> Any:
    return getattr(sdk, client_class)(
        base_url=base_url,
        api_key=api_key,
        max_retries=0,  # skillgrad retries (backends.retry): each attempt reserved and counted
        timeout=timeout_s,
        # timeout_s bounds each attempt's wall-clock time, not only each read (deadline.py)
        http_client=sdk.DefaultHttpxClient(transport=DeadlineTransport(timeout_s)),
    )


class SdkChat:
    """A ChatModel over one official SDK client. Thread-safe (the client is shared).

    Subclasses set `name`, `sdk` (the SDK module), `client_class` (its client's name),
    `default_base_url`, `key_env`, the wording of their errors (`where` and `failure`, format strings over
    model, base_url, stage, name and detail) and implement `_send`."""

    name: ClassVar[str]
    sdk: ModuleType  # (a module object cannot be a ClassVar for mypy)
    client_class: ClassVar[str]
    default_base_url: ClassVar[str]
    key_env: ClassVar[str]  # where the key comes from when the caller does not say
    where: ClassVar[str] = "model {model!r} at {base_url}, stage '{stage}':"
    failure: ClassVar[str] = "{name}: model {model!r} at {base_url}, stage '{stage}': {detail}"

    def __init__(
        self,
        *,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        key_name: str | None = None,
        temperature: float = 0.0,
        max_output_tokens: int = 1024,
        timeout_s: float = 120.0,
        max_retries: int = 4,
        json_retries: int = 2,
        clients: SdkClients | None = None,
    ) -> None:
        self.model = model
        self.temperature = temperature
        self.max_output_tokens = max_output_tokens
        self.max_retries = max_retries
        self.json_retries = json_retries
        self.meter: CallMeter | None = None  # MeteredModel: the run's budget, set by the registry
        self._api_key = api_key
        self._key_name = key_name or self.key_env
        self._client: Any = (clients or SdkClients()).get(
            self.sdk,
            self.client_class,
            base_url=base_url,
            api_key=api_key or PLACEHOLDER_KEY,
            timeout_s=timeout_s,
        )
        self.base_url = str(self._client.base_url).rstrip("/") or self.default_base_url

    @classmethod
    def for_role(cls, settings: RoleSettings, clients: SdkClients | None = None) -> Self:
        return cls(
            model=settings.model,
            base_url=settings.base_url,
            api_key=settings.api_key,
            key_name=settings.key_name,
            temperature=settings.temperature,
            max_output_tokens=settings.max_output_tokens,
            timeout_s=settings.timeout_s,
            max_retries=settings.max_retries,
            json_retries=settings.json_retries,
            clients=clients,
        )

    def complete(
        self,
        messages: list[Message],
        *,
        schema: dict[str, Any] | None = None,
        effort: Effort | None = None,
        stage: str,
    ) -> Reply:
        return complete_structured(
            lambda convo: self._call(convo, schema, effort, stage),
            messages,
            schema,
            backend=self.name,
            stage=stage,
            retries=self.json_retries,
            meter=self.meter,
        )

    def _call(
        self, messages: list[Message], schema: dict[str, Any] | None, effort: Effort | None, stage: str
    ) -> tuple[str, Usage]:
        """One request, retried while it fails transiently (`backends.retry`)."""

        def attempt() -> tuple[str, Usage]:
            try:
                return self._send(messages, schema, effort, stage)
            except (self.sdk.APIError, ValueError) as exc:
                raise self._failed(stage, exc) from exc

        return with_retries(attempt, retries=self.max_retries, meter=self.meter)

    def _send(
        self, messages: list[Message], schema: dict[str, Any] | None, effort: Effort | None, stage: str
    ) -> tuple[str, Usage]:
        """One request: (reply text, usage). Raises the SDK's APIError, or ValueError when the
        response is malformed."""
        raise NotImplementedError

    def _another_request(self) -> None:
        """Reserve a second request inside one attempt (a resend without a refused feature)."""
        renew(self.meter, Usage())

    def _failed(self, stage: str, exc: Exception) -> AttemptFailed | BackendError:
        """One failed attempt: whether (and when) it is retried, and what it may have cost. A
        refused key or quota is no attempt to retry: its FatalBackendError, at once."""
        error = self._error(stage, exc)
        if isinstance(error, FatalBackendError):
            return error

        def final(attempts: int, paid: Usage) -> BackendError:
            return self._error(stage, exc, attempts, paid)

        if isinstance(exc, self.sdk.APIStatusError):  # an answer: a provider bills no error answer
            retry, after = status_retry(exc.status_code, exc.response.headers)
            return AttemptFailed(Usage(), retry, final, after)
        if isinstance(exc, self.sdk.APIConnectionError):  # a timeout too: the work may have been done
            cost = Usage() if isinstance(exc.__cause__, NEVER_SENT) else UNANSWERED
            return AttemptFailed(cost, True, final)
        return AttemptFailed(UNANSWERED, False, final)  # answered, but not a reply: not retried

    def _error(
        self, stage: str, exc: Exception, attempts: int = 1, paid: Usage | None = None
    ) -> BackendError:
        fields = {"model": self.model, "base_url": self.base_url, "stage": stage, "name": self.name}
        where = self.where.format(**fields)
        fatal = fatal_sdk_error(exc, self.sdk, self.name, where, self._key_name, self._api_key)
        if fatal is not None:
            return fatal
        detail = one_line(describe_sdk_error(exc, self.sdk, attempts), self._api_key)
        message = self.failure.format(**fields, detail=detail)
        refused = isinstance(exc, self.sdk.APIStatusError) and exc.status_code in (400, 413)
        if refused and says_prompt_too_long(f"{exc} {getattr(exc, 'body', '')}"):
            return PromptTooLong(message, paid)
        return BackendError(message, paid)
