"""What a test needs from the machine. Locally a missing piece skips the test with the fix; under
`CI=true` it fails, because `.ci/run` installs everything the suite needs (a skip there would hide
a test that never ran)."""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import pytest


def need(available: object, reason: str) -> None:
    """Skip (fail under CI) unless `available` is truthy; usable in a test or at module level."""
    if available:
        return
    if os.environ.get("CI"):
        pytest.fail(f"CI must provide this: {reason}", pytrace=False)
    pytest.skip(reason, allow_module_level=True)


def need_module(name: str, install: str) -> ModuleType:
    """The module `name`; a skip naming `install` where it is missing (a failure under CI)."""
    try:
        return importlib.import_module(name)
    except ImportError:
        need(False, f"{name} is not installed: {install}")
        raise
