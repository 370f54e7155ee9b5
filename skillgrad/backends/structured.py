"""Structured (JSON-schema) output shared by every ChatModel backend.

Backends that have native structured output (json_schema response formats, grammar-constrained
decoding, Claude Code's --json-schema) still pass the reply through `parse_structured`, so every
backend returns the same schema-valid `data` or raises the same `StructuredOutputError`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from skillgrad.backends.interface import CallMeter
from skillgrad.backends.retry import renew
from skillgrad.errors import BackendError, BudgetExceeded, StructuredOutputError
from skillgrad.lazy import lazy_import, load_meanwhile
from skillgrad.templates import render
from skillgrad.values import Message, Reply, Usage

if TYPE_CHECKING:
    import jsonschema
else:
    jsonschema = lazy_import("jsonschema")  # loaded on first use

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)
_OPENS_OBJECT = re.compile(r"\s*(?:```(?:json)?\s*)?\{")  # a reply that begins an object, fenced or not


def opens_object(text: str) -> bool:
    """True when `text` begins a JSON object, bare or in a fence: a model that writes the schema,
    whatever cut or broke its reply after that."""
    return _OPENS_OBJECT.match(text) is not None


def _candidates(text: str) -> list[str]:
    """Plausible JSON substrings, most specific first: whole text, fenced blocks, outer braces."""
    out = [text.strip()]
    out += [m.group(1).strip() for m in _FENCE.finditer(text)]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        out.append(text[start : end + 1])
    return out


def parse_structured(text: str, schema: dict[str, Any]) -> dict[str, Any]:
    """Return the schema-valid object in `text`, or raise ValueError saying what is wrong."""
    last_error = "no JSON object found in the reply"
    for candidate in _candidates(text):
        try:
            data = json.loads(candidate)
        except json.JSONDecodeError as exc:
            last_error = f"invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
            continue
        if not isinstance(data, dict):
            last_error = "the reply is JSON but not an object"
            continue
        try:
            jsonschema.validate(data, schema)
        except jsonschema.ValidationError as exc:
            where = "/".join(str(p) for p in exc.absolute_path) or "(root)"
            last_error = f"JSON does not match the schema at {where}: {exc.message}"
            continue
        return data
    raise ValueError(last_error)


def complete_structured(
    call: Callable[[list[Message]], tuple[str, Usage]],
    messages: list[Message],
    schema: dict[str, Any] | None,
    *,
    backend: str,
    stage: str,
    retries: int,
    meter: CallMeter | None = None,
) -> Reply:
    """Call the model until its reply parses against `schema`; at most `retries` re-asks.

    `call` does one (transport-retried) request and returns (text, usage). Each re-ask shows the
    model its own reply and the reason it was refused, and is reserved through `meter` before it
    is sent, as a retry is (`backends.retry`). Usage of every attempt is summed; a failure
    carries what the replies before it cost in its `paid`.
    Without a schema it is one plain call, so every backend's `complete` is this one function.
    """
    if schema is None:
        text, used = call(messages)
        return Reply(text=text, usage=used)
    load_meanwhile("jsonschema")  # the reply is validated with it: it loads while the call waits
    usage = Usage()
    convo = list(messages)
    text = ""
    reason = ""
    for asked in range(retries + 1):
        try:
            if asked:
                renew(meter, Usage())
            text, used = call(convo)
        except (BackendError, BudgetExceeded) as exc:
            exc.paid = usage + (exc.paid or Usage())
            raise
        usage = usage + used
        try:
            return Reply(text=text, data=parse_structured(text, schema), usage=usage)
        except ValueError as exc:
            reason = str(exc)
        fix = render("skillgrad.backends", "json_retry", reason=reason, schema=json.dumps(schema))
        convo = [*messages, Message("assistant", text or "(empty reply)"), Message("user", fix)]
    raise StructuredOutputError(backend, stage, text, reason, paid=usage, began_object=opens_object(text))
