"""Text that every writer can encode: lone surrogates replaced once, where strings enter.

A JSON escape such as `"\\ud800"` (in a model reply, a data file or an optimizer edit) decodes to a
Python string that UTF-8 cannot encode; left in, it fails the first file write far from where it
came in. The value types that carry outside text (`Task`, `Reply`, `AgentResult`) pass their
strings through `clean_text` / `clean_json` on construction, so nothing downstream needs to care.
"""

from __future__ import annotations

from typing import Any

REPLACEMENT = "\ufffd"


def clean_text(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD (a valid surrogate pair is joined)."""
    if text.isascii():  # O(1) in CPython, and the common case: no surrogate to look for
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def clean_json(value: Any) -> Any:
    """A JSON-like value with `clean_text` applied to every string, keys included."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {clean_json(k): clean_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clean_json(v) for v in value]
    if isinstance(value, tuple):
        return tuple(clean_json(v) for v in value)
    return value
