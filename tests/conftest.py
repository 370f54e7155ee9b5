"""A last-resort watchdog under pytest-timeout, and no skip under CI.

pytest-timeout's methods need Python to run: `signal` needs the main thread back in the
interpreter, `thread` needs the GIL. A native call that blocks while holding the GIL defeats both.
`faulthandler.dump_traceback_later(exit=True)` runs on a C thread that needs neither: if a test
outlives its pytest-timeout by a minute, every thread's stack is written to stderr and the process
exits, so the suite can end but never hang.

The suite runs on the two pytest-xdist workers of `-n 2 --dist loadgroup` (pyproject.toml), each
running its tests one at a time: `LONG_LANE`'s files, which keep one core busy for minutes (the
packaged model's real runs, a local Ray cluster), go to one worker as one group, in order; every
other test goes to whichever worker is free, so the worker that finishes the group takes its share
of the rest. Two fixed lanes (the group, and every other test on the other worker) left one lane
idle for minutes while the other ran: 903 s against 1092 s (docs/benchmarks.md, "The test suite").

Under `CI=true` a skipped test (or module) fails instead: `.ci/run` installs everything the suite
needs, so a skip there is a test that silently never ran. The one exception is what CI cannot
have, the files of the project machines' `../shared` folder (a skip reason naming `../shared`).
"""

from __future__ import annotations

import faulthandler
import os
import sys
from collections.abc import Generator, Iterator

import pytest

CI_MAY_LACK = "../shared"

WATCHDOG_MARGIN_S = 60.0

LONG_LANE = frozenset(
    {"test_quickstart.py", "test_api_example.py", "test_local_backend.py", "test_ray_e2e.py"}
)


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.name in LONG_LANE:
            item.add_marker(pytest.mark.xdist_group("long"))


def _timeout_of(item: pytest.Item) -> float:
    marker = item.get_closest_marker("timeout")
    if marker is not None and marker.args:
        return float(marker.args[0])
    value = item.config.getini("timeout")
    return float(value) if value else 300.0


@pytest.fixture(autouse=True)
def _native_hang_watchdog(request: pytest.FixtureRequest) -> Iterator[None]:
    faulthandler.dump_traceback_later(
        _timeout_of(request.node) + WATCHDOG_MARGIN_S, exit=True, file=sys.stderr
    )
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()


def _fail_a_skip_under_ci(report: pytest.TestReport | pytest.CollectReport) -> None:
    if not os.environ.get("CI") or not report.skipped:
        return
    reason = report.longrepr[-1] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    if CI_MAY_LACK not in str(reason):
        report.outcome = "failed"
        report.longrepr = f"skipped under CI, which installs what this needs: {reason}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, None, None]:
    outcome = yield
    _fail_a_skip_under_ci(outcome.get_result())  # type: ignore[attr-defined]


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Generator[None, None, None]:
    outcome = yield
    _fail_a_skip_under_ci(outcome.get_result())  # type: ignore[attr-defined]
