"""`optimizer.target: both`: one run trains the body on tasks and the description on triggers, a
description step after each body step (`Interleaved`).

The description's steps are a trainer of their own over the trigger world, writing a run folder
of their own (`description/`: skills, steps, history, state, test). The two share the skill: the
body comes from the run's current skill, the description from the description's. Each part keeps
the other's results for a change to the part it does not read: the body's steps run their tasks
with the skill named (loaded whatever its description says), and a harness decides to load a
skill from its description before it reads the body. So a description kept by its gate becomes
a new version of the run's skill (also the best one when the current skill was the best) without
validating the tasks again, and a body kept becomes the description's skill without running the
triggers again.

The final test adds the trigger test (F1 of the initial and the best description) and the task
test with the skill installed among the distractors and not named (`test/vNNNN-unnamed/`): the
task score with the skill loaded as the harness chooses.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from skillgrad.activation.description import description_of, own_description, with_description
from skillgrad.activation.world import TriggerWorld
from skillgrad.benchmarks.contract import Benchmark
from skillgrad.budget import Ledger
from skillgrad.config import Config
from skillgrad.loop.event_bus import Events
from skillgrad.loop.plan import make_plan
from skillgrad.loop.rollout import mean_score
from skillgrad.loop.stages import Roles, RolloutRunner
from skillgrad.loop.state import TrainState
from skillgrad.loop.trainer import Trainer
from skillgrad.run_folder import RunDir, version_name
from skillgrad.skilldoc import SkillDoc

DESCRIPTION_DIR = "description"  # the description part's run folder inside the run's
UNNAMED = "unnamed"  # test/vNNNN-unnamed/: the tasks with the skill loaded as the harness chooses


class PartEvents(Events):
    """The description part's events, told apart from the body's in the progress and the log."""

    def __init__(self, inner: Events) -> None:
        super().__init__()
        self.inner = inner

    def elapsed(self) -> float:
        return self.inner.elapsed()

    def emit(self, kind: str, **fields: Any) -> None:
        if kind in ("run_start", "run_end"):
            return
        if kind == "step_end":
            text = (
                f"description step {fields.get('step')}: {str(fields.get('action')).upper()}: trigger F1 "
                f"{_fmt(fields.get('val_score'))} vs current {_fmt(fields.get('current_score'))}"
            )
            self.inner.emit("message", text=text)
            return
        if "stage" in fields:
            fields["stage"] = f"description {fields['stage']}"
        self.inner.emit(kind, **fields)


def _fmt(value: Any) -> str:
    return "-" if not isinstance(value, int | float) else f"{float(value):.3f}"


def _carry(state: TrainState, old: str, new: str) -> None:
    """`new` (the other part changed) keeps what `state` knows of `old`."""
    before, after = SkillDoc(old).content_hash, SkillDoc(new).content_hash
    if before in state.val_results:
        state.val_results.setdefault(after, state.val_results[before])
    if before in state.train_passed:
        state.train_passed.setdefault(after, list(state.train_passed[before]))


class Alternating:
    """`Interleaved`: the description's steps beside the trainer's body steps."""

    def __init__(
        self,
        cfg: Config,
        world: TriggerWorld,
        tasks: Benchmark,
        roles: Roles,
        run: RunDir,
        events: Events,
        ledger: Ledger,
        resumed: TrainState | None = None,
    ) -> None:
        """`resumed`: the description part's checkpoint (its state.json, checked by the caller)."""
        self.cfg, self.world, self.tasks, self.roles = cfg, world, tasks, roles
        self.run, self.events = run, events
        self.part = run.part(DESCRIPTION_DIR)
        self.part.create(allow_existing=True)
        self.trainer = Trainer(
            world.cfg,
            world.benchmark,
            world.roles,
            self.part,
            PartEvents(events),
            ledger,
            world.skill,
            world.strategies,
        )
        self.plan = make_plan(world.benchmark.load("train"), world.cfg.train)
        self.state = self._resumed(resumed)
        self.stopped: str | None = None

    def _resumed(self, state: TrainState | None) -> TrainState | None:
        if state is None:
            return None
        self.part.keep_history_to(state.step)
        self.part.write_best_skill(self.part.read_skill(state.best_version))
        return state

    # -- Interleaved ------------------------------------------------------------------------------
    def after_step(self, state: TrainState, step: int) -> None:
        """Description step `step` (once: a resumed run may have done it already)."""
        own = self._own()
        if step <= own.step or step > len(self.plan) or self.stopped:
            self._sync_to(state)
            return
        self._sync_from(state)
        epoch = self.plan[step - 1][1]
        search = self.trainer.search
        search.begin(own, step, epoch)
        why = search.stop_reason(own, self.trainer.incumbent_results(own), self.plan[step - 1 :], None)
        if why is not None:
            self.stopped = why[1]
            self.events.emit("message", text=f"description: stopping before step {step}: {why[1]}")
            return
        self.trainer.runner.epoch = epoch
        self.trainer.step(own, self.plan, step - 1, len(self.plan))
        self.trainer.checkpoint(own)
        self._sync_to(state)

    def finish(self, state: TrainState) -> None:
        """The description steps the body's steps did not reach (fewer body steps, an early stop)."""
        for step in range(state.step + 1, len(self.plan) + 1):
            if self.stopped:  # no step left can change the description (the plan may be huge)
                break
            self.after_step(state, step)
        self._sync_to(state)

    def final_test(self, state: TrainState) -> dict[str, Any]:
        own = self._own()
        out: dict[str, Any] = {}
        if self.world.cfg.benchmark.test_size:
            out["triggers"] = self.trainer.final_test(own)
        roles = replace(self.roles, agent=self.world.roles.agent)
        runner = RolloutRunner(self.cfg, self.tasks, roles, self.run, self.events, self.trainer.accounting)
        scores = {}
        for version in sorted({0, state.best_version}):
            prefix = self.run.test_dir(version)
            folder = prefix.with_name(f"{prefix.name}-{UNNAMED}")
            rollouts = runner.rollouts(
                self.tasks.load("test"), self.run.read_skill(version), folder, "test", state.step
            )
            scores[version_name(version)] = mean_score(rollouts)
        best = version_name(state.best_version)
        out[UNNAMED] = {"baseline": scores["v0000"], "best": scores[best], "by_version": scores}
        return out

    def summary(self) -> dict[str, Any]:
        own = self.state
        if own is None:
            return {}
        return {
            DESCRIPTION_DIR: {
                "baseline_val_f1": own.baseline_score,
                "best_val_f1": own.best_score,
                "best_version": version_name(own.best_version),
                "steps": own.step,
                "accepted": own.accepted,
                "rejected": own.rejected,
                "stopped": self.stopped,
                "description": own_description(own.current_text),
            }
        }

    # -- the shared skill -------------------------------------------------------------------------
    def _own(self) -> TrainState:
        if self.state is None:
            self.state = self.trainer.baseline()
        return self.state

    def _sync_from(self, state: TrainState) -> None:
        """The description's skill takes the run's current body."""
        own = self._own()
        text = with_description(state.current_text, description_of(own.current_text), self.cfg.skill.name)
        if text != own.current_text:
            _carry(own, own.current_text, text)
            own.current_text = text

    def _sync_to(self, state: TrainState) -> None:
        """The run's skill takes the description's current description, as a new version."""
        if self.state is None:
            return
        text = with_description(
            state.current_text, description_of(self.state.current_text), self.cfg.skill.name
        )
        if text == state.current_text:
            return
        _carry(state, state.current_text, text)
        was_best = state.best_version == state.version
        state.version += 1
        state.current_text = text
        self.run.write_skill(state.version, text)
        if was_best:
            state.best_version = state.version
            self.run.write_best_skill(text)
        self.events.emit(
            "message", text=f"the run's skill takes the new description: {version_name(state.version)}"
        )
