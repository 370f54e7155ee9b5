"""Modules imported on first use, so a command that never touches a vendor SDK never pays for it.

`lazy_import("openai")` checks now that the package is installed (ImportError at once, as a plain
import would, so availability checks still see a missing SDK) and imports it on the first
attribute access. The import itself goes through `importlib.import_module`, whose module locks
make a first use from several threads at once safe.
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType
from typing import Any


class _Deferred(ModuleType):
    def __getattr__(self, attr: str) -> Any:
        return getattr(importlib.import_module(self.__name__), attr)


def lazy_import(name: str) -> ModuleType:
    if importlib.util.find_spec(name) is None:
        raise ImportError(f"No module named {name!r}", name=name)
    return _Deferred(name)
