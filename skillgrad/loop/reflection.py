"""The reflect stage as the trainer runs it: which minibatches go to the analysts, and the pool
that asks them side by side (bounded by the calls in flight of every stage together), each
reflection persisted and paid for; when selection drops every proposed edit, the re-ask
(`optimizer.reask_dropped`, see `reask`). The prompts and the reply's patch are `reflect`'s."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from skillgrad.backends.base import ChatModel
from skillgrad.config import Config
from skillgrad.errors import BackendError, FatalBackendError, StructuredOutputError
from skillgrad.loop.accounting import Accounting
from skillgrad.loop.candidate import Candidates
from skillgrad.loop.events import Events
from skillgrad.loop.merge import Patch
from skillgrad.loop.reask import reask_followup, should_reask
from skillgrad.loop.reflect import TRACE_HEADING, AnalystInputs, reflection_record, trace_heading
from skillgrad.loop.rewrite import Analyst
from skillgrad.loop.selection import Selection
from skillgrad.loop.stages import Roles, TrainingFailed
from skillgrad.loop.state import TrainState
from skillgrad.run_folder import RunDir
from skillgrad.skill import Edit
from skillgrad.traces.steps import TraceCaps
from skillgrad.values import Message, Rollout, Task

Work = tuple[int, list[Rollout], int]  # (minibatch index, its rollouts, proposal number)


def reflection_work(rollouts: list[Rollout], size: int, proposals: int) -> list[Work]:
    """The step's rollouts in minibatches of `size`, each asked `proposals` times. A minibatch
    where every task passed carries no signal for a fix: it is skipped, and costs nothing."""
    minibatches = [rollouts[i : i + size] for i in range(0, len(rollouts), size)]
    failing = [(i, mb) for i, mb in enumerate(minibatches) if any(not r.score.passed for r in mb)]
    return [(i, mb, k) for i, mb in failing for k in range(proposals)]


class Reflection:
    def __init__(
        self,
        cfg: Config,
        roles: Roles,
        run: RunDir,
        events: Events,
        accounting: Accounting,
        analyst: Analyst,
        *,
        slots: threading.Semaphore,
        caps: TraceCaps,
    ) -> None:
        assert roles.optimizer is not None, "training needs an optimizer role"
        self.cfg = cfg
        self.chats: list[ChatModel] = [roles.optimizer, *roles.samplers][
            : cfg.optimizer.proposals_per_minibatch
        ]
        self.run = run
        self.events = events
        self.accounting = accounting
        self.analyst = analyst
        self.slots = slots
        self.caps = caps
        # Passed explicitly from the config: the analyst sees a harness's trace steps unless told not to.
        self.include_traces = cfg.model.analyst_sees_traces()
        self.trace_heading = trace_heading(roles.trace_name) if roles.trace_name else TRACE_HEADING

    def reflect(
        self, step: int, epoch: int | None, state: TrainState, rollouts: list[Rollout], lr: int
    ) -> list[Patch]:
        """One patch per reflection that answered; TrainingFailed when none of them did."""
        work = reflection_work(rollouts, self.cfg.train.minibatch_size, len(self.chats))
        self.events.emit("stage_start", stage="reflect", step=step, epoch=epoch, total=len(work))
        outcomes = self._pool(step, state, lr, [(*item, ()) for item in work])
        errors = [o for o in outcomes if isinstance(o, Exception)]
        if work and len(errors) == len(work):
            raise TrainingFailed(f"every reflection of step {step} failed; last error: {errors[-1]}")
        self.events.emit("stage_end", stage="reflect", step=step, mean_score=None)
        return [o for o in outcomes if isinstance(o, Patch)]

    def reask(
        self,
        step: int,
        state: TrainState,
        rollouts: list[Rollout],
        lr: int,
        patches: list[Patch],
        chosen: Selection,
    ) -> list[Patch]:
        """Each patch with edits asked for again, its analyst told why they were all dropped; the
        new patches (marked `reask`) of the re-asks that answered. A failed re-ask costs the step
        nothing more: the step goes on without it."""
        minibatches = {i: mb for i, mb, _ in reflection_work(rollouts, self.cfg.train.minibatch_size, 1)}
        opt = self.cfg.optimizer
        work = [
            (
                p.minibatch,
                minibatches[p.minibatch],
                p.proposal,
                reask_followup(p, chosen, opt.edit_mode, self._max_edits(lr)),
            )
            for p in patches
            if p.edits and p.minibatch in minibatches
        ]
        self.events.emit(
            "message",
            text=f"step {step}: every proposed edit was dropped; asking {len(work)} analyst(s) again",
        )
        outcomes = self._pool(step, state, lr, work)
        return [o for o in outcomes if isinstance(o, Patch)]

    def _pool(
        self,
        step: int,
        state: TrainState,
        lr: int,
        work: list[tuple[int, list[Rollout], int, tuple[Message, ...]]],
    ) -> list[Patch | Exception]:
        rejected = state.rejected_edits if self.cfg.optimizer.show_rejected else []
        with ThreadPoolExecutor(max_workers=self.cfg.train.concurrency) as pool:
            return list(pool.map(lambda item: self._one(step, state.current_text, rejected, lr, *item), work))

    def _max_edits(self, lr: int) -> int:
        return max(lr, self.cfg.optimizer.max_proposed_edits)

    def _inputs(self, skill: str, minibatch: list[Rollout], rejected: list[Edit], lr: int) -> AnalystInputs:
        return AnalystInputs(
            skill,
            minibatch,
            rejected,
            self._max_edits(lr),
            self.include_traces,
            self.caps,
            self.cfg.trace.prompt_chars,
            self.trace_heading,
            package_chars=self.cfg.skill.prompt_chars,
            budget=self.cfg.skill.max_chars,
        )

    def _one(
        self,
        step: int,
        skill: str,
        rejected: list[Edit],
        lr: int,
        index: int,
        minibatch: list[Rollout],
        proposal: int,
        followup: tuple[Message, ...],
    ) -> Patch | Exception:
        """One analyst call (a re-ask when `followup` continues an earlier one); a failed one is
        recorded and returned (the others may still answer), except a refused key or quota,
        which stops the run."""
        name = f"mb_{index:02d}" + (f"_p{proposal}" if proposal else "") + ("_reask" if followup else "")
        record_path = self.run.reflection_path(step, name)
        with self.slots:
            self.accounting.reserve()
            inputs = replace(self._inputs(skill, minibatch, rejected, lr), followup=followup)
            try:
                patch, reply, messages = self.analyst(
                    self.chats[proposal], inputs, index, self.cfg.model.effort_for("optimizer"), proposal
                )
            except FatalBackendError:
                self.accounting.release()
                raise
            except (StructuredOutputError, BackendError) as exc:
                self.accounting.release()
                self.run.write_json(record_path, {"minibatch": index, "error": str(exc)})
                return exc
            self.accounting.record("optimizer", "reflect", reply.usage, reply.saved)
        patch = replace(patch, reask=bool(followup))
        self.run.write_json(record_path, reflection_record(index, minibatch, messages, reply, patch))
        return patch


def propose_and_select(
    reflection: Reflection,
    candidates: Candidates,
    state: TrainState,
    plan_step: tuple[int, int | None, list[Task]],
    train: list[Rollout],
    lr: int,
) -> tuple[Selection, int]:
    """The step's analysts asked and their edits selected (merged_patch.json). When every
    proposed edit was dropped, the analysts are asked once more (`optimizer.reask_dropped`) and
    selection runs over the proposals of both rounds."""
    step, epoch, batch = plan_step
    patches = reflection.reflect(step, epoch, state, train, lr)
    failed = [r.result.answer for r in train if not r.score.passed]
    chosen, max_chars = candidates.select(state, step, batch, patches, lr, failed)
    if reflection.cfg.optimizer.reask_dropped and should_reask(patches, chosen):
        more = reflection.reask(step, state, train, lr, patches, chosen)
        if more:
            chosen, max_chars = candidates.select(state, step, batch, [*patches, *more], lr, failed)
    return chosen, max_chars
