"""Epochs -> steps. Orchestration only: every stage is a function of its inputs; every side
effect goes through RunDir (disk), Events (progress) and the usage ledger (budget)."""

from __future__ import annotations

import math
import random
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skillgrad.backends.base import Agent, ChatModel
from skillgrad.benchmarks.base import AgenticBenchmark, Benchmark, JudgedBenchmark, Task
from skillgrad.budget import Ledger
from skillgrad.cache import saved_usage
from skillgrad.config import Config
from skillgrad.errors import BackendError, StructuredOutputError
from skillgrad.loop.accounting import Accounting, BudgetStop, MeteredChatModel
from skillgrad.loop.echo import PromptEcho
from skillgrad.loop.events import Events
from skillgrad.loop.gate import GATES
from skillgrad.loop.merge import MERGERS, Patch
from skillgrad.loop.reflect import TRACE_HEADING, AnalystInputs, reflection_record, trace_heading
from skillgrad.loop.rewrite import ANALYSTS
from skillgrad.loop.rollout import Rollout, mean_score, run_rollouts
from skillgrad.loop.select import RANKERS, SCHEDULES, select_valid
from skillgrad.loop.state import TrainState, version_name
from skillgrad.runs import TRACE_FILE, RunDir
from skillgrad.skill import EditOutcome, SkillDoc
from skillgrad.traces.steps import TraceCaps


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


class Trainer:
    def __init__(
        self,
        cfg: Config,
        benchmark: Benchmark,
        roles: Roles,
        run: RunDir,
        events: Events,
        ledger: Ledger,
        initial_skill: str,
    ) -> None:
        self.cfg = cfg
        self.benchmark = benchmark
        self.roles = roles
        self.run = run
        self.events = events
        self.ledger = ledger
        self.initial_skill = initial_skill
        self.caps = TraceCaps(cfg.trace.tool_result_chars, cfg.trace.step_chars, cfg.trace.total_chars)
        self.gate = GATES[cfg.optimizer.gate]()
        self.merger = MERGERS[cfg.optimizer.merge]()
        self.ranker = RANKERS[cfg.optimizer.rank]()
        self.schedule = SCHEDULES[cfg.optimizer.lr_schedule]
        self.analyst = ANALYSTS[cfg.optimizer.edit_mode]
        self.echo = PromptEcho.of_templates()
        # Passed explicitly from the config: the analyst sees a harness's trace steps unless told not to.
        self.include_traces = roles.harness and cfg.model.traces_to_optimizer(cfg.model.backend_for("target"))
        self.trace_heading = trace_heading(roles.trace_name) if roles.trace_name else TRACE_HEADING
        self.needs_workspace = roles.harness or isinstance(benchmark, AgenticBenchmark)
        self.accounting = Accounting(ledger)
        if isinstance(benchmark, JudgedBenchmark):
            if roles.judge is None:
                raise TrainingFailed(
                    f"benchmark '{benchmark.name}' is scored by a judge, but no judge role was built"
                )
            benchmark.use_judge(MeteredChatModel(roles.judge, self.accounting, "optimizer", "judge"))
        self._splits: dict[str, list[Task]] = {}
        self.epoch: int | None = None  # the epoch in progress, for progress events
        self._lock = threading.Lock()

    # -- stages ---------------------------------------------------------------------------------
    def rollouts(self, tasks: list[Task], skill: str, prefix: Path, stage: str, step: int) -> list[Rollout]:
        self.events.emit("stage_start", stage=stage, step=step, epoch=self.epoch, total=len(tasks))
        done = [0]

        def on_done(index: int, rollout: Rollout) -> None:
            self.accounting.record("target", stage, rollout.result.usage, saved_usage(rollout.result))
            self.run.write_rollout(
                prefix, rollout, harness=self.roles.harness, caps=self.caps, trace_file=self.roles.trace_file
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
            self.roles.agent,
            self.benchmark,
            tasks,
            skill,
            workspace_for=lambda task: self.run.fresh_workspace(prefix, task, create=self.needs_workspace),
            on_done=on_done,
            before_call=self.accounting.reserve,
            concurrency=self.cfg.train.concurrency,
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
            )
            name = f"mb_{index:02d}" + (f"_p{proposal}" if proposal else "")
            record_path = self.run.step_dir(step) / "reflections" / f"{name}.json"
            try:
                patch, reply, messages = self.analyst(
                    chats[proposal], inputs, index, self.cfg.model.effort_for("optimizer"), proposal
                )
            except (StructuredOutputError, BackendError) as exc:
                self.accounting.release()
                self.run.write_json(record_path, {"minibatch": index, "error": str(exc)})
                return exc
            self.accounting.record("optimizer", "reflect", reply.usage, saved_usage(reply))
            self.run.write_json(record_path, reflection_record(index, minibatch, messages, reply, patch))
            return patch

        with ThreadPoolExecutor(max_workers=self.cfg.train.concurrency) as pool:
            outcomes = list(pool.map(lambda item: one(*item), work))
        errors = [o for o in outcomes if isinstance(o, Exception)]
        if work and len(errors) == len(work):
            raise TrainingFailed(f"every reflection of step {step} failed; last error: {errors[-1]}")
        self.events.emit("stage_end", stage="reflect", step=step, mean_score=None)
        return [o for o in outcomes if isinstance(o, Patch)]

    # -- one step -------------------------------------------------------------------------------
    def step(self, state: TrainState, step: int, epoch: int, batch: list[Task], total_steps: int) -> None:
        self.accounting.start_step()
        before = state.current_score
        folder = self.run.step_dir(step)
        lr = self.schedule(
            step, total_steps, self.cfg.optimizer.learning_rate, self.cfg.optimizer.min_learning_rate
        )
        train = self.rollouts(batch, state.current_text, folder / "rollouts" / "train", "rollout", step)
        patches = self.reflect(step, state, train, lr)
        ranked = self.ranker.rank(self.merger.merge(patches))
        chosen = select_valid(
            ranked,
            state.current_text,
            lr,
            rejected=state.rejected_edits,
            copied=self.echo,
            max_chars=self.cfg.optimizer.max_skill_chars,
        )
        self.run.write_json(
            folder / "merged_patch.json",
            {
                "step": step,
                "learning_rate": lr,
                "proposed": sum(len(p.edits) for p in patches),
                "merged": len(ranked),
                "dropped_counts": chosen.counts(),
                "selected": [m.to_json() for m in chosen.selected],
                "dropped": [d.to_json() for d in chosen.dropped],
            },
        )
        current = SkillDoc(state.current_text)
        candidate, outcomes = current.apply(
            [m.edit for m in chosen.selected], self.cfg.optimizer.max_skill_chars
        )
        self.run.write_json(folder / "edit_report.json", [o.to_json() for o in outcomes])
        self.run.write_text(folder / "candidate_skill.md", candidate.text)
        record = self._validate_and_gate(state, step, candidate, outcomes)
        state.step = step
        self.run.append_history(
            {
                "step": step,
                "epoch": epoch,
                "learning_rate": lr,
                "train_score": mean_score(train),
                "dropped": chosen.counts(),
                **record,
                "usage": self.accounting.step_usage(),
            }
        )
        self.events.emit(
            "step_end",
            step=step,
            epoch=epoch,
            action=record["action"],
            val_score=record["val_score"],
            best_score=state.best_score,
            current_score=before,
            edits_applied=sum(1 for o in outcomes if o.status == "applied"),
            usage=self.accounting.usage_so_far(),
        )

    def _validate_and_gate(
        self,
        state: TrainState,
        step: int,
        candidate: SkillDoc,
        outcomes: list[EditOutcome],
    ) -> dict[str, Any]:
        folder = self.run.step_dir(step)
        applied = [o.edit for o in outcomes if o.status == "applied"]
        edits = [{**o.edit.to_json(), "status": o.status, "reason": o.reason} for o in outcomes]
        base = {"current_score": state.current_score, "edits": edits, "version": None, "cached": False}
        if not applied or candidate.text == state.current_text:
            gate = {
                "accepted": False,
                "reason": "no edit applied",
                "candidate_score": None,
                "current_score": state.current_score,
                "cached": False,
            }
            self.run.write_json(folder / "gate.json", gate)
            return {**base, "action": "skipped", "val_score": None, "best_score": state.best_score}
        cached = candidate.content_hash in state.val_scores
        if cached:
            score = state.val_scores[candidate.content_hash]
            self.events.emit(
                "message", text=f"step {step}: candidate seen before, reusing its validation score"
            )
        else:
            val = self.rollouts(
                self.benchmark_split("val"), candidate.text, folder / "rollouts" / "val", "validate", step
            )
            score = mean_score(val)
            state.val_scores[candidate.content_hash] = score
        decision = self.gate.decide(score, state.current_score)
        self.run.write_json(
            folder / "gate.json",
            {
                "accepted": decision.accepted,
                "reason": decision.reason,
                "candidate_score": score,
                "current_score": state.current_score,
                "cached": cached,
            },
        )
        version = None
        if decision.accepted:
            state.version += 1
            version = version_name(state.version)
            self.run.write_skill(state.version, candidate.text)
            state.current_text, state.current_score = candidate.text, score
            state.accepted += 1
            if score > state.best_score:
                state.best_score, state.best_version, state.best_step = score, state.version, step
                self.run.write_text("best_skill.md", candidate.text)
        else:
            state.rejected += 1
            state.rejected_edits.extend(applied)
        action = "accepted" if decision.accepted else "rejected"
        return {
            **base,
            "action": action,
            "val_score": score,
            "best_score": state.best_score,
            "version": version,
            "cached": cached,
        }

    # -- splits ---------------------------------------------------------------------------------
    def benchmark_split(self, split: str) -> list[Task]:
        if split not in self._splits:
            self._splits[split] = self.benchmark.load(split)  # type: ignore[arg-type]
        return self._splits[split]

    def batches(self, epoch: int) -> list[list[Task]]:
        """The epoch's shuffled train batches; seeded per epoch so a resumed run sees the same."""
        tasks = list(self.benchmark_split("train"))
        random.Random(f"{self.cfg.train.seed}:{epoch}").shuffle(tasks)
        size = self.cfg.train.batch_size
        return [tasks[i : i + size] for i in range(0, len(tasks), size)]

    def steps_per_epoch(self) -> int:
        return math.ceil(len(self.benchmark_split("train")) / self.cfg.train.batch_size)

    # -- the run --------------------------------------------------------------------------------
    def train(self, state: TrainState | None = None) -> dict[str, Any]:
        """Baseline, epochs of steps, final test; returns the summary (also written to disk)."""
        total_steps = self.cfg.train.epochs * self.steps_per_epoch()
        self.events.emit(
            "run_start",
            out=str(self.run.root),
            epochs=self.cfg.train.epochs,
            steps_per_epoch=self.steps_per_epoch(),
            total_steps=total_steps,
            optimizer_backend=self.cfg.model.optimizer_backend,
            target_backend=self.cfg.model.target_backend,
        )
        stopped = "completed"
        try:
            state = state or self.baseline()
            step = 0
            for epoch in range(1, self.cfg.train.epochs + 1):
                self.epoch = epoch
                for batch in self.batches(epoch):
                    step += 1
                    if step <= state.step:
                        continue  # finished before a resume
                    if state.rejected_epoch != epoch:
                        state.rejected_edits, state.rejected_epoch = [], epoch
                    self.step(state, step, epoch, batch, total_steps)
                    self.checkpoint(state)
            test = self.final_test(state) if self.cfg.benchmark.test_size > 0 else None
        except BudgetStop as stop:
            stopped, test = "budget", None
            self.events.emit("message", text=f"budget reached: {stop}; keeping the best skill so far")
        except TrainingFailed as failure:
            # Keep a truthful summary of the finished work before reporting the failure.
            self.summary(state or TrainState(), "error", None, error=str(failure))
            raise
        state = state or TrainState()
        summary = self.summary(state, stopped, test)
        self.events.emit(
            "run_end",
            best_score=state.best_score,
            baseline_score=state.baseline_score,
            stopped=stopped,
            usage=self.accounting.usage_so_far(),
        )
        return summary

    def baseline(self) -> TrainState:
        text = self.initial_skill
        self.run.write_skill(0, text)
        self.run.write_text("best_skill.md", text)
        val = self.rollouts(
            self.benchmark_split("val"), text, self.run.step_dir(0) / "rollouts" / "val", "baseline", 0
        )
        if val and all(r.result.is_error for r in val):
            raise TrainingFailed(f"every baseline task failed; first error: {val[0].result.error}")
        score = mean_score(val)
        state = TrainState(current_text=text, current_score=score, baseline_score=score, best_score=score)
        state.val_scores[SkillDoc(text).content_hash] = score
        self.checkpoint(state)
        return state

    def checkpoint(self, state: TrainState) -> None:
        """The resume point: written only after a unit of work is complete on disk."""
        self.run.write_json("state.json", {**state.to_json(), "ledger": self.ledger.to_json()})

    def final_test(self, state: TrainState) -> dict[str, Any]:
        tasks = self.benchmark_split("test")
        results: dict[str, Any] = {}
        versions = sorted({0, state.best_version})
        for version in versions:
            text = (self.run.path("skills", f"{version_name(version)}.md")).read_text(encoding="utf-8")
            prefix = Path("test") / version_name(version)
            results[version_name(version)] = mean_score(
                self.rollouts(tasks, text, prefix, "test", state.step)
            )
        return {
            "baseline": results["v0000"],
            "best": results[version_name(state.best_version)],
            "by_version": results,
        }

    def summary(
        self, state: TrainState, stopped: str, test: dict[str, Any] | None, error: str | None = None
    ) -> dict[str, Any]:
        summary: dict[str, Any] = {
            **state.outcome(),
            "stopped": stopped,
            "test": test,
            "optimizer_backend": self.cfg.model.optimizer_backend,
            "target_backend": self.cfg.model.target_backend,
            "optimizer_model": self.roles.optimizer.model if self.roles.optimizer else None,
            "target_model": self.roles.agent.model,
            "wall_s": round(self.events.elapsed(), 3),
            "usage": self.ledger.to_json(),
        }
        if error:
            summary["error"] = error
        self.run.write_json("summary.json", summary)
        return summary
