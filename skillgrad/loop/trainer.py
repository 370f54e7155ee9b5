"""Epochs -> steps. Orchestration only: every stage is a function of its inputs; every side
effect goes through RunDir (disk), Events (progress) and the usage ledger (budget).

Overlap (`train.overlap`, the default): the baseline runs beside step 1's rollouts; while a
candidate is validated, the next step's rollouts run with it (redone with the incumbent if it is
rejected); after a batch without failures the rest of the epoch is rolled out at once. `PrefetchedRollouts`
hands a step only rollouts made with the skill the sequential order would give it, so decisions
and skills are exactly those of `train.overlap: false`.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

from skillgrad.benchmarks.contract import Benchmark
from skillgrad.budget import Ledger
from skillgrad.config import Config
from skillgrad.errors import FatalBackendError
from skillgrad.loop.accounting import Accounting, BudgetStop
from skillgrad.loop.candidate import Candidates
from skillgrad.loop.decision.gate import Gate
from skillgrad.loop.decision.judge import judge, scored
from skillgrad.loop.decision.racing import Race, Validation, validate
from skillgrad.loop.decision.tie_break import NoTieBreak, TieBreak
from skillgrad.loop.event_bus import Events
from skillgrad.loop.interleaved import Interleaved
from skillgrad.loop.plan import Plan, PlanStep, Splits, make_plan, steps_per_epoch
from skillgrad.loop.prefetch import PrefetchedRollouts
from skillgrad.loop.reflect_stage import Reflection, propose_and_select
from skillgrad.loop.rollout import mean_score
from skillgrad.loop.search.protocol import SearchContext
from skillgrad.loop.selection import Selection
from skillgrad.loop.stages import Roles, RolloutRunner, TrainingFailed
from skillgrad.loop.state import TrainState
from skillgrad.loop.step_records import GateRecord, StepEnd, StepRecord, pass_label, skip_note
from skillgrad.loop.stopping import note_reflected
from skillgrad.loop.strategies import Strategies, make_search, search_settings
from skillgrad.loop.valruns import ValRuns, val_forms
from skillgrad.package.doc import PackageDoc
from skillgrad.run_folder import RunDir, version_name
from skillgrad.skilldoc import EditOutcome, SkillDoc
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
        self.gate_name = strategies.gate_name  # gate.json's `gate`
        self.gate, self.tie_break = strategies.gate, strategies.tie_break
        self.interleaved = interleaved
        self.benchmark_split = Splits(benchmark)
        self.candidates = Candidates(
            cfg.optimizer, cfg.skill, run, events, strategies, self.benchmark_split, initial_skill
        )
        self.accounting = Accounting(ledger)
        self.runner = RolloutRunner(cfg, benchmark, roles, run, events, self.accounting)
        tools = (run, events, self.accounting, roles.optimizer, self.candidates.checks, strategies.metric)
        settings = search_settings(cfg, strategies, self.runner.resamples)
        self.search = make_search(strategies.search, SearchContext(settings, strategies.gate, *tools))
        self.valruns = ValRuns(cfg, self.runner, run, self.benchmark_split)
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
        self.ahead: PrefetchedRollouts | None = None  # set while `train` runs with overlap
        self._rounds_before = 0  # observed rounds of earlier sessions of a resumed run
        # wall seconds and number of the earlier processes of a resumed run (resume.earlier_sessions)
        self.earlier_wall_s, self.earlier_sessions = 0.0, 0

    # -- train rollouts -------------------------------------------------------------------------
    def _train_rollouts(self, step: int, epoch: int, batch: list[Task], skill: str) -> list[Rollout]:
        prefix = self.run.rollouts_dir(step, "train")
        return self.runner.rollouts(batch, skill, prefix, "rollout", step, fresh=True, epoch=epoch)

    def _prefetch(self, plan: Sequence[PlanStep], skill: str) -> None:
        if self.ahead is not None:
            for step, epoch, batch in plan:
                rollouts = functools.partial(self._train_rollouts, step, epoch, batch, skill)
                self.ahead.start(step, skill, rollouts)

    def train_batch(self, state: TrainState, step: int, epoch: int, batch: list[Task]) -> list[Rollout]:
        rollouts, discarded = self.ahead.take(step, state.current_text) if self.ahead else (None, False)
        if discarded:
            self.events.emit("message", text=f"step {step}: redoing rollouts made with the rejected skill")
        if rollouts is None:
            rollouts = self._train_rollouts(step, epoch, batch, state.current_text)
        passed = state.train_passed.setdefault(SkillDoc(state.current_text).content_hash, [])
        passed.extend(r.task.id for r in rollouts if r.score.passed and r.task.id not in passed)
        note_reflected(state, batch)
        return rollouts

    # -- one step -------------------------------------------------------------------------------
    def step(self, state: TrainState, plan: Plan, index: int, total_steps: int) -> None:
        step, epoch, batch = plan[index]
        self.accounting.start_step()
        merged = self.search.merge_lineages(state, step)  # a step may be spent on a candidate made otherwise
        before = state.current_score
        lr = self.schedule(
            step, total_steps, self.cfg.optimizer.learning_rate, self.cfg.optimizer.min_learning_rate
        )
        train = self.train_batch(state, step, epoch, batch) if merged is None else []
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
        same = candidate.text == state.current_text
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
            raced_out=record.raced_out,
            missing=record.missing,
            held=record.held,
            version=record.version,
            skip_reason=skip_note(record.dropped, outcomes, blocked, same)
            if record.action == "skipped"
            else None,
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
            skipped = GateRecord.skipped(state.current_score, self.cfg.optimizer, blocked, self.gate_name)
            self.run.write_gate(step, skipped.to_json())
            return replace(started, skip_reason=blocked)
        gate = self.search.gate(state, candidate.text)
        tie_break = self.tie_break if gate is self.gate else NoTieBreak()  # not a frontier's pool entry
        val, incumbent = self._validate(state, step, candidate, nxt, gate, tie_break)
        forms = [val_forms(state, text) for text in (candidate.text, state.current_text)]
        decision = tie_break.decide(judge(gate, val, incumbent), val, incumbent, *forms)
        score, raced = scored(self.metric, gate, val, incumbent)
        record = GateRecord.of(decision, val, state.current_score, self.cfg.optimizer, raced, self.gate_name)
        self.run.write_gate(step, replace(record, candidate_score=score).to_json())
        version = None
        if decision.accepted:
            version = self.search.accept(state, step, candidate.text, val.results, applied)
        else:  # a held candidate was not judged on its merits: its edits stay allowed
            self.search.reject(state, [] if decision.held else applied)
        return replace(
            started,
            action="accepted" if decision.accepted else "rejected",
            val_score=score,
            best_score=state.best_score,
            version=version,
            cached=val.calls == 0,
            raced_out=raced,
            missing=val.missing_count,
            held=decision.held,
        )

    def _validate(
        self,
        state: TrainState,
        step: int,
        candidate: SkillDoc | PackageDoc,
        nxt: Sequence[PlanStep],
        gate: Gate,
        tie_break: TieBreak,
    ) -> tuple[Validation, dict[str, list[float]]]:
        """The candidate's validation (racing in waves when configured, bounded by the tie
        break's racing gate) and the incumbent's results."""
        incumbent = self.incumbent_results(state)
        racing = self.cfg.optimizer.validation == "racing"
        # The incumbent's forms are read after its results: validating it records them.
        bound = tie_break.racing_gate(gate, incumbent, val_forms(state, state.current_text))
        race = Race(bound, incumbent, self.cfg.optimizer.race_waves) if racing else None
        if state.val_results.get(candidate.content_hash):
            self.events.emit("message", text=f"step {step}: candidate seen before, reusing its validation")

        def before_wave(results: dict[str, list[float]], last: bool) -> None:
            # The next step's rollouts run with the candidate meanwhile: beside a validation run
            # in one wave, or once the candidate has missed an item. A candidate still perfect
            # after a first wave may end the run (no headroom left): rollouts started for it
            # would be paid for nothing.
            single = last and not any(results.values())
            if single or any(s < 1.0 for scores in results.values() for s in scores):
                self._prefetch(nxt, candidate.text)

        return self.valruns.candidate(state, step, candidate.text, race, before_wave), incumbent

    def incumbent_results(self, state: TrainState) -> dict[str, list[float]]:
        """The incumbent's per-item results (`ValRuns.incumbent`)."""
        return self.valruns.incumbent(state)

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
            target_backend=self.roles.target_backend(self.cfg),
        )
        stopped, reason, test = "completed", None, None
        self._rounds_before = state.rounds if state else 0
        try:
            with ThreadPoolExecutor(max_workers=2, thread_name_prefix="ahead") as pool:
                self.ahead = PrefetchedRollouts(pool) if self.cfg.train.overlap else None
                try:
                    state, stopped, reason = self._steps(state, total_steps)
                    if self.interleaved is not None:
                        self.interleaved.finish(state)
                finally:
                    if self.ahead is not None:
                        self.ahead.drain()
                    self.ahead = None
            if self.cfg.benchmark.test_size:
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
        state = TrainState(current_text=text)
        score = self.metric(self.valruns.full(state, 0, text, "baseline").results)
        state.current_score = state.baseline_score = state.best_score = score
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
        missing: dict[str, int] = {}  # runs whose agent failed, left out of the version's score
        versions = sorted({0, state.best_version, *self.search.tested(state)})  # others: reported only
        for version in versions:
            text, prefix = self.run.read_skill(version), self.run.test_dir(version)
            label = pass_label(version, state.best_version)
            run_units = functools.partial(self.valruns.units, prefix, text, "test", state.step, label=label)
            val = validate(self.benchmark_split("test"), self.test_repeats, {}, run_units)
            results[version_name(version)] = self.metric(val.results)
            missing[version_name(version)] = val.missing_count
        test = {
            "baseline": results["v0000"],
            "best": results[version_name(state.best_version)],
            "by_version": results,
            "missing": missing,
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
            "target_backend": self.roles.target_backend(self.cfg),
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
