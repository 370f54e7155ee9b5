"""The executor protocol and the one place where `train.executor` names map to executors.

An executor decides where the target's agent runs; everything else of a rollout stays in the
driver: budget reservations (made before a task is sent), the call cache, scoring, and every write
to the run folder. So concurrency limits, retries, budgets and the order of results are the same
whatever the executor.
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import Protocol

from skillgrad.backends.interface import Agent
from skillgrad.config import Config


class Executor(Protocol):
    """Runs a run's target agent somewhere. Used as a context manager around the whole run.

    Error contract:
    - opening (the factory) raises `UserError` for anything the user can fix (Ray not installed,
      cluster unreachable, bad address), before any run folder exists;
    - the agent from `agent()` keeps the Agent contract: it never raises for one task's failure
      (a worker lost more often than the retry limit allows, or one that hangs past every
      timeout, is an `AgentResult(is_error=True)`, which the call cache never stores, so the task
      is redone on `--resume`); and it raises `FatalBackendError` wherever the agent raised it
      (a worker too), so a refused key stops the run in one line on every executor;
    - `close()` never raises.
    """

    name: str

    def agent(self, local: Agent) -> Agent:
        """The agent the driver calls: `local` itself, or a proxy that runs it elsewhere."""
        ...

    def close(self) -> None: ...

    def __enter__(self) -> Executor: ...

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...


def _threads(cfg: Config) -> Executor:
    from skillgrad.executors.threads import ThreadExecutor

    return ThreadExecutor()


def _ray(cfg: Config) -> Executor:
    from skillgrad.executors.ray_cluster import RayExecutor

    return RayExecutor.open(cfg)


EXECUTORS: dict[str, Callable[[Config], Executor]] = {"threads": _threads, "ray": _ray}


def open_executor(cfg: Config) -> Executor:
    """The executor named by `train.executor` (the config has validated the name)."""
    return EXECUTORS[cfg.train.executor](cfg)
