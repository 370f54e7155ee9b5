"""The Ray executor: the target agent runs in Ray worker processes (actors) of a cluster.

- `ray.address`: "" starts a local cluster for the run (`ray.local_cpus` CPUs); `auto` joins the
  cluster of this machine (`ray start --head`); `ray://host:port` goes through Ray Client.
- Each worker process (`ray.workers` of them; 0 = as many as the cluster's CPUs allow at
  `ray.cpus_per_worker` each) builds the agent once and runs up to its share of the driver's
  `train.concurrency` rollouts at a time. The driver's threads still bound what is in flight.
- A worker (or its node) lost mid-task is restarted and the task retried, at most `ray.max_retries`
  times; only the attempt that finished returns, so nothing is counted twice. Past the limit the
  task is a failed rollout (never cached, redone on `--resume`).
- Runtime environment: the backend's API key as an environment variable; when joining a cluster,
  this very `skillgrad` package (`py_modules`) and `ray.pip` (default: the target backend's
  extra), so workers run the driver's code with the target's SDK/CLI installed.
"""

from __future__ import annotations

import logging
import math
import os
import queue
import socket
from collections.abc import Mapping
from importlib import import_module, metadata
from pathlib import Path
from types import ModuleType, TracebackType
from typing import Any

import skillgrad
from skillgrad.backend_specs import spec_for
from skillgrad.backends.interface import Agent
from skillgrad.config import Config
from skillgrad.errors import UserError
from skillgrad.executors.job import RolloutWorker, job_for, restore_outcome, secret_env, worker_config
from skillgrad.values import AgentResult, Task


def import_ray() -> ModuleType:
    # by name, not `import ray`: callers see a ModuleType either way, and a type check of the
    # package (or of a script using its API) need not analyse Ray's thousands of modules
    try:
        return import_module("ray")
    except ImportError:
        raise UserError("train.executor 'ray' needs Ray: pip install 'skillgrad[ray]'") from None


def backend_requirements(cfg: Config) -> list[str]:
    """The pip requirements of the target backend's extra, as this package declares them."""
    extra = spec_for(cfg.model.backend_for("target")).extra
    found = []
    for requirement in metadata.requires("skillgrad") or []:
        spec, _, marker = requirement.partition(";")
        if extra and marker.replace(" ", "") in (f'extra=="{extra}"', f"extra=='{extra}'"):
            found.append(spec.strip())
    return found


def runtime_env(cfg: Config, environ: Mapping[str, str]) -> dict[str, Any]:
    env: dict[str, Any] = {"env_vars": secret_env(cfg, environ)}
    if cfg.ray.address:  # a cluster of other machines: ship our code and the target's dependencies
        env["py_modules"] = [str(Path(skillgrad.__file__).parent)]
        pip = backend_requirements(cfg) if cfg.ray.pip is None else cfg.ray.pip
        if pip:
            env["pip"] = list(pip)
    return env


def probe(address: str, timeout_s: float = 5.0) -> None:
    """Fail fast on an address nothing listens at (Ray itself would retry for minutes)."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    try:
        socket.create_connection((host, int(port)), timeout=timeout_s).close()
    except OSError as exc:
        raise UserError(
            f"ray.address {address!r}: nothing answers there ({exc}); start the cluster "
            "(`ray start --head`) or fix the address"
        ) from None


def connect(ray: ModuleType, cfg: Config, *, runtime_env_for_run: bool = True) -> None:
    """Join (or start) the cluster named by `ray.address`; UserError if that cannot be done."""
    options: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.WARNING}
    if runtime_env_for_run:
        options["runtime_env"] = runtime_env(cfg, os.environ)
    if cfg.ray.address:
        if cfg.ray.address != "auto":
            probe(cfg.ray.address)
        options["address"] = cfg.ray.address
    else:
        options.update(num_cpus=cfg.ray.local_cpus, include_dashboard=False)
    try:
        ray.init(**options)
    except (ConnectionError, RuntimeError, ValueError, TimeoutError) as exc:
        where = cfg.ray.address or "a local cluster"
        raise UserError(
            f"ray.address {where!r}: cannot connect ({type(exc).__name__}: {str(exc).splitlines()[0]}); "
            "check the address and that the cluster is up (`skillgrad cluster`)"
        ) from None


WORKER_START_S = 120.0  # a (re)started worker builds its agent before it runs the task


def rollout_timeout_s(cfg: Config) -> float:
    """The longest a rollout may take on the cluster, all retries included (its attempts, the
    backend's retries of each call, a session's own timeout): past it the worker is taken to
    hang and the task fails, instead of the driver waiting for ever."""
    m = cfg.model
    attempt = (m.max_retries + 1) * max(m.timeout_s, m.claude_code_timeout_s, m.codex_timeout_s)
    return (cfg.ray.max_retries + 1) * (attempt + WORKER_START_S)


class RayExecutor:
    name = "ray"

    def __init__(self, ray: ModuleType, cfg: Config) -> None:
        self.ray = ray
        self.cfg = cfg
        cpus = float(ray.cluster_resources().get("CPU", 0))
        workers = cfg.ray.workers or max(1, int(cpus // cfg.ray.cpus_per_worker))
        workers = min(workers, cfg.train.concurrency)
        if workers * cfg.ray.cpus_per_worker > cpus:  # Ray would wait for them forever
            ray.shutdown()
            raise UserError(
                f"ray.workers: {workers} worker(s) x ray.cpus_per_worker {cfg.ray.cpus_per_worker:g} need "
                f"{workers * cfg.ray.cpus_per_worker:g} CPUs, the cluster has {cpus:g}; lower either"
            )
        per_worker = math.ceil(cfg.train.concurrency / workers)
        actor = ray.remote(RolloutWorker).options(
            num_cpus=cfg.ray.cpus_per_worker,
            max_concurrency=per_worker,
            max_restarts=-1,  # a lost worker comes back (elsewhere if its node is gone) ...
            max_task_retries=cfg.ray.max_retries,  # ... and each task is retried at most this often
        )
        # By value, not an object ref: a restarted worker must find its arguments again.
        config = worker_config(cfg)
        self.workers = [actor.remote(config) for _ in range(workers)]
        # One slot per rollout a worker may run at once: a driver thread takes one, runs, gives it back.
        self.slots: queue.Queue[Any] = queue.Queue()
        for _ in range(per_worker):
            for worker in self.workers:
                self.slots.put(worker)

    @classmethod
    def open(cls, cfg: Config) -> RayExecutor:
        ray = import_ray()
        connect(ray, cfg)
        return cls(ray, cfg)

    def agent(self, local: Agent) -> Agent:
        return RemoteAgent(local, self)

    def run(self, task: Task, skill: str, workspace: Path) -> AgentResult:
        job = job_for(task, skill, workspace)
        if isinstance(job, str):
            return AgentResult(answer="", is_error=True, error=job)
        worker = self.slots.get()
        try:
            outcome = self.ray.get(worker.run.remote(job), timeout=rollout_timeout_s(self.cfg))
        except self.ray.exceptions.RayError as exc:  # a lost worker past its retries, or a hang
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            return AgentResult(
                answer="",
                is_error=True,
                error=f"ray: the rollout failed on the cluster (a lost worker is retried "
                f"{self.cfg.ray.max_retries} times): {reason}",
            )
        finally:
            self.slots.put(worker)
        return restore_outcome(outcome, workspace, self.cfg)

    def close(self) -> None:
        try:
            for worker in self.workers:
                self.ray.kill(worker)
            self.ray.shutdown()
        except Exception:  # closing must never hide the run's own outcome
            pass

    def __enter__(self) -> RayExecutor:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class RemoteAgent:
    """The Agent the driver calls: each run goes to a Ray worker; the files come back."""

    def __init__(self, local: Agent, executor: RayExecutor) -> None:
        self.name = local.name
        self.model = local.model
        self.executor = executor

    def run(self, task: Task, skill: str, workspace: Path) -> AgentResult:
        return self.executor.run(task, skill, workspace)
