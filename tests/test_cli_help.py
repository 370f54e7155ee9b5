"""Issue 32, defect 9: the CLI's help agrees with the docs, no flag is accepted and ignored, no
docstring cites a document the repository does not have, and the dead code is gone."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "skillgrad.cli", *args], capture_output=True, text=True, timeout=60
    )


def _help(command: str) -> str:
    proc = _cli(command, "--help")
    assert proc.returncode == 0, proc.stderr
    return " ".join(proc.stdout.split())  # argparse wraps lines


def test_help_says_what_the_docs_say() -> None:
    sessions = (REPO / "docs" / "guides" / "sessions.md").read_text(encoding="utf-8")
    packages = (REPO / "docs" / "guides" / "skill-packages.md").read_text(encoding="utf-8")
    # harvest reads Codex sessions too (the guide: `skillgrad harvest --from ~/.codex/sessions ...`)
    assert "--from ~/.codex/sessions" in sessions
    harvest = _help("harvest")
    assert "Claude Code or Codex sessions" in harvest and "~/.codex/sessions" in harvest
    top = " ".join(_cli("--help").stdout.split())
    assert "mine your Claude Code or Codex sessions" in top
    # eval --skill takes a package folder (the guide: `skillgrad eval --skill runs/x/best_skill`)
    assert "`skillgrad eval --skill runs/x/best_skill` evaluates a\n  package" in packages
    assert "a SKILL.md file or a skill package folder" in _help("eval")
    assert "markdown file" not in _help("eval")


@pytest.mark.parametrize("flag", ["--backend", "--optimizer-backend", "--target-backend", "--target_backend"])
def test_trace_refuses_backend_flags_it_would_ignore(tmp_path: Path, flag: str) -> None:
    session = tmp_path / "s.jsonl"
    session.write_text("", encoding="utf-8")
    proc = _cli("trace", str(session), flag, "openai_chat")
    assert proc.returncode == 2 and f"unrecognized arguments: {flag}" in proc.stderr
    assert "--backend" not in _help("trace") and "--set" in _help("trace")  # the trace.* caps stay


def test_no_docstring_cites_a_document_that_is_not_in_the_repository() -> None:
    cited = set()
    for path in (REPO / "skillgrad").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        cited |= {(path.name, m) for m in re.findall(r"\b((?:docs/)?[A-Z][A-Z_]+\.md)\b", text)}
    harness_files = {"SKILL.md", "CLAUDE.md", "AGENTS.md"}  # files agents read, not documents cited
    missing = sorted((n, doc) for n, doc in cited if doc not in harness_files and not (REPO / doc).is_file())
    assert missing == []


def test_dead_code_is_gone() -> None:
    """Removed, not kept for tests alone: Ledger.calls_left (its docstring described what
    Accounting.reserve does), Redactor.with_values and Sandbox.isolated_network (no caller)."""
    from skillgrad.benchmarks.sandbox import Sandbox
    from skillgrad.budget import Ledger
    from skillgrad.redact import Redactor

    assert not hasattr(Ledger, "calls_left") and not hasattr(Redactor, "with_values")
    assert not hasattr(Sandbox, "isolated_network")
