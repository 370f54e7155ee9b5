"""Epochs -> steps. Orchestration only: every stage is a function of its inputs; every side
effect goes through RunDir (disk), Events (progress) and the usage ledger (budget).

Overlap (`train.overlap`, the default): the baseline runs beside step 1's rollouts; while a
candidate is validated, the next step's rollouts run with it (redone with the incumbent if it is
rejected); after a batch without failures the rest of the epoch is rolled out at once. `Ahead`
hands a step only rollouts made with the skill the sequential order would give it, so decisions
and skills are exactly those of `train.overlap: false`.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

from skillgrad.benchmarks.base import Benchmark
from skillgrad.budget import Ledger
from skillgrad.config import Config
from skillgrad.errors import FatalBackendError
from skillgrad.loop.accounting import Accounting, BudgetStop
from skillgrad.loop.ahead import Ahead
from skillgrad.loop.candidate import Candidates
from skillgrad.loop.events import Events
from skillgrad.loop.gate import Gate
from skillgrad.loop.interleaved import Interleaved
from skillgrad.loop.plan import Plan, PlanStep, Splits, make_plan, steps_per_epoch
from skillgrad.loop.records import GateRecord, StepEnd, StepRecord
from skillgrad.loop.reflection import Reflection, propose_and_select
from skillgrad.loop.rollout import mean_score
from skillgrad.loop.search.base import SearchContext
from skillgrad.loop.selection import Selection
from skillgrad.loop.stages import Roles, RolloutRunner, TrainingFailed
from skillgrad.loop.state import TrainState
from skillgrad.loop.strategies import Strategies
from skillgrad.loop.validate import Race, Validation, ValUnit, validate
from skillgrad.loop.verdict import judge
from skillgrad.package.doc import PackageDoc
from skillgrad.run_folder import RunDir, version_name
from skillgrad.skill import EditOutcome, SkillDoc
from skillgrad.values import Rollout, Task

__all__ = ["Roles", "Trainer", "TrainingFailed"]


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
        strategies: Strategies,
        interleaved: Interleaved | None = None,
    ) -> None:
        self.cfg = cfg
        self.benchmark = benchmark
        self.roles = roles
        self.run = run
        self.events = events
        self.ledger = ledger
        self.initial_skill = initial_skill
        self.schedule = strategies.schedule
        self.metric, self.test_repeats = strategies.metric, strategies.test_repeats
        self.interleaved = interleaved
        self.candidates = Candidates(
            cfg, run, events, strategies.merger, strategies.ranker, lambda: self.benchmark_split("train")
        )
        self.accounting = Accounting(ledger)
        tools = (run, events, self.accounting, roles.optimizer, self.candidates.checks, strategies.metric)
        self.search = strategies.search(SearchContext(cfg, strategies.gate, *tools))  # each step's parent
        self.runner = RolloutRunner(cfg, benchmark, roles, run, events, self.accounting)
        self.reflection = Reflection(
            cfg,
            roles,
            run,
            events,
            self.accounting,
            strategies.analyst,
            slots=self.runner.slots,
            caps=self.runner.caps,
        )
        self.ahead: Ahead | None = None  # set while `train` runs with overlap
        self.benchmark_split = Splits(benchmark)
        self._rounds_before = 0  # observed rounds of earlier sessions of a resumed run
        # wall seconds and number of the earlier processes of a resumed run (resume.earlier_sessions)
        self.earlier_wall_s, self.earlier_sessions = 0.0, 0

    # -- train rollouts -------------------------------------------------------------------------
    def _train_rollouts(self, step: int, batch: list[Task], skill: str) -> list[Rollout]:
        prefix = self.run.rollouts_dir(step, "train")
        return self.runner.rollouts(batch, skill, prefix, "rollout", step, fresh=True)

    def _prefetch(self, plan: Sequence[PlanStep], skill: str) -> None:
        if self.ahead is not None:
            for step, _, batch in plan:
                self.ahead.start(step, skill, functools.partial(self._train_rollouts, step, batch, skill))

    def train_batch(self, state: TrainState, step: int, batch: list[Task]) -> list[Rollout]:
        rollouts, discarded = self.ahead.take(step, state.current_text) if self.ahead else (None, False)
        if discarded:
            self.events.emit("message", text=f"step {step}: redoing rollouts made with the rejected skill")
        if rollouts is None:
            rollouts = self._train_rollouts(step, batch, state.current_text)
        passed = state.train_passed.setdefault(SkillDoc(state.current_text).content_hash, [])
        passed.extend(r.task.id for r in rollouts if r.score.passed and r.task.id not in passed)
        return rollouts

    # -- one step -------------------------------------------------------------------------------
    def step(self, state: TrainState, plan: Plan, index: int, total_steps: int) -> None:
        step, epoch, batch = plan[index]
        self.accounting.start_step()
        merged = self.search.merge(state, step)  # a step may be spent on a candidate made otherwise
        before = state.current_score
        lr = self.schedule(
            step, total_steps, self.cfg.optimizer.learning_rate, self.cfg.optimizer.min_learning_rate
        )
        train = self.train_batch(state, step, batch) if merged is None else []
        chosen, max_chars = (
            (Selection(), 0)
            if merged
            else propose_and_select(self.reflection, self.candidates, state, plan[index], train, lr)
        )
        candidate, outcomes, blocked = merged or self.candidates.build(state, step, chosen, max_chars)
        started = StepRecord(
            step=step,
            epoch=epoch,
            learning_rate=lr,
            train_score=mean_score(train) if train else None,
            dropped=chosen.counts(),
            current_score=state.current_score,
            edits=[{**o.edit.to_json(), "status": o.status, "reason": o.reason} for o in outcomes],
            version=None,
            cached=False,
            action="skipped",
            val_score=None,
            best_score=state.best_score,
        )
        nxt = plan[index + 1 : index + 2] if self.search.prefetches else []
        record = self._validate_and_gate(state, started, candidate, outcomes, nxt, blocked)
        state.step = step
        record = replace(record, usage=self.accounting.step_usage())
        self.run.append_history(record.to_json())
        end = StepEnd(
            step=step,
            epoch=epoch,
            action=record.action,
            val_score=record.val_score,
            best_score=state.best_score,
            current_score=before,
            edits_applied=sum(1 for o in outcomes if o.status == "applied"),
            usage=self.accounting.usage_so_far(),
            step_usage=self.accounting.step_usage(),
        )
        self.events.emit("step_end", **end.to_json())

    def _validate_and_gate(
        self,
        state: TrainState,
        started: StepRecord,
        candidate: SkillDoc | PackageDoc,
        outcomes: list[EditOutcome],
        nxt: Sequence[PlanStep],
        blocked: str | None = None,
    ) -> StepRecord:
        """Validate the candidate (unless there is nothing to validate), let the gate decide, write
        gate.json and the new version; the step's record with the decision."""
        step = started.step
        applied = [o.edit for o in outcomes if o.status == "applied"]
        if not applied or candidate.text == state.current_text or blocked:
            skipped = GateRecord.skipped(state.current_score, self.cfg.optimizer, blocked)
            self.run.write_gate(step, skipped.to_json())
            return replace(started, skip_reason=blocked)
        gate = self.search.gate(state, candidate.text)
        val, incumbent = self._validate(state, step, candidate, nxt, gate)
        decision = judge(gate, val, incumbent)
        score = self.metric(val.results)
        record = replace(
            GateRecord.of(decision, val, state.current_score, self.cfg.optimizer), candidate_score=score
        )
        self.run.write_gate(step, record.to_json())
        version = None
        if decision.accepted:
            version = self.search.accept(state, step, candidate.text, val.results, applied)
        else:
            self.search.reject(state, applied)
        return replace(
            started,
            action="accepted" if decision.accepted else "rejected",
            val_score=score,
            best_score=state.best_score,
            version=version,
            cached=val.calls == 0,
        )

    def _validate(
        self,
        state: TrainState,
        step: int,
        candidate: SkillDoc | PackageDoc,
        nxt: Sequence[PlanStep],
        gate: Gate,
    ) -> tuple[Validation, dict[str, list[float]]]:
        """The candidate's validation (racing in waves when configured) and the incumbent's results."""
        incumbent = self.incumbent_results(state)
        known = state.val_results.get(candidate.content_hash, {})
        racing = self.cfg.optimizer.validation == "racing"
        race = Race(gate, incumbent, self.cfg.optimizer.race_waves) if racing else None
        if known:
            self.events.emit("message", text=f"step {step}: candidate seen before, reusing its validation")

        def before_wave(results: dict[str, list[float]], last: bool) -> None:
            # The next step's rollouts run with the candidate meanwhile: beside a validation run
            # in one wave, or once the candidate has missed an item. A candidate still perfect
            # after a first wave may end the run (no headroom left): rollouts started for it
            # would be paid for nothing.
            single = last and not any(results.values())
            if single or any(s < 1.0 for scores in results.values() for s in scores):
                self._prefetch(nxt, candidate.text)

        val = validate(
            self.benchmark_split("val"),
            self.cfg.optimizer.val_repeats,
            known,
            lambda units: self._val_units(step, candidate.text, "validate", units),
            race,
            before_wave=before_wave,
        )
        state.val_results[candidate.content_hash] = val.results
        return val, incumbent

    # -- validation -----------------------------------------------------------------------------
    def _val_units(
        self, step: int, skill: str, stage: str, units: list[ValUnit], split: str = "val"
    ) -> list[Rollout]:
        """Val rollouts under `rollouts/<split>`; repeat r > 0 of a task under `<split>-r{r+1}`."""
        return self._units(self.run.rollouts_dir(step, split), skill, stage, step, units)

    def _units(self, prefix: Path, skill: str, stage: str, step: int, units: list[ValUnit]) -> list[Rollout]:
        """Rollouts of `units` under `prefix`; repeat r > 0 of a task under `<prefix>-r{r+1}`."""
        folders = [
            prefix if u.repeat == 0 else prefix.with_name(f"{prefix.name}-r{u.repeat + 1}") for u in units
        ]
        repeats = [u.repeat for u in units]
        return self.runner.rollouts([u.task for u in units], skill, folders.__getitem__, stage, step, repeats)

    def full_validation(
        self, step: int, skill: str, stage: str, known: dict[str, list[float]], split: str = "val"
    ) -> Validation:
        ran: list[Rollout] = []

        def run_units(units: list[ValUnit]) -> list[Rollout]:
            ran.extend(self._val_units(step, skill, stage, units, split))
            return ran[-len(units) :]

        val = validate(self.benchmark_split("val"), self.cfg.optimizer.val_repeats, known, run_units)
        if ran and all(r.result.is_error for r in ran):
            raise TrainingFailed(f"every {stage} task failed; first error: {ran[0].result.error}")
        return val

    def incumbent_results(self, state: TrainState) -> dict[str, list[float]]:
        """The incumbent's per-item results (a run resumed from an older state validates anew)."""
        key = SkillDoc(state.current_text).content_hash
        results = state.val_results.get(key, {})
        if len(results) < len(self.benchmark_split("val")) or any(
            len(v) < self.cfg.optimizer.val_repeats for v in results.values()
        ):
            val = self.full_validation(state.step, state.current_text, "validate", results, "val-incumbent")
            results = val.results
            state.val_results[key] = results
        return results

    # -- the run --------------------------------------------------------------------------------
    def train(self, state: TrainState | None = None) -> dict[str, Any]:
        """Baseline, epochs of steps, final test; returns the summary (also written to disk)."""
        per_epoch = steps_per_epoch(self.benchmark_split("train"), self.cfg.train)
        total_steps = self.cfg.train.epochs * per_epoch
        self.events.emit(
            "run_start",
            out=str(self.run.root),
            epochs=self.cfg.train.epochs,
            steps_per_epoch=per_epoch,
            total_steps=total_steps,
            optimizer_backend=self.cfg.model.optimizer_backend,
            target_backend=self.cfg.model.target_backend,
        )
        stopped, reason, test = "completed", None, None
        self._rounds_before = state.rounds if state else 0
        try:
            with ThreadPoolExecutor(max_workers=2, thread_name_prefix="ahead") as pool:
                self.ahead = Ahead(pool) if self.cfg.train.overlap else None
                try:
                    state, stopped, reason = self._steps(state, total_steps)
                    if self.interleaved is not None:
                        self.interleaved.finish(state)
                finally:
                    if self.ahead is not None:
                        self.ahead.drain()
                    self.ahead = None
            if self.cfg.benchmark.test_size > 0:
                test = self.final_test(state)
        except BudgetStop as stop:
            stopped, reason, test = "budget", str(stop), None
            self.events.emit("message", text=f"budget reached: {stop}; keeping the best skill so far")
        except (TrainingFailed, FatalBackendError, OSError) as failure:
            # Keep a truthful summary of the finished work before reporting the failure (unless
            # the failure is a full disk that refuses the summary too).
            with contextlib.suppress(OSError):
                self.summary(state or TrainState(), "error", None, error=str(failure))
            raise
        state = state or TrainState()
        summary = self.summary(state, stopped, test, reason=reason)
        if (note := self.runner.scorer_note()) is not None:
            self.events.emit("message", text=note)
        self.events.emit(
            "run_end",
            best_score=state.best_score,
            baseline_score=state.baseline_score,
            stopped=stopped,
            usage=self.accounting.usage_so_far(),
        )
        return summary

    def _steps(self, state: TrainState | None, total_steps: int) -> tuple[TrainState, str, str | None]:
        plan = make_plan(self.benchmark_split("train"), self.cfg.train)
        pending = range(plan.first_after(state.step if state else 0), len(plan))  # lazy, as the plan
        if state is None:
            if pending:  # step 1's rollouts need only the initial skill: they run beside the baseline
                self._prefetch(plan[pending[0] : pending[0] + 1], self.initial_skill)
            state = self.baseline()
        for index in pending:
            step, epoch, _ = plan[index]
            self.search.begin(state, step, epoch)  # the step's parent becomes the current skill
            why = self.search.stop_reason(state, self.incumbent_results(state), plan[index:], self.ahead)
            if why is not None:
                self.events.emit("message", text=f"stopping before step {step}: {why[1]}")
                return state, why[0], why[1]
            self.runner.epoch = epoch
            self.step(state, plan, index, total_steps)
            if self.interleaved is not None:
                self.interleaved.after_step(state, step)
            self.checkpoint(state)
        return state, "completed", None

    def baseline(self) -> TrainState:
        text = self.initial_skill
        self.run.write_skill(0, text)
        self.run.write_best_skill(text)
        val = self.full_validation(0, text, "baseline", {})
        score = self.metric(val.results)
        state = TrainState(current_text=text, current_score=score, baseline_score=score, best_score=score)
        state.val_results[SkillDoc(text).content_hash] = val.results
        self.checkpoint(state)
        return state

    def rounds(self) -> int:
        return self._rounds_before + self.accounting.clock.rounds()

    def checkpoint(self, state: TrainState) -> None:
        """The resume point: written only after a unit of work is complete on disk."""
        state.rounds = self.rounds()
        self.run.write_state({**state.to_json(), "ledger": self.ledger.to_json()})

    def final_test(self, state: TrainState) -> dict[str, Any]:
        """The initial and the best skill (and the versions the search reports) on the test split,
        each item `test_repeats` times."""
        results: dict[str, Any] = {}
        versions = sorted({0, state.best_version, *self.search.tested(state)})  # others: reported only
        for version in versions:
            text, prefix = self.run.read_skill(version), self.run.test_dir(version)
            run_units = functools.partial(self._units, prefix, text, "test", state.step)
            val = validate(self.benchmark_split("test"), self.test_repeats, {}, run_units)
            results[version_name(version)] = self.metric(val.results)
        test = {
            "baseline": results["v0000"],
            "best": results[version_name(state.best_version)],
            "by_version": results,
        }
        return test if self.interleaved is None else {**test, **self.interleaved.final_test(state)}

    def summary(
        self,
        state: TrainState,
        stopped: str,
        test: dict[str, Any] | None,
        error: str | None = None,
        reason: str | None = None,
    ) -> dict[str, Any]:
        summary: dict[str, Any] = {
            **state.outcome(),
            **self.search.outcome(state),
            "stopped": stopped,
            "stop_reason": reason,
            "test": test,
            "optimizer_backend": self.cfg.model.optimizer_backend,
            "target_backend": self.cfg.model.target_backend,
            "optimizer_model": self.roles.optimizer.model if self.roles.optimizer else None,
            "target_model": self.roles.agent.model,
            "wall_s": round(self.earlier_wall_s + self.events.elapsed(), 3),  # every process's
            "sessions": self.earlier_sessions + 1,
            "calls": self.ledger.paid_calls(),
            "scorer_errors": len(self.runner.scorer_errors),
            "rounds": self.rounds(),
            "usage": self.ledger.to_json(),
        }
        if error:
            summary["error"] = error
        if self.interleaved is not None:
            summary.update(self.interleaved.summary())
        self.run.write_summary(summary)
        return summary
