"""A pytest plugin that reports outcomes where the code under test cannot forge them.

Loaded with `-p skillgrad_verdict` inside the scoring sandbox, before any test file or solution is
imported. At load it takes a one-time nonce from stdin (a pipe: once read, gone) and the sandbox's
private report descriptor, and records the identity of every function and class member of the test
framework (unittest, pytest, pluggy, builtins). At session end it writes one JSON verdict with the
nonce to the report descriptor and closes it, so:
- outcomes come from pytest's own reports, not from a file the solution could rewrite (a junit XML
  replaced from an atexit hook changes nothing);
- exiting early (`sys.exit(0)` at import, `os._exit(0)` in a test) leaves no verdict: a failure;
- a framework patched by the solution (`unittest.TestCase.assertEqual = ...`) is detected at the
  end and fails the run, naming what changed.
Standard library and pytest only: this file runs inside the sandbox, apart from skillgrad.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import os
import sys
from typing import Any

import pytest

_WATCHED = ("unittest", "_pytest", "pytest", "pluggy")
_NONCE = sys.stdin.buffer.read(256).decode("ascii", "replace").strip()
_REPORT_FD = int(os.environ.pop("SKILLGRAD_REPORT_FD", "-1"))
_outcomes: dict[str, dict[str, str]] = {}


def _framework() -> dict[str, int]:
    """Identity of every callable and class member the tests rely on."""
    seen: dict[str, int] = {}
    modules = [m for n, m in list(sys.modules.items()) if n.split(".")[0] in _WATCHED and m is not None]
    for module in [builtins, *modules]:
        for name, value in list(vars(module).items()):
            if callable(value):
                seen[f"{module.__name__}.{name}"] = id(value)
            if isinstance(value, type) and getattr(value, "__module__", "").split(".")[0] in _WATCHED:
                for attr, member in list(vars(value).items()):
                    if callable(member) or isinstance(member, staticmethod | classmethod | property):
                        seen[f"{module.__name__}.{name}.{attr}"] = id(member)
    return seen


_BEFORE: dict[str, int] = {}


def pytest_configure(config: Any) -> None:
    _BEFORE.update(_framework())


def _last_line(report: Any) -> str:
    lines = str(getattr(report, "longreprtext", "") or "").strip().splitlines()
    return lines[-1][:200] if lines else ""


def pytest_runtest_logreport(report: Any) -> None:
    entry = _outcomes.setdefault(report.nodeid, {"outcome": "passed", "message": ""})
    if report.failed and entry["outcome"] in ("passed", "skipped"):
        entry["outcome"] = "failed" if report.when == "call" else "error"
        entry["message"] = _last_line(report)
    elif report.skipped and entry["outcome"] == "passed":
        entry["outcome"] = "skipped"


def pytest_collectreport(report: Any) -> None:
    if report.failed:
        _outcomes[f"collect:{report.nodeid}"] = {"outcome": "error", "message": _last_line(report)}


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: Any, exitstatus: Any) -> None:
    after = _framework()
    changed = sorted(name for name, ident in _BEFORE.items() if after.get(name, ident) != ident)
    verdict = {"nonce": _NONCE, "exitstatus": int(exitstatus), "tests": _outcomes, "tampered": changed[:20]}
    if _REPORT_FD >= 0:
        with contextlib.suppress(OSError):
            os.write(_REPORT_FD, json.dumps(verdict).encode())
            os.close(_REPORT_FD)
