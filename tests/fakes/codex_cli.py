"""Where the tests find the pinned Codex CLI that `.ci/run` installs (`npm ci --prefix .ci/codex`)."""

from __future__ import annotations

from pathlib import Path

from tests.needs import need

CODEX_CLI = Path(__file__).resolve().parents[2] / ".ci" / "codex" / "node_modules" / ".bin" / "codex"


def require_codex_cli() -> Path:
    """The CLI's path; a skip with the fix when it is not installed (a failure in CI, which must)."""
    need(
        CODEX_CLI.is_file(),
        f"the pinned Codex CLI is not installed at {CODEX_CLI}: run npm ci --prefix .ci/codex",
    )
    return CODEX_CLI
