"""The configuration reference, generated from the config model: every key of every section with
its type, default, allowed values and description, read from the pydantic fields (a field's
docstring is its description), so the documentation cannot drift from what the loader accepts.
The docs site renders it into docs/reference/configuration.md (docs/hooks.py)."""

from __future__ import annotations

import json
import types
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from annotated_types import Ge, Gt, Le, Lt
from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo

from skillgrad.backend_specs import backend_names
from skillgrad.config.fields import BackendName
from skillgrad.config.sections import Config

_BACKEND_NAME = get_args(BackendName)[1]  # the validator that marks a backend name


@dataclass(frozen=True)
class KeyDoc:
    """One config key as the reference shows it (`allowed` is empty where any value of the type is)."""

    key: str
    type: str
    default: str
    allowed: str
    description: str


@dataclass(frozen=True)
class SectionDoc:
    name: str
    description: str
    keys: tuple[KeyDoc, ...]


def _members(annotation: Any) -> tuple[list[Any], bool]:
    """The types of a union without None, and whether None is one of them."""
    if get_origin(annotation) in (Union, types.UnionType):
        args = list(get_args(annotation))
        return [a for a in args if a is not type(None)], type(None) in args
    return [annotation], False


def _unannotated(annotation: Any) -> tuple[Any, list[Any]]:
    if get_origin(annotation) is Annotated:
        base, *metadata = get_args(annotation)
        return base, metadata
    return annotation, []


def _type_name(annotation: Any) -> str:
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Literal:
        return "str"
    if origin is list:
        return f"list of {_type_name(args[0])}"
    if origin is dict:
        return "mapping"
    if origin is tuple:
        return "[" + ", ".join(_type_name(a) for a in args) + "]"
    if annotation is SecretStr:
        return "secret str"
    return getattr(annotation, "__name__", str(annotation))


def _bounds(metadata: list[Any]) -> str:
    low = next((f"≥ {m.ge}" for m in metadata if isinstance(m, Ge)), None)
    low = low or next((f"> {m.gt}" for m in metadata if isinstance(m, Gt)), None)
    high = next((f"≤ {m.le}" for m in metadata if isinstance(m, Le)), None)
    high = high or next((f"< {m.lt}" for m in metadata if isinstance(m, Lt)), None)
    if low and high and low.startswith("≥") and high.startswith("≤"):
        return f"{low[2:]} to {high[2:]}"
    return ", ".join(part for part in (low, high) if part)


def _allowed(annotation: Any, metadata: list[Any]) -> str:
    if any(m == _BACKEND_NAME for m in metadata):
        return ", ".join(f"`{name}`" for name in backend_names())
    if get_origin(annotation) is Literal:
        return ", ".join(f"`{value}`" for value in get_args(annotation))
    pattern = next((getattr(m, "pattern", None) for m in metadata if getattr(m, "pattern", None)), None)
    if pattern:
        return f"matches `{pattern}`"
    return _bounds(metadata)


def _default(field: FieldInfo) -> str:
    value = field.get_default(call_default_factory=True)
    if value is None:
        return "null"
    if isinstance(value, str):
        return f"`{value}`" if value else '`""`'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple | list | dict):
        return f"`{json.dumps(list(value) if isinstance(value, tuple) else value)}`"
    return str(value)


def key_doc(section: str, name: str, field: FieldInfo) -> KeyDoc:
    members, nullable = _members(field.annotation)
    parts = [_unannotated(member) for member in members]
    metadata = [*field.metadata, *(m for _, ms in parts for m in ms)]
    type_name = " or ".join(_type_name(base) for base, _ in parts) + (" or null" if nullable else "")
    allowed = "; ".join(filter(None, (_allowed(base, metadata) for base, _ in parts)))
    description = " ".join((field.description or "").split())
    return KeyDoc(f"{section}.{name}", type_name, _default(field), allowed, description)


def sections(config: type[BaseModel] = Config) -> list[SectionDoc]:
    """Every section of the config, in the model's order, each with every key it accepts."""
    found = []
    for name, field in config.model_fields.items():
        model = field.annotation
        if field.exclude or not (isinstance(model, type) and issubclass(model, BaseModel)):
            continue
        keys = tuple(key_doc(name, key, f) for key, f in model.model_fields.items())
        found.append(SectionDoc(name, " ".join((model.__doc__ or "").split()), keys))
    return found


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def render_reference(config: type[BaseModel] = Config) -> str:
    """The reference as markdown: per section a heading, its description and a table of its keys
    (the key; its type, default and allowed values; its description)."""
    out = []
    for section in sections(config):
        out += [f"## `{section.name}`", "", section.description, ""]
        out += ["| key | type, default, allowed | description |", "| --- | --- | --- |"]
        for key in section.keys:
            value = f"{key.type}<br>default: {key.default}" + (
                f"<br>allowed: {key.allowed}" if key.allowed else ""
            )
            out.append("| " + " | ".join(_cell(c) for c in (f"`{key.key}`", value, key.description)) + " |")
        out.append("")
    return "\n".join(out)
