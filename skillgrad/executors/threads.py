"""The default executor: the agent runs in the driver's own threads (`train.concurrency` of them)."""

from __future__ import annotations

from types import TracebackType

from skillgrad.backends.interface import Agent


class ThreadExecutor:
    name = "threads"

    def agent(self, local: Agent) -> Agent:
        return local

    def close(self) -> None:
        return None

    def __enter__(self) -> ThreadExecutor:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
