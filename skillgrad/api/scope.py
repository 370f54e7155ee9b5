"""A call of the public API leaves the process as it found it.

What a run may change for the whole process while it works (a library it loads adds a logging
handler, Ray sets a signal handler and an environment variable, a user's benchmark changes the
folder) is put back when the call returns or raises: the logging handlers, levels and switches of
every logger, the handlers of every signal (from the main thread, the only one that can set them),
the environment and the current folder.

Calls may overlap (two trainings in two threads): the process is recorded when the first of them
starts and put back when the last of them ends, so one call never pulls the ground from under
another. That count is process-wide state by nature: `PROCESS` below is the one place it lives.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import FrameType
from typing import Any

SignalHandler = Callable[[int, FrameType | None], Any] | int | signal.Handlers | None


@dataclass
class _LoggerState:
    handlers: list[logging.Handler]
    level: int
    propagate: bool
    disabled: bool


@dataclass
class ProcessState:
    """What the API puts back: environment, folder, loggers, signal handlers."""

    environ: dict[str, str]
    cwd: str
    loggers: dict[str, _LoggerState]
    logging_disable: int
    signals: dict[signal.Signals, SignalHandler]

    @classmethod
    def capture(cls) -> ProcessState:
        on_main = threading.current_thread() is threading.main_thread()
        return cls(
            environ=dict(os.environ),
            cwd=os.getcwd(),
            loggers={name: _logger_state(logger) for name, logger in _loggers().items()},
            logging_disable=logging.root.manager.disable,
            signals={s: signal.getsignal(s) for s in signal.valid_signals()} if on_main else {},
        )

    def restore(self) -> None:
        _restore_environ(self.environ)
        if os.getcwd() != self.cwd:
            with contextlib.suppress(OSError):  # the folder itself was removed: stay where we are
                os.chdir(self.cwd)
        self._restore_logging()
        if threading.current_thread() is threading.main_thread():
            for sig, handler in self.signals.items():
                if handler is not None and signal.getsignal(sig) != handler:
                    with contextlib.suppress(OSError, ValueError, TypeError):
                        signal.signal(sig, handler)

    def _restore_logging(self) -> None:
        logging.disable(self.logging_disable)
        for name, logger in _loggers().items():
            kept = self.loggers.get(name)
            if kept is None:  # a logger made during the call: without the handlers it was given
                logger.handlers[:] = []
                continue
            logger.handlers[:] = kept.handlers
            logger.setLevel(kept.level)
            logger.propagate, logger.disabled = kept.propagate, kept.disabled


def _loggers() -> dict[str, logging.Logger]:
    found = {
        name: logger
        for name, logger in list(logging.root.manager.loggerDict.items())
        if isinstance(logger, logging.Logger)
    }
    return {"": logging.root, **found}


def _logger_state(logger: logging.Logger) -> _LoggerState:
    return _LoggerState(list(logger.handlers), logger.level, logger.propagate, logger.disabled)


def _restore_environ(saved: dict[str, str]) -> None:
    for name in [n for n in os.environ if n not in saved]:
        del os.environ[name]
    for name, value in saved.items():
        if os.environ.get(name) != value:
            os.environ[name] = value


class ProcessGuard:
    """Counts the API calls in progress; the first records the process, the last puts it back."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls = 0
        self._saved: ProcessState | None = None

    @contextlib.contextmanager
    def call(self) -> Iterator[None]:
        with self._lock:
            if self._calls == 0:
                self._saved = ProcessState.capture()
            self._calls += 1
        try:
            yield
        finally:
            with self._lock:
                self._calls -= 1
                if self._calls == 0 and self._saved is not None:
                    saved, self._saved = self._saved, None
                    saved.restore()


PROCESS = ProcessGuard()  # the one process-wide record (see the module docstring)
