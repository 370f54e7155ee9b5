"""Issue 32, defect 8: under CI=true a test that skips for want of something CI installs fails
(tests/conftest.py), whether it skips in its body, by a marker, or as a whole module; a skip for
want of the project machines' ../shared folder stays a skip."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

SKIPPING = "import pytest\ndef test_it():\n    pytest.skip({reason!r})\n"
TESTS = {
    "test_body": SKIPPING.format(reason="chromium not installed"),
    "test_marker": "import pytest\n@pytest.mark.skipif(True, reason='no namespaces')\ndef test_it(): pass\n",
    "test_shared": SKIPPING.format(reason="real session files not present (../shared)"),
    "test_passes": "def test_it():\n    assert True\n",
}
MODULE = "import pytest\npytest.importorskip('a_module_nobody_installed')\ndef test_it():\n    pass\n"


def _run(pytester: pytest.Pytester, files: dict[str, str]) -> pytest.RunResult:
    pytester.makeconftest((Path(__file__).parent / "conftest.py").read_text(encoding="utf-8"))
    pytester.makepyfile(**files)
    return pytester.runpytest("-p", "no:cacheprovider")


def test_a_skip_fails_under_ci_unless_it_is_for_shared(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "true")
    result = _run(pytester, TESTS)
    result.assert_outcomes(failed=1, errors=1, skipped=1, passed=1)  # a marker skips in setup: an error
    assert (
        "skipped under CI, which installs what this needs: Skipped: chromium not installed"
        in result.stdout.str()
    )


def test_a_module_that_skips_is_an_error_under_ci(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "true")
    result = _run(pytester, {"test_module": MODULE})
    result.assert_outcomes(errors=1)
    assert "a_module_nobody_installed" in result.stdout.str()


def test_outside_ci_they_all_skip(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    _run(pytester, {**TESTS, "test_module": MODULE}).assert_outcomes(skipped=4, passed=1)
