"""The trainer's validation runs: a skill's val (or test) items through the rollout runner, each
repeat in its own folder; the incumbent's per-item results; and what a validation leaves in the
state. A run whose agent failed (after the runner's retries) leaves no score: the state keeps its
scores in `val_results` and the failed repeats in `val_missing`, so a later validation of the same
skill runs those again and the incumbent is not validated anew for them."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

from skillgrad.config import Config
from skillgrad.errors import TrainingFailed
from skillgrad.loop.decision.gate import ValResults
from skillgrad.loop.decision.racing import Race, Validation, ValUnit, validate
from skillgrad.loop.shapes import answer_shape, shared_shape
from skillgrad.loop.stages import RolloutRunner
from skillgrad.loop.state import TrainState
from skillgrad.run_folder import RunDir
from skillgrad.skilldoc import SkillDoc
from skillgrad.values import Rollout, Task


class ValRuns:
    def __init__(
        self, cfg: Config, runner: RolloutRunner, run: RunDir, split: Callable[[str], list[Task]]
    ) -> None:
        self.cfg = cfg
        self.runner = runner
        self.run = run
        self.split = split

    @functools.cached_property
    def val_shape(self) -> str | None:
        """The shape the val split's expected answers share, or None."""
        return shared_shape([t.answers[0] for t in self.split("val") if t.answers])

    def units(
        self, prefix: Path, skill: str, stage: str, step: int, units: list[ValUnit], label: str | None = None
    ) -> list[Rollout]:
        """Rollouts of `units` under `prefix`; repeat r > 0 of a task under `<prefix>-r{r+1}`
        (`label`: the stage's, in its events)."""
        folders = [
            prefix if u.repeat == 0 else prefix.with_name(f"{prefix.name}-r{u.repeat + 1}") for u in units
        ]
        repeats = [u.repeat for u in units]
        tasks = [u.task for u in units]
        return self.runner.rollouts(tasks, skill, folders.__getitem__, stage, step, repeats, label=label)

    def val_units(
        self, step: int, skill: str, stage: str, units: list[ValUnit], split: str = "val"
    ) -> list[Rollout]:
        """Val rollouts under `rollouts/<split>`; repeat r > 0 of a task under `<split>-r{r+1}`
        (the incumbent's, under `val-incumbent`, labelled so in the events)."""
        label = "current skill" if split == "val-incumbent" else None
        return self.units(self.run.rollouts_dir(step, split), skill, stage, step, units, label)

    def candidate(
        self,
        state: TrainState,
        step: int,
        skill: str,
        race: Race | None,
        before_wave: Callable[[ValResults, bool], None] | None = None,
    ) -> Validation:
        """A candidate's validation (what is known of the skill reused, its missing runs run again),
        remembered in the state; a racing one split in waves labels each stage by its wave."""
        key = SkillDoc(skill).content_hash
        tasks, repeats, known = (
            self.split("val"),
            self.cfg.optimizer.val_repeats,
            state.val_results.get(key, {}),
        )
        todo = sum(max(0, repeats - len(known.get(t.id, []))) for t in tasks)
        waves = [0]
        ran: list[Rollout] = []

        def run_units(units: list[ValUnit]) -> list[Rollout]:
            waves[0] += 1
            split = race is not None and (waves[0] > 1 or len(units) < todo)  # not all in one wave
            label = f"wave {waves[0]}" if split else None
            ran.extend(self.units(self.run.rollouts_dir(step, "val"), skill, "validate", step, units, label))
            return ran[-len(units) :]

        val = validate(
            tasks,
            repeats,
            known,
            run_units,
            race,
            before_wave=before_wave,
            known_missing=state.val_missing.get(key),
        )
        remember(state, key, val, ran, self.val_shape)
        return val

    def full(self, state: TrainState, step: int, skill: str, stage: str, split: str = "val") -> Validation:
        """Every val item of `skill` not known yet, remembered in the state; TrainingFailed when
        every run of it failed."""
        key = SkillDoc(skill).content_hash
        ran: list[Rollout] = []

        def run_units(units: list[ValUnit]) -> list[Rollout]:
            ran.extend(self.val_units(step, skill, stage, units, split))
            return ran[-len(units) :]

        known, missing = state.val_results.get(key, {}), state.val_missing.get(key)
        val = validate(
            self.split("val"), self.cfg.optimizer.val_repeats, known, run_units, known_missing=missing
        )
        if ran and all(r.result.is_error for r in ran):
            raise TrainingFailed(f"every {stage} task failed; first error: {ran[0].result.error}")
        remember(state, key, val, ran, self.val_shape)
        return val

    def incumbent(self, state: TrainState) -> ValResults:
        """The incumbent's per-item results: its failed runs count as run (they are left out of its
        comparisons); a run resumed from an older state validates what is not known anew."""
        key = SkillDoc(state.current_text).content_hash
        results, missing = state.val_results.get(key, {}), state.val_missing.get(key, {})
        repeats = self.cfg.optimizer.val_repeats
        tasks = self.split("val")
        if any(len(results.get(t.id, [])) + len(missing.get(t.id, [])) < repeats for t in tasks):
            results = self.full(state, state.step, state.current_text, "validate", "val-incumbent").results
        return results


def val_forms(state: TrainState, text: str) -> dict[str, list[bool]]:
    """Whether each recorded val answer of the skill `text` held the val split's shared form
    (`remember`); empty where none was recorded."""
    return state.val_forms.get(SkillDoc(text).content_hash, {})


def remember(state: TrainState, key: str, val: Validation, ran: list[Rollout], shape: str | None) -> None:
    """What `val` leaves in the state for the skill whose content hash is `key`; with the val
    answers' shared `shape`, whether each answer of `ran` that has an outcome held it."""
    state.val_results[key] = val.results
    if val.missing:
        state.val_missing[key] = val.missing
    else:
        state.val_missing.pop(key, None)
    if shape is not None:
        forms = state.val_forms.setdefault(key, {})
        for rollout in ran:
            if not rollout.result.is_error:
                forms.setdefault(rollout.task.id, []).append(answer_shape(rollout.result.answer) == shape)
