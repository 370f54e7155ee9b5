"""Secrets by pattern: credentials whose value we were never told, in the shapes they commonly take.

Applied to everything a harvest writes, after the by-value Redactor (config and environment
secrets). Each pattern keeps its prefix (the key name, `Bearer `, `https://user:`) so the text
still says what was there.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from skillgrad.redact import REDACTED

_PATTERNS = (
    re.compile(r"\bsk-(?:ant-|proj-|live-|test-)?[A-Za-z0-9_\-]{16,}"),  # Anthropic, OpenAI, Stripe
    re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}|\bgithub_pat_[A-Za-z0-9_]{20,}"),  # GitHub
    re.compile(r"\bglpat-[A-Za-z0-9_\-]{20,}"),  # GitLab
    re.compile(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}"),  # Slack
    re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b"),  # AWS access key id
    re.compile(r"\bAIza[0-9A-Za-z_\-]{35}\b"),  # Google API key
    re.compile(r"\bhf_[A-Za-z0-9]{30,}\b"),  # Hugging Face
    re.compile(r"\beyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}"),  # JWT
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----", re.S),
)
# key = value spellings (env files, shell exports, JSON): the name stays, the value goes.
_ASSIGNMENT = re.compile(
    r"(?i)(?P<name>\b[\w.-]*(?:api[_-]?key|secret|token|password|passwd|credential)[\w.-]*[\"']?\s*[:=]\s*[\"']?)"
    r"(?P<value>[^\s\"',;}]{8,})"
)
_URL_CREDENTIALS = re.compile(r"(?P<scheme>\b[a-z][a-z0-9+.-]*://[^\s/:@]+:)(?P<password>[^\s/@]+)@")
_BEARER = re.compile(r"(?i)(?P<prefix>\bbearer\s+)[A-Za-z0-9._~+/=\-]{12,}")


def redact_patterns(text: str) -> str:
    for pattern in _PATTERNS:
        text = pattern.sub(REDACTED, text)
    text = _ASSIGNMENT.sub(lambda m: m.group("name") + REDACTED, text)
    text = _URL_CREDENTIALS.sub(lambda m: m.group("scheme") + REDACTED + "@", text)
    return _BEARER.sub(lambda m: m.group("prefix") + REDACTED, text)


def redact_tree(obj: Any, by_value: Callable[[str], str]) -> Any:
    """A copy of a JSON-like value with every string redacted by value, then by pattern."""
    if isinstance(obj, str):
        return redact_patterns(by_value(obj))
    if isinstance(obj, dict):
        return {k: redact_tree(v, by_value) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [redact_tree(v, by_value) for v in obj]
    return obj
