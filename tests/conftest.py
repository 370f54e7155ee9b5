"""A last-resort watchdog under pytest-timeout.

pytest-timeout's methods need Python to run: `signal` needs the main thread back in the
interpreter, `thread` needs the GIL. A native call that blocks while holding the GIL defeats both.
`faulthandler.dump_traceback_later(exit=True)` runs on a C thread that needs neither: if a test
outlives its pytest-timeout by a minute, every thread's stack is written to stderr and the process
exits, so the suite can end but never hang.
"""

from __future__ import annotations

import faulthandler
import sys
from collections.abc import Iterator

import pytest

WATCHDOG_MARGIN_S = 60.0


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
