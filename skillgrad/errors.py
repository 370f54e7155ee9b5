"""Error types shared by every module.

`UserError` is the only exception the CLI turns into a one-line message and exit code 2: raise it
for anything the user can fix (bad config, missing file, broken data). Its message must name the
file / key / value and say what to do.
"""

from __future__ import annotations

import sys
from typing import Any


class UserError(Exception):
    """A mistake in the user's input; shown as one line, exit code 2, no traceback."""


class StructuredOutputError(RuntimeError):
    """A model still did not return schema-valid JSON after the configured retries."""

    def __init__(self, backend: str, stage: str, snippet: str, reason: str = "") -> None:
        self.backend = backend
        self.stage = stage
        self.snippet = snippet
        detail = f" ({reason})" if reason else ""
        super().__init__(
            f"{backend}: stage '{stage}' returned no schema-valid JSON after retries{detail}; "
            f"last reply began: {snippet[:300]!r}"
        )


class BackendError(RuntimeError):
    """A backend call failed for good (after its own retries): network, auth, CLI crash."""


class FatalBackendError(BackendError):
    """No further call can succeed: the credentials were refused (401/403) or the account is out of
    quota or credit. Raised by every backend, for either role, on the first such answer; it is not
    one task's failure, so agents and the trainer let it through and the run stops at once (summary
    `stopped: error`, one line naming the key to fix, exit code 2)."""


def describe_validation(exc: Any) -> str:
    """A pydantic `ValidationError` as one line: where, what, and the value found (shortened; not
    for a whole object or list that a check across its parts refused: the message says what)."""
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"])
    value = err.get("input")
    found = repr(value)
    found = found if len(found) <= 60 else f"{found[:57]}..."
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    if err["type"] in ("unexpected_keyword_argument", "extra_forbidden"):
        return f"{where}: unknown key{more}"
    if err["type"] == "value_error" and isinstance(value, dict | list):
        return f"{where + ': ' if where else ''}{err['msg']}{more}"
    return f"{where + ': ' if where else ''}{err['msg']}, got {found}{more}"


def print_warning(line: str) -> None:
    """The one spelling of a warning: something was left out or switched off, and the command
    goes on (exit 0). `line` names what and why."""
    print(f"skillgrad: warning: {line}", file=sys.stderr, flush=True)
