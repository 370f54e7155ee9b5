"""Text that every writer can encode: lone surrogates replaced, once, where strings enter."""

from __future__ import annotations

import re

_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_text(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD, so it encodes as UTF-8 anywhere.

    Claude Code writes them when it cuts a string inside an emoji, a JSON reply can carry the
    escape "\\ud800", and json.loads keeps both as they are."""
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text
