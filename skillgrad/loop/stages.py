"""The stages that call models, as the trainer runs them: rollouts (target) and reflection
(optimizer). Each persists what it produces through RunDir, reports progress through Events and
pays through Accounting; several may run side by side (overlap), sharing `slots`."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from skillgrad.backends.base import Agent, ChatModel, ResamplingAgent
from skillgrad.benchmarks.base import AgenticBenchmark, Benchmark, JudgedBenchmark
from skillgrad.config import Config
from skillgrad.errors import BackendError, FatalBackendError, StructuredOutputError
from skillgrad.loop.accounting import Accounting, MeteredChatModel
from skillgrad.loop.events import Events
from skillgrad.loop.merge import Patch
from skillgrad.loop.reflect import TRACE_HEADING, AnalystInputs, reflection_record, trace_heading
from skillgrad.loop.rewrite import ANALYSTS
from skillgrad.loop.rollout import mean_score, run_rollouts
from skillgrad.loop.state import TrainState
from skillgrad.runs import TRACE_FILE, RunDir
from skillgrad.traces.steps import TraceCaps
from skillgrad.values import Rollout, Task


class TrainingFailed(RuntimeError):
    """The run cannot go on (e.g. the optimizer never returns usable JSON); finished work is kept."""


@dataclass
class Roles:
    optimizer: ChatModel | None
    agent: Agent
    harness: bool  # the target is an agent harness: traces are written per rollout
    trace_name: str | None = None  # the harness's name in the analyst's trace heading
    trace_file: str = TRACE_FILE  # each rollout's rendered trace steps
    judge: ChatModel | None = None  # scores a JudgedBenchmark's rollouts
    samplers: list[ChatModel] = field(default_factory=list)  # the optimizer for extra proposals


def resampled(agent: Agent, repeat: int) -> Agent:
    """The agent for the repeat-th run of a task: a distinct call, also for the call cache
    (repeat 0 is the plain call, so one repeat keys exactly as before)."""
    if repeat and isinstance(agent, ResamplingAgent):
        return agent.with_salt(f"{agent.salt}\x00repeat={repeat}")
    return agent


class Stages:
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
        self.caps = TraceCaps(cfg.trace.tool_result_chars, cfg.trace.step_chars, cfg.trace.total_chars)
        # Passed explicitly from the config: the analyst sees a harness's trace steps unless told not to.
        self.include_traces = cfg.model.analyst_sees_traces()
        self.trace_heading = trace_heading(roles.trace_name) if roles.trace_name else TRACE_HEADING
        self.analyst = ANALYSTS[cfg.optimizer.edit_mode]
        self.needs_workspace = roles.harness or isinstance(benchmark, AgenticBenchmark)
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

    def rollouts(
        self,
        tasks: list[Task],
        skill: str,
        prefix: Path | Callable[[int], Path],
        stage: str,
        step: int,
        repeats: list[int] | None = None,
        fresh: bool = False,
    ) -> list[Rollout]:
        """Run `tasks` with `skill`; the i-th writes under `prefix` (or `prefix(i)`) and is the
        `repeats[i]`-th run of its task. `fresh` clears a folder a discarded run wrote first."""
        folder_of = prefix if callable(prefix) else (lambda _index, p=prefix: p)
        if fresh and not callable(prefix):
            shutil.rmtree(self.run.path(str(prefix)), ignore_errors=True)
        self.events.emit("stage_start", stage=stage, step=step, epoch=self.epoch, total=len(tasks))
        for folder in dict.fromkeys(folder_of(i) for i in range(len(tasks))):
            self.run.write_task_index(folder, [t for i, t in enumerate(tasks) if folder_of(i) == folder])
        done = [0]

        def on_done(index: int, rollout: Rollout) -> None:
            self.accounting.record("target", stage, rollout.result.usage, rollout.result.saved)
            self.run.write_rollout(
                folder_of(index),
                rollout,
                harness=self.roles.harness,
                caps=self.caps,
                trace_file=self.roles.trace_file,
            )
            with self._lock:
                done[0] += 1
                count = done[0]
            self.events.emit(
                "task_done",
                stage=stage,
                step=step,
                done=count,
                total=len(tasks),
                task_id=rollout.task.id,
                score=rollout.score.value,
            )

        results = run_rollouts(
            lambda index: resampled(self.roles.agent, repeats[index] if repeats else 0),
            self.benchmark,
            tasks,
            skill,
            workspace_for=lambda index, task: self.run.fresh_workspace(
                folder_of(index), task, create=self.needs_workspace
            ),
            on_done=on_done,
            before_call=self.accounting.reserve,
            concurrency=self.cfg.train.concurrency,
            slots=self.slots,
            refused=self.refused,
        )
        self.events.emit("stage_end", stage=stage, step=step, mean_score=mean_score(results))
        return results

    def reflect(self, step: int, state: TrainState, rollouts: list[Rollout], lr: int) -> list[Patch]:
        optimizer = self.roles.optimizer
        assert optimizer is not None, "training needs an optimizer role"
        size = self.cfg.train.minibatch_size
        minibatches = [rollouts[i : i + size] for i in range(0, len(rollouts), size)]
        # Minibatches where every task passed carry no signal for a fix: skip their cost.
        failing = [(i, mb) for i, mb in enumerate(minibatches) if any(not r.score.passed for r in mb)]
        chats = [optimizer, *self.roles.samplers][: self.cfg.optimizer.proposals_per_minibatch]
        work = [(i, mb, k) for i, mb in failing for k in range(len(chats))]
        self.events.emit("stage_start", stage="reflect", step=step, epoch=self.epoch, total=len(work))
        rejected = state.rejected_edits if self.cfg.optimizer.show_rejected else []

        def one(index: int, minibatch: list[Rollout], proposal: int) -> Patch | Exception:
            with self.slots:
                self.accounting.reserve()
                inputs = AnalystInputs(
                    state.current_text,
                    minibatch,
                    rejected,
                    max(lr, self.cfg.optimizer.max_proposed_edits),
                    self.include_traces,
                    self.caps,
                    self.cfg.trace.prompt_chars,
                    self.trace_heading,
                    package_chars=self.cfg.skill.prompt_chars,
                    budget=self.cfg.skill.max_chars,
                )
                name = f"mb_{index:02d}" + (f"_p{proposal}" if proposal else "")
                record_path = self.run.step_dir(step) / "reflections" / f"{name}.json"
                try:
                    patch, reply, messages = self.analyst(
                        chats[proposal], inputs, index, self.cfg.model.effort_for("optimizer"), proposal
                    )
                except FatalBackendError:
                    self.accounting.release()
                    raise
                except (StructuredOutputError, BackendError) as exc:
                    self.accounting.release()
                    self.run.write_json(record_path, {"minibatch": index, "error": str(exc)})
                    return exc
                self.accounting.record("optimizer", "reflect", reply.usage, reply.saved)
            self.run.write_json(record_path, reflection_record(index, minibatch, messages, reply, patch))
            return patch

        with ThreadPoolExecutor(max_workers=self.cfg.train.concurrency) as pool:
            outcomes = list(pool.map(lambda item: one(*item), work))
        errors = [o for o in outcomes if isinstance(o, Exception)]
        if work and len(errors) == len(work):
            raise TrainingFailed(f"every reflection of step {step} failed; last error: {errors[-1]}")
        self.events.emit("stage_end", stage="reflect", step=step, mean_score=None)
        return [o for o in outcomes if isinstance(o, Patch)]
