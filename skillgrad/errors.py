"""Error types shared by every module, and raised by the public API (`skillgrad.train`,
`skillgrad.evaluate`; docs/api.md).

`UserError` is for anything the user can fix (bad config, missing file, broken data): its message
names the file / key / value and says what to do, and the CLI prints it as one line with exit code
2. Every error skillgrad raises on purpose is a `SkillgradError`; one raised after a run folder was
created carries that folder as `run_dir` (the finished work kept there).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from skillgrad.values import Usage


class SkillgradError(Exception):
    """The base of every error skillgrad raises on purpose. `run_dir`: the run folder the failed
    call had written to (its finished work is kept there), or None when it failed before one."""

    run_dir: Path | None = None


class UserError(SkillgradError):
    """A mistake in the user's input; shown as one line, exit code 2, no traceback."""


class BudgetExceeded(SkillgradError):
    """A cap of the `budget` section was reached. Training stops at a safe point and returns
    (`stopped: budget`, the best skill so far); an evaluation, whose partial score would mean
    nothing, raises it. `paid`: what the call that met the cap had paid for its earlier attempts
    (a retry refused at the cap), for its caller to record."""

    paid: Usage | None = None


class TrainingFailed(SkillgradError, RuntimeError):
    """The run cannot go on (every task of a stage failed, the optimizer never returned usable
    JSON, the run folder cannot be written); finished work is kept in `run_dir`."""


class EvaluationFailed(SkillgradError, RuntimeError):
    """Every task of an evaluation failed to run, so its score of 0 measured nothing; the results
    are kept in `run_dir`."""


class Interrupted(KeyboardInterrupt):
    """Ctrl-C (KeyboardInterrupt) during a run; `run_dir` keeps the finished work, and a train run
    continues with `resume`."""

    def __init__(self, run_dir: Path) -> None:
        super().__init__(f"interrupted; finished work is kept in {run_dir}")
        self.run_dir = run_dir


class StructuredOutputError(SkillgradError, RuntimeError):
    """A model still did not return schema-valid JSON after the configured retries. `paid`: what
    its attempts cost (see `BackendError`)."""

    def __init__(
        self,
        backend: str,
        stage: str,
        snippet: str,
        reason: str = "",
        paid: Usage | None = None,
        began_object: bool = False,
    ) -> None:
        self.backend = backend
        self.stage = stage
        self.snippet = snippet
        self.paid = paid or Usage()
        # the last reply opened a JSON object it did not finish as the schema asks (cut at its
        # output cap, or broken in it), unlike a reply in prose (`structured.opens_object`)
        self.began_object = began_object
        detail = f" ({reason})" if reason else ""
        super().__init__(
            f"{backend}: stage '{stage}' returned no schema-valid JSON after retries{detail}; "
            f"last reply began: {snippet[:300]!r}"
        )


class BackendError(SkillgradError, RuntimeError):
    """A backend call failed for good (after its own retries): network, auth, CLI crash. `paid`
    is what its attempts may have cost (an unanswered attempt may be billed): the caller records
    it as paid usage, because a provider bills a failed call too."""

    def __init__(self, message: str = "", paid: Usage | None = None) -> None:
        super().__init__(message)
        self.paid = paid or Usage()


class PromptTooLong(BackendError):
    """The model's server refused the prompt as longer than the model's context window (an HTTP
    400 or 413, or the local runtime's refusal, whose message says so: `backends.common.
    says_prompt_too_long`). The same prompt would be refused again; a shorter one may pass, so the
    reflect stage asks again with fewer tasks shown."""


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
