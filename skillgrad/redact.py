"""Secret hygiene by value: every artifact write passes through one `Redactor`.

Redaction is by VALUE, not by field: the secret strings are collected once (config values under
key/token/secret/password keys, `SecretStr`s, credential environment variables) and replaced
wherever they appear, so a key echoed back inside an agent transcript or a log line is caught too.
Credentials we were never told about are still caught in the two spellings that carry them over
HTTP (`Authorization: Bearer ...`, `x-api-key: ...`). Values shorter than `MIN_SECRET_CHARS` are
ignored: redacting "1" or "true" everywhere would destroy the artifacts and protects nothing.

A Redactor is immutable after construction (one compiled regex), so it is safe to share between
threads.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote

from pydantic import BaseModel, SecretStr

REDACTED = "[REDACTED]"
MIN_SECRET_CHARS = 8

SECRET_KEY_WORDS = ("key", "token", "secret", "password", "passwd", "credential")

KNOWN_CREDENTIAL_ENV = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "OPENAI_API_KEY",
    "AZURE_OPENAI_API_KEY",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "HF_TOKEN",
    "HUGGING_FACE_HUB_TOKEN",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "GOOGLE_API_KEY",
    "GEMINI_API_KEY",
    "MISTRAL_API_KEY",
    "GROQ_API_KEY",
    "TOGETHER_API_KEY",
    "OPENROUTER_API_KEY",
    "MLFLOW_TRACKING_TOKEN",
    "MLFLOW_TRACKING_PASSWORD",
    "WANDB_API_KEY",
)

# Env var NAMES that hold credentials by convention (*_API_KEY, *_TOKEN, *_SECRET, *PASSWORD*, ...).
_CREDENTIAL_ENV_NAME = re.compile(
    r"(?:_API_KEY|_APIKEY|_TOKEN|_SECRET|_SECRET_KEY|_ACCESS_KEY|_PRIVATE_KEY)$|PASSWORD|PASSWD", re.I
)

# Header spellings in text, JSON and Python reprs: the prefix group is kept, the credential goes.
_HEADER_PATTERNS = (
    r"(?i:(?P<h1>\bauthorization[\"']?\s*[:=]\s*[\"']?(?:bearer|basic|token)\s+)[A-Za-z0-9._~+/=\-]+)",
    r"(?i:(?P<h2>\b(?:x-api-key|api-key|x-goog-api-key)[\"']?\s*[:=]\s*[\"']?)[^\s\"',;}]+)",
)


def _is_secret_key(name: str) -> bool:
    lowered = name.lower()
    return any(word in lowered for word in SECRET_KEY_WORDS)


def _walk_config(node: Any, key: str, out: list[str]) -> None:
    """Collect string values under secret-looking keys, and every SecretStr anywhere."""
    if isinstance(node, SecretStr):
        out.append(node.get_secret_value())
    elif isinstance(node, BaseModel):
        for name in type(node).model_fields:
            _walk_config(getattr(node, name, None), name, out)
    elif isinstance(node, Mapping):
        for name, value in node.items():
            _walk_config(value, str(name), out)
    elif isinstance(node, list | tuple | set | frozenset):
        for value in node:
            _walk_config(value, key, out)
    elif isinstance(node, str) and _is_secret_key(key):
        out.append(node)


def _spellings(value: str) -> set[str]:
    """The value plus the escaped forms it takes inside JSON text and URLs."""
    forms = {value}
    forms.add(json.dumps(value)[1:-1])
    forms.add(json.dumps(value, ensure_ascii=False)[1:-1])
    forms.add(json.dumps(value)[1:-1].replace("/", "\\/"))
    forms.add(quote(value, safe=""))
    return forms


class Redactor:
    """Replaces known secret values and credential headers with `[REDACTED]`."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        values = {s.strip() for s in secrets if isinstance(s, str)}
        self._secrets = frozenset(v for v in values if len(v) >= MIN_SECRET_CHARS)
        forms = {form for value in self._secrets for form in _spellings(value)}
        # Longest first, so a secret that contains another is replaced whole.
        alternatives = [re.escape(f) for f in sorted(forms, key=lambda f: (-len(f), f))]
        parts = list(_HEADER_PATTERNS)
        if alternatives:
            # Values match case-sensitively; header names case-insensitively via scoped (?i:...).
            parts.insert(0, "(?:" + "|".join(alternatives) + ")")
        self._pattern = re.compile("|".join(parts))

    @classmethod
    def from_config(cls, cfg: Any, environ: Mapping[str, str]) -> Redactor:
        """Secrets from a config object (pydantic model or mapping) and an environment mapping."""
        found: list[str] = []
        _walk_config(cfg, "", found)
        for name, value in environ.items():
            if name.upper() in KNOWN_CREDENTIAL_ENV or _CREDENTIAL_ENV_NAME.search(name):
                found.append(value)
        return cls(found)

    def with_values(self, values: Iterable[str]) -> Redactor:
        """A new Redactor that also hides `values` (e.g. a token obtained at run time)."""
        return Redactor([*self._secrets, *values])

    @property
    def count(self) -> int:
        """How many distinct secret values are hidden (never the values themselves)."""
        return len(self._secrets)

    def _replace(self, match: re.Match[str]) -> str:
        prefix = match.group("h1") or match.group("h2")
        return f"{prefix}{REDACTED}" if prefix else REDACTED

    def redact(self, text: str) -> str:
        return self._pattern.sub(self._replace, text) if text else text

    __call__ = redact

    def redact_json(self, obj: Any) -> Any:
        """A copy of a JSON-like value with every string (keys included) redacted."""
        if isinstance(obj, str):
            return self.redact(obj)
        if isinstance(obj, Mapping):
            return {
                self.redact(str(k)) if isinstance(k, str) else k: self.redact_json(v) for k, v in obj.items()
            }
        if isinstance(obj, list):
            return [self.redact_json(v) for v in obj]
        if isinstance(obj, tuple):
            return tuple(self.redact_json(v) for v in obj)
        return obj
