"""Secret hygiene by value: every artifact write passes through one `Redactor`.

Redaction is by VALUE, not by field: the secret strings are collected once (config values under
key/token/secret/password keys, `SecretStr`s, credential environment variables, passwords inside
URLs) and replaced wherever they appear, so a key echoed back inside an agent transcript, a log line
or a file the agent wrote is caught too. An agent that tries to smuggle a key out is caught in the
encodings a shell makes easy: JSON/URL escapes, hex, base64 (any alignment inside a longer base64
stream, line-wrapped or not, standard or url-safe alphabet) and pieces of a long key (any run of at
least a third of it, e.g. its two halves printed apart). Credentials we were never told about are
still caught in the spellings that carry them over HTTP (`Authorization: Bearer ...`,
`x-api-key: ...`, `scheme://user:password@host`). Values shorter than `MIN_SECRET_CHARS` are ignored:
redacting "1" or "true" everywhere would destroy the artifacts and protects nothing.

A Redactor is immutable after construction (one compiled regex), so it is safe to share between
threads.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote, quote_plus, urlsplit

from pydantic import BaseModel, SecretStr

REDACTED = "[REDACTED]"
MIN_SECRET_CHARS = 8
# Keys at least this long are also hidden piecewise: any run of a third of the key (at least
# MIN_SECRET_CHARS) is unique to it, so a key printed in halves (or thirds) is caught.
SPLIT_MIN_KEY_CHARS = 24

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
    # userinfo of a URL: `https://user:pass@host`, `https://TOKEN@host`
    r"(?i:(?P<h3>\b[a-z][a-z0-9+.\-]*://)[^\s/?#@\"'<>\\]+@)",
)
_WRAP = r"(?:\r?\n)?"  # base64 tools wrap lines (76 columns by default)


def is_credential_env(name: str) -> bool:
    """An environment variable NAME that holds a credential by convention."""
    return name.upper() in KNOWN_CREDENTIAL_ENV or bool(_CREDENTIAL_ENV_NAME.search(name))


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
    elif isinstance(node, str):
        if _is_secret_key(key):
            out.append(node)
        out.extend(url_credentials(node))


def url_credentials(value: str) -> list[str]:
    """The password (or bare token user) inside a `scheme://user:password@host` string."""
    if "://" not in value or "@" not in value:
        return []
    try:
        parts = urlsplit(value.strip())
        password, user = parts.password, parts.username
    except ValueError:
        return []
    if password:
        return [password]
    return [user] if user else []


def _spellings(value: str) -> set[str]:
    """The value plus the escaped and encoded forms it takes in JSON text, URLs and hex dumps."""
    raw = value.encode("utf-8", "surrogatepass")
    forms = {value, raw.hex(), raw.hex().upper()}
    forms.add(json.dumps(value)[1:-1])
    forms.add(json.dumps(value, ensure_ascii=False)[1:-1])
    forms.add(json.dumps(value)[1:-1].replace("/", "\\/"))
    forms.add(quote(value, safe=""))
    forms.add(quote_plus(value, safe=""))
    return forms


def _base64_cores(raw: bytes) -> set[str]:
    """The base64 characters that `raw` alone determines, at each of the three byte alignments it
    can have inside a longer stream (`echo $KEY | base64`, `env | base64`), in both alphabets."""
    cores = set()
    for shift in range(3):
        encoded = base64.b64encode(bytes(shift) + raw + bytes(3)).decode("ascii")
        # char i covers bits 6i..6i+5: keep the chars whose bits all fall inside `raw`
        inside = [
            i for i in range(len(encoded)) if 6 * i >= 8 * shift and 6 * i + 6 <= 8 * (shift + len(raw))
        ]
        core = encoded[inside[0] : inside[-1] + 1] if inside else ""
        if len(core) >= MIN_SECRET_CHARS:
            cores.add(core)
            cores.add(core.translate(str.maketrans("+/", "-_")))
    return cores


def _pieces(value: str) -> list[str]:
    """Every run of `len // 3` characters of a long key: a key split apart is still caught."""
    if len(value) < SPLIT_MIN_KEY_CHARS:
        return []
    width = max(MIN_SECRET_CHARS, len(value) // 3)
    return [value[i : i + width] for i in range(len(value) - width + 1)]


class Redactor:
    """Replaces known secret values and credential headers with `[REDACTED]`."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        values = {s.strip() for s in secrets if isinstance(s, str)}
        self._secrets = frozenset(v for v in values if len(v) >= MIN_SECRET_CHARS)
        literal = {form for value in self._secrets for form in _spellings(value)}
        wrapped = {
            core for value in self._secrets for core in _base64_cores(value.encode("utf-8", "surrogatepass"))
        }
        # piece -> the rest of its key after it, so a match is extended over as much as follows
        self._continuations: dict[str, list[str]] = {}
        for value in self._secrets:
            for start, piece in enumerate(_pieces(value)):
                self._continuations.setdefault(piece, []).append(value[start + len(piece) :])
        # Longest first, so a secret that contains another is replaced whole (pieces come last).
        alternatives = [re.escape(f) for f in sorted(literal, key=lambda f: (-len(f), f))]
        alternatives += [_WRAP.join(map(re.escape, f)) for f in sorted(wrapped, key=lambda f: (-len(f), f))]
        alternatives += [re.escape(f) for f in sorted(set(self._continuations) - literal)]
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
            if is_credential_env(name):
                found.append(value)
            found.extend(url_credentials(value))  # HTTPS_PROXY=http://user:pass@proxy, DATABASE_URL
        return cls(found)

    @property
    def count(self) -> int:
        """How many distinct secret values are hidden (never the values themselves)."""
        return len(self._secrets)

    def redact(self, text: str) -> str:
        if not text:
            return text
        out: list[str] = []
        pos = 0
        while (match := self._pattern.search(text, pos)) is not None:
            start, end = match.span()
            prefix = match.group("h1") or match.group("h2") or match.group("h3")
            for rest in self._continuations.get(match.group(), ()):
                end = max(end, match.end() + _common_prefix(text, match.end(), rest))
            out.append(text[pos:start])
            out.append(f"{prefix}{REDACTED}@" if match.group("h3") else f"{prefix or ''}{REDACTED}")
            pos = max(end, start + 1)
        out.append(text[pos:])
        return "".join(out)

    def redact_bytes(self, data: bytes) -> bytes:
        """`redact` for file contents of any encoding: undecodable bytes pass through unchanged."""
        text = data.decode("utf-8", "surrogateescape")
        redacted = self.redact(text)
        return data if redacted == text else redacted.encode("utf-8", "surrogateescape")

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


def _common_prefix(text: str, start: int, rest: str) -> int:
    """How many characters of `rest` follow in `text` at `start`."""
    n = 0
    while n < len(rest) and start + n < len(text) and text[start + n] == rest[n]:
        n += 1
    return n
