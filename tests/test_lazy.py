"""Vendor SDKs load on first use: commands that never call a backend never import one."""

from __future__ import annotations

import subprocess
import sys

import pytest

from skillgrad.lazy import lazy_import


def imported_after(code: str) -> set[str]:
    probe = f"{code}\nimport sys\nprint(' '.join(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    return set(out.stdout.split())


def test_backend_modules_do_not_import_their_sdk_until_used() -> None:
    heavy = {"openai", "anthropic", "jsonschema", "xllamacpp"}
    code = "import skillgrad.cli, skillgrad.session.commands"
    code += "\nimport skillgrad.backends.openai_compat, skillgrad.backends.anthropic_api"
    code += "\nimport skillgrad.backends.local"
    assert heavy.isdisjoint(imported_after(code))
    used = imported_after(
        code + "\nfrom skillgrad.backends import openai_compat\nopenai_compat.openai.OpenAI"
    )
    assert "openai" in used


def test_a_missing_package_fails_at_once() -> None:
    with pytest.raises(ImportError) as info:
        lazy_import("no_such_package_skillgrad_test")
    assert info.value.name == "no_such_package_skillgrad_test"
    json_module = lazy_import("json")
    assert json_module.dumps([1]) == "[1]"


def test_the_claude_code_backend_does_not_import_its_sdk_until_used() -> None:
    code = "import skillgrad.backends.claude_code, skillgrad.backends.claude_events"
    assert "claude_agent_sdk" not in imported_after(code)
    used = code + "\nskillgrad.backends.claude_code.sdk.ClaudeAgentOptions"
    assert "claude_agent_sdk" in imported_after(used)
