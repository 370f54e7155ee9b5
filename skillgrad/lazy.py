"""Modules imported on first use, so a command that never touches a vendor SDK never pays for it.

`lazy_import("openai")` checks now that the package is installed (ImportError at once, as a plain
import would, so availability checks still see a missing SDK) and imports it on the first
attribute access. The import itself goes through `importlib.import_module`, whose module locks
make a first use from several threads at once safe. `load_meanwhile` starts that import on a
thread of its own, for a module first needed after a wait (a model's reply): the import then runs
while the process waits instead of after it.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import sys
import threading
from types import ModuleType
from typing import Any


class _Deferred(ModuleType):
    def __getattr__(self, attr: str) -> Any:
        return getattr(importlib.import_module(self.__name__), attr)


def lazy_import(name: str) -> ModuleType:
    if importlib.util.find_spec(name) is None:
        raise ImportError(f"No module named {name!r}", name=name)
    return _Deferred(name)


def load_meanwhile(name: str) -> None:
    """Import `name` in the background now (nothing when it is loaded already). A first use that
    comes before the import ends waits for it on the module's lock; an ImportError is left for
    that first use to raise."""
    if name in sys.modules:
        return
    threading.Thread(target=_import_quietly, args=(name,), name=f"load-{name}").start()


def _import_quietly(name: str) -> None:
    with contextlib.suppress(ImportError):  # the first real use raises it, where it is reported
        importlib.import_module(name)
