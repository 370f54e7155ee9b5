"""What travels to a worker and back: pure data, no secrets, no driver paths.

A `RolloutJob` carries the task, the skill and the workspace as the driver prepared it (its files);
the worker rebuilds the agent from a secret-free copy of the config (`worker_config`), runs it in
a private temporary workspace and returns a `JobOutcome`: the result and the files the agent left
(or the message of a `FatalBackendError`, which the driver raises again: a refused key stops the
run on a cluster as it does on threads).
API keys reach workers only as environment variables of the Ray runtime environment
(`secret_env`), which the backends already read; they are never part of a job, so never in Ray's
object store or its task logs.
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from skillgrad.backend_specs import spec_for
from skillgrad.backends.common import key_source
from skillgrad.backends.interface import Agent
from skillgrad.backends.registry import Backends
from skillgrad.config import Config
from skillgrad.errors import FatalBackendError
from skillgrad.snapshot import restore_tree, safe_relative_path, snapshot_tree
from skillgrad.values import AgentResult, Task

MAX_WORKSPACE_BYTES = 64 * 1024 * 1024  # a workspace larger than this is not shipped


@dataclass(frozen=True)
class RolloutJob:
    task: Task
    skill: str
    files: dict[str, str] | None  # the prepared workspace ({path: base64}); None: no workspace


@dataclass(frozen=True)
class JobOutcome:
    result: AgentResult  # `workspace` is None: the worker's folder means nothing to the driver
    files: dict[str, str] | None  # the workspace after the run; None when none was shipped
    # the agent raised FatalBackendError (a refused key, no credit): its message, which the
    # driver raises again, so the run stops as it would on threads
    fatal: str | None = None


def worker_config(cfg: Config) -> Config:
    """The config a worker builds its agent from: paths absolute, every API key removed."""
    portable = cfg.portable()
    for key in ("api_key", "optimizer_api_key", "target_api_key"):
        setattr(portable.model, key, None)
    return portable


def secret_env(cfg: Config, environ: Mapping[str, str]) -> dict[str, str]:
    """The target backend's credential as its environment variable, for the workers' runtime env."""
    name = spec_for(cfg.model.backend_for("target")).key_env
    if not name:
        return {}
    value = cfg.model.api_key_for("target") or environ.get(name)
    return {name: value} if value else {}


def job_for(task: Task, skill: str, workspace: Path) -> RolloutJob | str:
    """The job for one task, or why it cannot be shipped."""
    if not workspace.is_dir():
        return RolloutJob(task, skill, None)
    files = snapshot_tree(workspace, MAX_WORKSPACE_BYTES)
    if files is None:
        return f"the prepared workspace is over {MAX_WORKSPACE_BYTES} bytes, too large to ship to a worker"
    return RolloutJob(task, skill, files)


def run_job(agent: Agent, job: RolloutJob) -> JobOutcome:
    """Run one job in a private temporary workspace. Never raises for the task's failure."""

    def failed(error: str) -> JobOutcome:
        return JobOutcome(AgentResult(answer="", is_error=True, error=error), None)

    with tempfile.TemporaryDirectory(prefix="skillgrad-rollout-") as tmp:
        workspace = Path(tmp) / "workspace"
        workspace.mkdir()
        if job.files is not None:
            if not all(safe_relative_path(rel) for rel in job.files):
                return failed("the job's workspace has a path outside it")
            restore_tree(workspace, job.files)
        try:
            result = agent.run(job.task, job.skill, workspace)
        except FatalBackendError as exc:  # not this task's failure: no call can succeed (errors.py)
            return JobOutcome(AgentResult(answer="", is_error=True, error=str(exc)), None, fatal=str(exc))
        except Exception as exc:  # the Agent contract says never raise; a buggy one must not kill us
            return failed(f"{type(exc).__name__}: {exc}")
        files = snapshot_tree(workspace, MAX_WORKSPACE_BYTES) if job.files is not None else None
    if job.files is not None and files is None:
        return failed(f"the workspace grew over {MAX_WORKSPACE_BYTES} bytes; it cannot come back")
    return JobOutcome(dataclasses.replace(result, workspace=None), files)


class RolloutWorker:
    """One worker process (a Ray actor): builds the target agent once, then runs jobs, several at
    a time as the driver's threads would."""

    def __init__(self, cfg: Config) -> None:
        self.agent: Agent = Backends(cfg).agent()

    def run(self, job: RolloutJob) -> JobOutcome:
        return run_job(self.agent, job)


def fatal_in_driver(message: str, cfg: Config) -> FatalBackendError:
    """A worker's FatalBackendError for the driver to raise. The worker read the key from the
    variable `secret_env` set; when the driver took it from the config, the line names that key."""
    name = spec_for(cfg.model.backend_for("target")).key_env
    source = key_source(cfg, "target", name) if name else name
    return FatalBackendError(message.replace(f"fix {name} ", f"fix {source} ") if name else message)


def restore_outcome(outcome: JobOutcome, workspace: Path, cfg: Config) -> AgentResult:
    """The driver's side: the agent's files back into the run folder's workspace, and the result;
    FatalBackendError again when the worker's agent raised it."""
    if outcome.fatal is not None:
        raise fatal_in_driver(outcome.fatal, cfg)
    result = outcome.result
    if outcome.files is not None:
        if not all(safe_relative_path(rel) for rel in outcome.files):
            return AgentResult(
                answer="", is_error=True, error="the worker returned a path outside the workspace"
            )
        restore_tree(workspace, outcome.files)
        return dataclasses.replace(result, workspace=workspace)
    return result
