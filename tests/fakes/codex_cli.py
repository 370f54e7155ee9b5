"""Where the tests find the pinned Codex CLI that `.ci/run` installs (`npm ci --prefix .ci/codex`)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

CODEX_CLI = Path(__file__).resolve().parents[2] / ".ci" / "codex" / "node_modules" / ".bin" / "codex"


def require_codex_cli() -> Path:
    """The CLI's path; a skip with the fix when it is not installed (a failure in CI, which must)."""
    if CODEX_CLI.is_file():
        return CODEX_CLI
    reason = f"the pinned Codex CLI is not installed at {CODEX_CLI}: run npm ci --prefix .ci/codex"
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)
