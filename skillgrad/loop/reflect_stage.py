"""The reflect stage as the trainer runs it: which minibatches go to the analysts, and the pool
that asks them side by side (bounded by the calls in flight of every stage together), each
reflection persisted and paid for; when selection drops every proposed edit, the re-ask
(`optimizer.reask_dropped`, `Reflection.reask`). The prompts and the reply's patch are `analyst_prompt`'s."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import cast

from skillgrad.backends.interface import ChatModel
from skillgrad.backends.reading import ReadingBoundError, ReadingBounds, ReadingChatModel
from skillgrad.config import Config
from skillgrad.demos import section_alone, without_section
from skillgrad.errors import BackendError, FatalBackendError, PromptTooLong, StructuredOutputError
from skillgrad.evidence.mode import reads_workspace
from skillgrad.evidence.reflection_workspace import ReflectionWorkspace, WorkspaceOpener, digest_record
from skillgrad.loop.accounting import Accounting
from skillgrad.loop.analyst_prompt import TRACE_HEADING, AnalystInputs, reflection_record, trace_heading
from skillgrad.loop.candidate import Candidates
from skillgrad.loop.event_bus import Events, StageProgress
from skillgrad.loop.example_edits import example_offer
from skillgrad.loop.patch_merge import Patch
from skillgrad.loop.rewrite import Analyst
from skillgrad.loop.selection import COPIES_TASK, Selection
from skillgrad.loop.stages import Roles, TrainingFailed
from skillgrad.loop.state import TrainState
from skillgrad.package.model import as_package
from skillgrad.run_folder import RunDir
from skillgrad.skilldoc import Edit
from skillgrad.traces.steps import TraceCaps
from skillgrad.values import Rollout, Task

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
        # Passed explicitly from the config: the analyst sees a harness's trace steps unless told not
        # to; an Agent object's steps (if it returns any) as a harness's
        custom = roles.agent_label is not None
        self.include_traces = cfg.model.trace_to_optimizer if custom else cfg.model.analyst_sees_traces()
        self.trace_heading = trace_heading(roles.trace_name) if roles.trace_name else TRACE_HEADING
        # optimizer.reflection: workspace -> each analyst reads its minibatch in a folder (evidence)
        self.opener: WorkspaceOpener | None = None
        self.readers: list[ReadingChatModel] = []
        if reads_workspace(cfg, self.chats[0]):
            self.readers = [cast(ReadingChatModel, chat) for chat in self.chats]
            bounds = ReadingBounds(cfg.optimizer.reflection_turns, cfg.optimizer.reflection_timeout_s)
            self.opener = WorkspaceOpener(run, bounds)

    def reflect(
        self, step: int, epoch: int | None, state: TrainState, rollouts: list[Rollout], lr: int
    ) -> list[Patch]:
        """One patch per reflection that answered. When none of them did, the step goes on
        without the analysts' edits (the form fix may still propose its own) if each of them
        replied without schema-valid JSON or had its prompt refused as too long with one task
        shown, and either an analyst of this run has answered before (the skill has grown since)
        or every reply opened the JSON object it did not finish: a reply cut short by one long
        prompt or run to its cap repeating itself, as the 1.5B's were at step 2 of
        disambiguation_qa and at step 1 of hyperbaton seed 4. Otherwise TrainingFailed: an
        optimizer that answers in prose from the first step, whose context holds no prompt of
        this run's, or that cannot be reached, would fail every later step too (`resume`
        continues the run)."""
        work = reflection_work(rollouts, self.cfg.train.minibatch_size, len(self.chats))
        outcomes = self._pool(step, state, lr, [(*item, False) for item in work], rollouts, epoch=epoch)
        patches = [o for o in outcomes if isinstance(o, Patch)]
        state.reflections_answered += len(patches)
        errors = [o for o in outcomes if isinstance(o, Exception)]
        if not work or patches:
            return patches
        unparsed = [e for e in errors if isinstance(e, StructuredOutputError)]
        too_long = [e for e in errors if isinstance(e, PromptTooLong)]
        cut = all(e.began_object for e in unparsed) and not too_long
        if len(unparsed) + len(too_long) < len(errors) or not (state.reflections_answered or cut):
            raise TrainingFailed(f"every reflection of step {step} failed; last error: {errors[-1]}")
        self.events.emit(
            "message",
            text=f"step {step}: every reflection failed, the step goes on without edits; "
            f"last error: {errors[-1]}",
        )
        return []

    def reask(
        self, step: int, state: TrainState, rollouts: list[Rollout], lr: int, patches: list[Patch]
    ) -> list[Patch]:
        """The analysts of `patches` that proposed edits, asked once more with the skill's rules
        shown as empty (marked `reask`): they write the rules these failures need from scratch
        instead of restating the skill's lines (the 1.5B analyst on housestyle replaced each line by
        itself, and did again when told why, at any temperature); a rule the skill already states
        is then dropped by selection, the others can apply. The examples section is shown as it is:
        told the skill held none, a re-asked analyst only added examples past the cap. A failed
        re-ask costs the step nothing more."""
        minibatches = {i: mb for i, mb, _ in reflection_work(rollouts, self.cfg.train.minibatch_size, 1)}
        work = [(p.minibatch, minibatches[p.minibatch], p.proposal, True) for p in patches if p.edits]
        self.events.emit(
            "message",
            text=f"step {step}: every proposed edit was dropped; asking {len(work)} analyst(s) afresh",
        )
        outcomes = self._pool(step, state, lr, work, rollouts, label="re-ask")
        patches = [o for o in outcomes if isinstance(o, Patch)]
        state.reflections_answered += len(patches)
        return patches

    def _pool(
        self,
        step: int,
        state: TrainState,
        lr: int,
        work: list[tuple[int, list[Rollout], int, bool]],
        batch: list[Rollout],
        epoch: int | None = None,
        label: str | None = None,
    ) -> list[Patch | Exception]:
        """Each item of `work` asked of its analyst, as one "reflect" stage of the progress events
        (`label`: a re-ask); `batch`: the step's rollouts, counted and contrasted in every prompt.
        A prompt the server refuses as longer than the optimizer's context is asked again with
        half the tasks shown, the failed first, down to one (`fewer_tasks`): the 1.5B's 4,096
        tokens did not hold salient_translation_error_detection seed 0's step-2 prompt (six long
        tasks and a skill with four examples of them)."""
        rejected = state.rejected_edits if self.cfg.optimizer.show_rejected else []
        skill = state.current_text
        progress = StageProgress(self.events, "reflect", step, epoch, len(work), label)

        def one(item: tuple[int, list[Rollout], int, bool]) -> Patch | Exception:
            index, minibatch, proposal, reask = item
            shown, name = minibatch, _name(index, proposal, reask)
            outcome = self._one(step, skill, rejected, lr, batch, *item)
            while isinstance(outcome, PromptTooLong) and len(shown) > 1:
                shown = fewer_tasks(shown)
                self.events.emit(
                    "message",
                    text=f"step {step}: reflection {name}: the prompt is past the optimizer's "
                    f"context; asked again with {len(shown)} of its {len(minibatch)} tasks",
                )
                outcome = self._one(step, skill, rejected, lr, batch, index, shown, proposal, reask)
            progress.task_done(name, None)
            return outcome

        with ThreadPoolExecutor(max_workers=self.cfg.train.concurrency) as pool:
            outcomes = list(pool.map(one, work))
        progress.end(
            None,
            len(outcomes),
            sum(1 for o in outcomes if isinstance(o, Exception)),
            edits=sum(len(o.edits) for o in outcomes if isinstance(o, Patch)),
        )
        return outcomes

    def _inputs(
        self, skill: str, minibatch: list[Rollout], rejected: list[Edit], lr: int, batch: list[Rollout]
    ) -> AnalystInputs:
        return AnalystInputs(
            skill,
            minibatch,
            rejected,
            max(lr, self.cfg.optimizer.max_proposed_edits),
            self.include_traces,
            self.caps,
            self.cfg.trace.prompt_chars,
            self.trace_heading,
            package_chars=self.cfg.skill.prompt_chars,
            budget=self.cfg.skill.max_chars,
            shape_example=self.cfg.optimizer.shape_example,
            batch=tuple(batch),
            census=self.cfg.optimizer.error_census,
            contrasts=self.cfg.optimizer.contrasts,
            form=self.cfg.optimizer.form_summary,
            examples=example_offer(skill, minibatch, batch, self.cfg.skill.max_examples),
        )

    def _analyst_for(
        self, step: int, name: str, proposal: int, inputs: AnalystInputs
    ) -> tuple[ChatModel, AnalystInputs, ReflectionWorkspace | None]:
        """The analyst's model and inputs: as they are, or in a fresh workspace whose files the
        inputs' trace views point into (optimizer.reflection: workspace)."""
        if self.opener is None:
            return self.chats[proposal], inputs, None
        reader, seen = self.readers[proposal], (inputs.skill, inputs.rollouts, inputs.rejected)
        workspace = self.opener.open(step, name, reader, *seen, include_traces=inputs.include_traces)
        return (
            workspace.chat,
            replace(inputs, rollouts=workspace.rollouts, locators=workspace.workspace_files.locators),
            workspace,
        )

    def _one(
        self,
        step: int,
        skill: str,
        rejected: list[Edit],
        lr: int,
        batch: list[Rollout],
        index: int,
        minibatch: list[Rollout],
        proposal: int,
        reask: bool,
    ) -> Patch | Exception:
        """One analyst call (a re-ask shows the skill's examples section alone); a failed one is
        recorded and returned (the others may still answer), except a refused key or quota, which
        stops the run."""
        name = _name(index, proposal, reask)
        record_path = self.run.reflection_path(step, name)
        failures = sum(1 for r in minibatch if not r.score.passed)
        with self.slots, self.accounting.reserved("optimizer", "reflect") as unit:
            inputs = self._inputs(section_alone(skill) if reask else skill, minibatch, rejected, lr, batch)
            chat, inputs, workspace = self._analyst_for(step, name, proposal, inputs)
            started = time.monotonic()
            try:
                patch, reply, messages = self.analyst(
                    chat, inputs, index, self.cfg.model.effort_for("optimizer"), proposal
                )
            except ReadingBoundError as bounded:  # paid; the step goes on without this analyst's edits
                unit.record(bounded.paid)
                extra = workspace.record(bounded.spent) if workspace else {}
                self.run.write_json(record_path, {"minibatch": index, "error": str(bounded), **extra})
                self.events.emit("message", text=f"step {step}: reflection {name}: {bounded}")
                return Patch(index, [], failures, proposal, reask)
            except FatalBackendError:
                raise  # what it paid is recorded on the way out (Accounting.reserved)
            except (StructuredOutputError, BackendError) as exc:
                unit.record(exc.paid)  # its attempts are paid all the same
                extra = workspace.record() if workspace else {}
                self.run.write_json(record_path, {"minibatch": index, "error": str(exc), **extra})
                return exc
            unit.record(reply.usage, reply.saved)
        patch = replace(patch, reask=reask)
        # what the analyst was sent, its guide included
        shown = workspace.chat.sent if workspace else messages
        record = reflection_record(index, minibatch, shown, reply, patch)
        record.update(workspace.record() if workspace else digest_record(reply, time.monotonic() - started))
        self.run.write_json(record_path, record)
        return patch


def fewer_tasks(rollouts: list[Rollout]) -> list[Rollout]:
    """Half of `rollouts` (at least one), the failed ones kept first, in their order."""
    kept = sorted(range(len(rollouts)), key=lambda i: (rollouts[i].score.passed, i))
    return [rollouts[i] for i in sorted(kept[: max(1, len(rollouts) // 2)])]


def _name(index: int, proposal: int, reask: bool) -> str:
    """A reflection's name: its record's file (reflections/<name>.json) and its progress events'."""
    return f"mb_{index:02d}" + (f"_p{proposal}" if proposal else "") + ("_reask" if reask else "")


def propose_and_select(
    reflection: Reflection,
    candidates: Candidates,
    state: TrainState,
    plan_step: tuple[int, int | None, list[Task]],
    train: list[Rollout],
    lr: int,
) -> tuple[Selection, int]:
    """The step's analysts asked and their edits selected (merged_patch.json). When every
    proposed edit was dropped, the analysts are asked once more (`optimizer.reask_dropped`,
    `Reflection.reask`) and selection runs over the proposals of both rounds. When still nothing
    is selected, or only rules while the gate has rejected rules against this skill and never an
    example, and the form fix has edits for an idle step (`first_examples`), selection runs again
    with them alone."""
    step, epoch, batch = plan_step
    patches = reflection.reflect(step, epoch, state, train, lr)
    failed = [r.result.answer for r in train if not r.score.passed]
    graded = {r.task.id: (r.result.answer, r.score.feedback) for r in train}
    chosen, max_chars = candidates.select(state, step, batch, patches, lr, failed, graded, train)
    if reflection.cfg.optimizer.reask_dropped and should_reask(state.current_text, patches, chosen):
        more = reflection.reask(step, state, train, lr, patches)
        if more:
            both = [*patches, *more]
            chosen, max_chars = candidates.select(state, step, batch, both, lr, failed, graded, train)
            patches = both
    if candidates.idle_fix(state, train, bool(chosen.selected)):  # the form fix's first examples
        chosen, max_chars = candidates.select(state, step, batch, patches, lr, failed, graded, train, True)
    state.task_text_copies += chosen.counts().get(COPIES_TASK, 0)  # once per step, final selection
    return chosen, max_chars


def should_reask(skill: str, patches: list[Patch], chosen: Selection) -> bool:
    """True when the analysts proposed edits and none was selected, on a single-file skill with
    rules (one with none, examples aside, would be shown as it was just shown), once per step."""
    if not without_section(skill).strip() or as_package(skill) is not None or any(p.reask for p in patches):
        return False
    return any(p.edits for p in patches) and not chosen.selected
