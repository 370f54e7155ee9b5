"""A bounded string never ends mid-word: what a constrained decoder's length bound cut is cut back
to its last whole sentence or line, else its last whole word, or the edit it belongs to is refused.

The local backend decodes against a copy of the caller's schema whose free strings have a
`maxLength` (`local.bounded_schema`), so that every reply closes within its token budget. A
string that reached its bound was closed by the grammar, not by the model: it stops wherever
the bound fell ("... includes a place-b"). `whole_sentences` walks the reply beside that bounded
schema and, for each such string:

- keeps it up to its last sentence end (`.`, `!`, `?`) or line break, when that is left;
- else up to its last whole word, one a space or a closing mark (`,`, `;`, `:`, a bracket or
  a quote) ends (a rule cut mid-sentence still says what it says, in whole words);
- else, when the string is required text (`minLength` of 1 or more: an edit's rule) inside an
  array item (one edit), drops the item: one unbroken word cut in two is no rule.

The reply is then validated against the caller's own schema as every reply is.
"""

from __future__ import annotations

import json
import re
from typing import Any

_END = re.compile(r"[.!?][\"')\]*_`]*(?=\s|$)|\n")
_CLOSERS = tuple(",;:)]}\"'`")  # a word ending in one of these is whole
_DROP = object()  # a required string left without a whole word: its array item goes


def _matches(value: Any, schema: dict[str, Any]) -> bool:
    import jsonschema

    return bool(jsonschema.Draft202012Validator(schema).is_valid(value))


def _sentence_cut(text: str) -> str:
    ends = list(_END.finditer(text))
    if not ends:
        return ""
    last = ends[-1]
    return text[: last.start() if last.group() == "\n" else last.end()].rstrip()


def _word_cut(text: str) -> str:
    head = text.rstrip()
    if len(head) < len(text) or head.endswith(_CLOSERS):  # the bound fell after a whole word
        return head
    space = max(head.rfind(" "), head.rfind("\n"))
    return head[:space].rstrip() if space > 0 else ""


def _string(value: str, schema: dict[str, Any], in_item: bool) -> Any:
    bound = schema.get("maxLength")
    free = not any(k in schema for k in ("enum", "const", "pattern", "format"))
    if not free or not isinstance(bound, int) or bound <= 0 or len(value) < bound:
        return value
    required = int(schema.get("minLength", 0))
    for cut in (_sentence_cut(value), _word_cut(value)):
        if len(cut) >= max(1, required):
            return cut
    if not required:
        return ""  # optional text (a rationale) with no whole word left
    return _DROP if in_item else value


def _walk(value: Any, schema: Any, in_item: bool) -> Any:
    if not isinstance(schema, dict):
        return value
    variants = schema.get("anyOf")
    if isinstance(variants, list):
        chosen = next((v for v in variants if isinstance(v, dict) and _matches(value, v)), None)
        return value if chosen is None else _walk(value, chosen, in_item)
    if isinstance(value, str):
        return _string(value, schema, in_item)
    if isinstance(value, list):
        items = schema.get("items", {})
        kept = [_walk(v, items, True) for v in value]
        return [v for v in kept if v is not _DROP]
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        out = {}
        for key, item in value.items():
            walked = _walk(item, properties.get(key, {}), in_item)
            if walked is _DROP:
                return _DROP
            out[key] = walked
        return out
    return value


def whole_sentences(text: str, bounded: dict[str, Any]) -> str:
    """`text`, a reply decoded against `bounded`, with every string its bound closed cut back as
    the module says; a reply that is not a JSON object is returned as it is."""
    try:
        data = json.loads(text)
    except ValueError:
        return text
    if not isinstance(data, dict):
        return text
    walked = _walk(data, bounded, False)
    if walked is _DROP or walked == data:
        return text
    return json.dumps(walked, ensure_ascii=False)
