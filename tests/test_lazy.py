"""Vendor SDKs load on first use: commands that never call a backend never import one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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


def test_finding_the_bundled_cli_does_not_import_the_sdk() -> None:
    import claude_agent_sdk

    from skillgrad.backends.claude_code import bundled_cli

    shipped = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
    assert shipped.is_file() and bundled_cli() == shipped
    code = "from skillgrad.backends.claude_code import bundled_cli\nassert bundled_cli() is not None"
    assert "claude_agent_sdk" not in imported_after(code)


def test_load_meanwhile_imports_in_the_background_and_leaves_errors_to_the_first_use() -> None:
    code = (
        "import threading\nfrom skillgrad.lazy import load_meanwhile\n"
        "load_meanwhile('jsonschema'); load_meanwhile('no_such_package_skillgrad_test')\n"
        "[t.join(60) for t in threading.enumerate() if t.name.startswith('load-')]"
    )
    loaded = imported_after(code)
    assert "jsonschema" in loaded and "no_such_package_skillgrad_test" not in loaded


def test_a_structured_call_loads_its_validator_while_the_reply_is_awaited() -> None:
    # The fake model answers only once jsonschema is in sys.modules: it must be loading already.
    code = (
        "import sys, time\nfrom skillgrad.backends.structured import complete_structured\n"
        "from skillgrad.values import Message, Usage\n"
        "seen = []\n"
        "def call(messages):\n"
        "    deadline = time.monotonic() + 30\n"
        "    while 'jsonschema.validators' not in sys.modules and time.monotonic() < deadline:\n"
        "        time.sleep(0.01)\n"
        "    seen.append('jsonschema.validators' in sys.modules)\n"
        "    return '{\"a\": 1}', Usage()\n"
        "schema = {'type': 'object', 'required': ['a']}\n"
        "reply = complete_structured(\n"
        "    call, [Message('user', 'x')], schema, backend='b', stage='s', retries=0\n"
        ")\n"
        "assert reply.data == {'a': 1}\n"
        "assert seen == [True], 'jsonschema was not loading during the call'"
    )
    assert "jsonschema" in imported_after(code)


def test_rich_loads_only_for_a_terminal() -> None:
    code = (
        "import io, pathlib, tempfile\nimport skillgrad.cli, skillgrad.session.commands\n"
        "from skillgrad.observe.progress import make_observers\n"
        "make_observers(pathlib.Path(tempfile.mkdtemp()), io.StringIO())"
    )
    assert "rich" not in imported_after(code)
    terminal = code.replace("io.StringIO())", "io.StringIO(), force_tty=True)[0].live.stop()")
    assert "rich" in imported_after(terminal)


def test_a_missing_dependency_names_the_extra_that_installs_it(tmp_path: Path) -> None:
    """Issue 41, item 5: the openai extra's httpx2 missing (a block in the import system, as an
    uninstalled package behaves): `skillgrad backends` and a run name the extra and its pip line,
    the missing package only after them; the run is one line and exit code 2; the estimate,
    which needs no SDK, still prices the backend's default model."""
    (tmp_path / "sitecustomize.py").write_text(
        "import sys\nsys.modules['httpx2'] = None  # `import httpx2` raises ImportError(name='httpx2')\n",
        encoding="utf-8",
    )
    env = {"PYTHONPATH": f"{tmp_path}:{Path(__file__).resolve().parents[1]}", "PATH": "/usr/bin:/bin"}
    repo = Path(__file__).resolve().parents[1]

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "skillgrad.cli", *args],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )

    listing = cli("backends").stdout
    line = next(x for x in listing.splitlines() if x.startswith("openai_chat"))
    assert "not usable: it needs the openai extra: pip install 'skillgrad[openai]' (missing: httpx2)" in line
    quick = str(repo / "configs" / "quickstart.yaml")
    run = cli("train", "--config", quick, "--backend", "openai_chat", "--out", str(tmp_path / "run"))
    assert run.returncode == 2 and len(run.stderr.strip().splitlines()) == 1, run.stderr
    assert run.stderr.startswith(
        "skillgrad: error: backend 'openai_chat' (optimizer role) is not usable here: "
    )
    assert "it needs the openai extra: pip install 'skillgrad[openai]' (missing: httpx2)" in run.stderr
    estimate = cli("train", "--config", quick, "--backend", "openai_chat", "--estimate")
    assert estimate.returncode == 0, estimate.stderr
    assert "gpt-4o-mini $0.15 / $0.6" in estimate.stdout
