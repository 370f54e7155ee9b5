"""The rollout stages as the trainer (and `skillgrad eval`) run them, and the two role objects
they are given. A stage persists what it produces through RunDir, reports progress through
Events and pays through Accounting; several may run side by side (overlap) and with reflection
(`loop.reflect_stage`), sharing `slots`."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from skillgrad.backends.interface import Agent, ChatModel, ResamplingAgent
from skillgrad.benchmarks.contract import AgenticBenchmark, Benchmark, JudgedBenchmark
from skillgrad.cache.keys import resamples
from skillgrad.config import Config
from skillgrad.errors import FatalBackendError, TrainingFailed
from skillgrad.loop.accounting import Accounting, MeteredChatModel
from skillgrad.loop.event_bus import Events, StageProgress
from skillgrad.loop.rollout import mean_score, run_rollouts
from skillgrad.run_folder import TRACE_FILE, RunDir
from skillgrad.traces.steps import TraceCaps
from skillgrad.values import Rollout, Task

__all__ = ["Roles", "RolloutRunner", "TrainingFailed", "resampled"]


@dataclass
class Roles:
    optimizer: ChatModel | None
    agent: Agent
    target_is_harness: bool  # an agent harness (not a chat model): traces are written per rollout
    trace_name: str | None = None  # the harness's name in the analyst's trace heading
    trace_file: str = TRACE_FILE  # each rollout's rendered trace steps
    judge: ChatModel | None = None  # scores a JudgedBenchmark's rollouts
    samplers: list[ChatModel] = field(default_factory=list)  # the optimizer for extra proposals
    # the target with the skill unnamed among other skills (optimizer.target: description | both)
    trigger_agent: Agent | None = None
    # "python:<name>" when the target is an Agent object the caller handed in (loop/custom_strategies.py):
    # it stands for the target backend wherever the run names one; None: the configured backend
    agent_label: str | None = None

    def target_resamples(self, cfg: Config) -> bool:
        """Whether asking the target again can answer differently (`cache.keys.resamples`); an
        Agent object is taken to sample: nothing says it does not."""
        return self.agent_label is not None or resamples(cfg)

    def target_backend(self, cfg: Config) -> str | None:
        return self.agent_label or cfg.model.target_backend


def resampled(agent: Agent, repeat: int, epoch: int = 1) -> Agent:
    """The agent for the repeat-th run of a task (in train epoch `epoch`): a distinct call, also
    for the call cache (repeat 0 of epoch 1 is the plain call, so one repeat keys as before)."""
    if not isinstance(agent, ResamplingAgent) or (not repeat and epoch <= 1):
        return agent
    salt = (
        agent.salt + (f"\x00repeat={repeat}" if repeat else "") + (f"\x00epoch={epoch}" if epoch > 1 else "")
    )
    return agent.with_salt(salt)


class RolloutRunner:
    """Runs tasks with a skill for every stage that needs the target (baseline, train rollouts,
    validation, test, and `skillgrad eval`): each rollout persisted, paid for and reported."""

    def __init__(
        self,
        cfg: Config,
        benchmark: Benchmark,
        roles: Roles,
        run: RunDir,
        events: Events,
        accounting: Accounting,
    ) -> None:
        self.cfg = cfg
        self.benchmark = benchmark
        self.roles = roles
        self.run = run
        self.events = events
        self.accounting = accounting
        self.resamples = roles.target_resamples(cfg)
        self.caps = TraceCaps(cfg.trace.tool_result_chars, cfg.trace.step_chars, cfg.trace.total_chars)
        self.needs_workspace = roles.target_is_harness or isinstance(benchmark, AgenticBenchmark)
        if isinstance(benchmark, JudgedBenchmark):
            if roles.judge is None:
                raise TrainingFailed(
                    f"benchmark '{benchmark.name}' is scored by a judge, but no judge role was built"
                )
            benchmark.use_judge(MeteredChatModel(roles.judge, accounting, "optimizer", "judge"))
        self.slots = threading.Semaphore(cfg.train.concurrency)  # calls in flight, all stages together
        self.refused: list[FatalBackendError] = []  # a refused key or quota: no stage starts a call
        self.epoch: int | None = None  # the epoch in progress, for progress events
        self._lock = threading.Lock()
        self.scorer_errors: list[str] = []  # the scorer_error of each rollout of this session that has one

    def scorer_note(self) -> str | None:
        """The one line that says the scorer failed tasks (it raised, or broke the Score
        contract), or None when it never did."""
        with self._lock:
            errors = list(self.scorer_errors)
        if not errors:
            return None
        return (
            f"the scorer failed {len(errors)} task run(s) (first: {errors[0]}); each counts as failed, "
            "never as a pass: fix the scorer (score.json `scorer_error` says why per task)"
        )

    def rollouts(
        self,
        tasks: list[Task],
        skill: str,
        prefix: Path | Callable[[int], Path],
        stage: str,
        step: int,
        repeats: list[int] | None = None,
        fresh: bool = False,
        epoch: int = 1,
        label: str | None = None,
    ) -> list[Rollout]:
        """Run `tasks` with `skill`; the i-th writes under `prefix` (or `prefix(i)`) and is the
        `repeats[i]`-th run of its task. `fresh` clears a folder a discarded run wrote first.
        `epoch`: the train epoch of these rollouts; from the second on, a target that samples
        (`Roles.target_resamples`) is asked afresh, so a later epoch is new evidence, not a replay.

        A task whose agent failed (crash, timeout, outage: `is_error`) runs again, as the same call
        (a failure is never cached), up to `train.rollout_retries` more times, after the others:
        an outage has time to pass. Each attempt is reserved and paid like any call; only the last
        is written and reported. Still failed, it is returned as it is (validation counts it as
        missing, loop/decision/racing.py). `label` names this run of the stage in its events (a test
        pass's skill version, the incumbent's validation)."""
        epoch = epoch if self.resamples else 1
        folder_of = prefix if callable(prefix) else (lambda _index, p=prefix: p)
        if fresh and not callable(prefix):
            self.run.clear(prefix)
        progress = StageProgress(self.events, stage, step, self.epoch, len(tasks), label)
        for folder in dict.fromkeys(folder_of(i) for i in range(len(tasks))):
            self.run.write_task_index(folder, [t for i, t in enumerate(tasks) if folder_of(i) == folder])
        batch = _Batch(tasks, skill, folder_of, stage, repeats or [0] * len(tasks), epoch, progress)
        retries = self.cfg.train.rollout_retries
        results = self._attempt(batch, list(range(len(tasks))), last=retries == 0)
        for retry in range(1, retries + 1):
            failed = [i for i, r in enumerate(results) if r.result.is_error]
            if not failed:
                break
            first = (results[failed[0]].result.error or "unknown error")[:200]
            self.events.emit(
                "message",
                text=f"step {step}: {stage}: {len(failed)} task(s) whose agent failed run again "
                f"(retry {retry} of {retries}; first error: {first})",
            )
            for index, rollout in zip(failed, self._attempt(batch, failed, retry == retries), strict=True):
                results[index] = rollout
        scored = [r for r in results if not r.result.is_error]  # a failed run is no zero
        progress.end(mean_score(scored) if scored else None, len(results), len(results) - len(scored))
        return results

    def _attempt(self, batch: _Batch, indices: list[int], last: bool) -> list[Rollout]:
        """One attempt at the tasks of `batch` numbered `indices`; `last`: no retry follows."""

        def on_done(j: int, rollout: Rollout) -> None:
            index = indices[j]
            if rollout.result.is_error and not last:
                return  # paid for (run_rollouts records it); it runs again, and that run is kept
            if rollout.score.scorer_error is not None:
                with self._lock:
                    self.scorer_errors.append(rollout.score.scorer_error)
            self.run.write_rollout(
                batch.folder_of(index),
                rollout,
                harness=self.roles.target_is_harness,
                caps=self.caps,
                trace_file=self.roles.trace_file,
            )
            batch.progress.task_done(rollout.task.id, rollout.score.value)

        return run_rollouts(
            lambda j: resampled(self.roles.agent, batch.repeats[indices[j]], batch.epoch),
            self.benchmark,
            [batch.tasks[i] for i in indices],
            batch.skill,
            workspace_for=lambda j, task: self.run.fresh_workspace(
                batch.folder_of(indices[j]), task, create=self.needs_workspace
            ),
            on_done=on_done,
            reserve=lambda: self.accounting.reserved("target", batch.stage),
            concurrency=self.cfg.train.concurrency,
            slots=self.slots,
            refused=self.refused,
        )


@dataclass
class _Batch:
    """The tasks of one `RolloutRunner.rollouts` call, across its attempts."""

    tasks: list[Task]
    skill: str
    folder_of: Callable[[int], Path]
    stage: str
    repeats: list[int]  # which run of its task each is (0: the plain call)
    epoch: int  # the train epoch whose salt the calls carry (1: the plain call)
    progress: StageProgress  # its events: a task finished for good (written) is reported once
