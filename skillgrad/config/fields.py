"""What every config section shares: the base model (a field's docstring is its description),
the registered backend names and the bounds of keys where a larger value is a typo."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, PlainValidator
from pydantic_core import PydanticCustomError

from skillgrad.backend_specs import BACKENDS, backend_names


def _registered_backend(value: Any) -> str:
    """A backend name from the registry (read at validation time), else the error a Literal of
    the names would give."""
    if isinstance(value, str) and value in BACKENDS:
        return value
    names = [repr(n) for n in backend_names()]
    expected = f"{', '.join(names[:-1])} or {names[-1]}" if len(names) > 1 else "".join(names)
    raise PydanticCustomError("literal_error", "Input should be {expected}", {"expected": expected})


BackendName = Annotated[str, PlainValidator(_registered_backend)]
# Upper bounds of keys where a larger value is a typo that would hang or exhaust the machine.
DAY_S = 86_400.0  # any one call, CLI session or self-test
MAX_TOKENS = 1_000_000  # output tokens of one reply
MAX_TURNS = 10_000  # tool calls of one harness session
MAX_PARALLEL = 1024  # calls in flight, threads, workers, CPUs
Schedule = Literal["constant", "linear", "cosine"]
DEFAULT_MIN_LEARNING_RATE = 2


class Section(BaseModel):
    # A field's docstring is its description: the configuration reference is generated from them.
    model_config = ConfigDict(extra="forbid", validate_assignment=True, use_attribute_docstrings=True)
