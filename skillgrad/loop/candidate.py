"""From a step's patches to the candidate skill: merge, rank, select what applies (dropping
edits copied from the prompt or from a task's text; writing example edits from the train tasks
they name), apply, and check the result before it may cost a validation run. The form fix's
patch (optimizer.form_fix) joins the analysts' here. Writes merged_patch.json, edit_report.json
and candidate_skill."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from skillgrad.config import OptimizerConfig, SkillConfig
from skillgrad.loop.analyst_prompt import PROMPTS
from skillgrad.loop.checks import CandidateChecks
from skillgrad.loop.event_bus import Events
from skillgrad.loop.example_edits import ExampleWriter
from skillgrad.loop.formfix import examples_untried
from skillgrad.loop.patch_merge import Patch
from skillgrad.loop.promptcopy import PromptCopyGuard, template_texts
from skillgrad.loop.selection import Selection, WriteExample, no_examples, select_valid
from skillgrad.loop.state import TrainState
from skillgrad.loop.strategies import Strategies
from skillgrad.loop.taskcopy import Copy, TaskCopyGuard, TaskIndex
from skillgrad.package.doc import PackageDoc, char_limit, open_skill, skill_demos, without_demos
from skillgrad.run_folder import RunDir
from skillgrad.skilldoc import Edit, EditOutcome, SkillDoc
from skillgrad.templates import render
from skillgrad.values import Rollout, Task


def prompt_copy_guard() -> PromptCopyGuard:
    """The filter of edits copied from the analyst's prompt: every template, the example edit."""
    templates = [*template_texts(), *template_texts("skillgrad.package")]
    return PromptCopyGuard(templates, example=render(PROMPTS, "analyst_example"))


class Candidates:
    def __init__(
        self,
        opt: OptimizerConfig,
        skill: SkillConfig,
        run: RunDir,
        events: Events,
        strategies: Strategies,
        splits: Callable[[str], list[Task]] | None = None,
        initial_skill: str = "",
    ) -> None:
        """`opt`, `skill`: the two config sections it reads; `strategies`: how patches merge and
        rank, and the form fix (skillgrad's own edits for a step whose answers have the wrong
        form); `splits(name)`: the benchmark's tasks of a split: every train task, for what only
        one task has and for the examples, val and test to refuse (default: each step's batch is
        all); `initial_skill`: a hand-written skill may hold more examples than
        skill.max_examples."""
        self.opt, self.skill = opt, skill
        self.splits = splits
        self._index: TaskIndex | None = None
        self.run = run
        self.events = events
        self.merger = strategies.merger
        self.ranker = strategies.ranker
        self.form_fix = strategies.form_fix
        self.echo = prompt_copy_guard()
        self.max_examples = max(skill.max_examples, len(skill_demos(initial_skill)))
        self.checks = CandidateChecks(
            skill.max_chars, skill.self_test_timeout_s, max_examples=self.max_examples
        )

    def task_copies(
        self, batch: list[Task], skill: str, graded: Mapping[str, tuple[str, str]]
    ) -> Callable[[Edit], Copy | None]:
        """The copy-of-task-text guard over the tasks the analysts were shown (off when allowed);
        `graded`: each task's answer and feedback."""
        opt = self.opt
        if opt.allow_task_text:
            return lambda _edit: None
        if self._index is None and self.splits is not None:
            self._index = TaskIndex(self.splits("train"), opt.task_phrase_words)
        index = self._index or TaskIndex(batch, opt.task_phrase_words)
        # the examples hold task text by design: what they say is no licence for a rule to say it
        rest = without_demos(skill)
        return TaskCopyGuard(batch, opt.task_text_ngram, index=index, graded=graded, skill=rest)

    def example_writer(self, batch: list[Task], rollouts: Sequence[Rollout]) -> WriteExample:
        """Example edits written from train tasks (this step's rollouts for bootstrapping)."""
        if self.skill.max_examples == 0:
            return no_examples
        splits = self.splits or (lambda split: batch if split == "train" else [])
        return ExampleWriter(splits, rollouts, self.skill.example_chars)

    def _train(self) -> Sequence[Task]:
        return self.splits("train") if self.splits else ()

    def idle_fix(self, state: TrainState, rollouts: Sequence[Rollout], selected: bool) -> bool:
        """Whether the step is selected again with the form fix's first examples alone
        (`select(..., idle=True)`): the form fix has edits for an idle step only, and the step's
        selection kept no edit (`selected` False) or kept rules while the gate has rejected rules
        against this skill and never an example (`examples_untried`)."""
        skill, cap, train = state.current_text, self.skill.max_examples, self._train()
        if self.form_fix.propose(skill, rollouts, cap, train) is not None:
            return False  # its edits were in the selection already
        if self.form_fix.propose(skill, rollouts, cap, train, idle=True) is None:
            return False
        return not selected or examples_untried(state.rejected_edits)

    def select(
        self,
        state: TrainState,
        step: int,
        batch: list[Task],
        patches: list[Patch],
        lr: int,
        failed_answers: list[str] | None = None,
        graded: Mapping[str, tuple[str, str]] | None = None,
        rollouts: Sequence[Rollout] = (),
        idle: bool = False,
    ) -> tuple[Selection, int]:
        """Merge, rank and select the step's edits (merged_patch.json); also the per-edit limit.
        An edit that restates one of the step's `failed_answers` counts as copied from the prompt;
        `graded` (task id -> answer, feedback) lets an edit restate what the grader says;
        `rollouts`: the step's train rollouts (the form fix reads them; examples bootstrap from them);
        `idle`: the form fix's first examples go alone, the analysts' edits set aside (`idle_fix`).
        A step may select more than once (a re-ask): the caller counts the final selection's drops."""
        fix = self.form_fix.propose(
            state.current_text, rollouts, self.skill.max_examples, self._train(), idle
        )
        own = {e.key() for e in fix.edits} if fix else set()
        patches = [*patches, *([fix] if fix else [])]
        patches = [replace(p, edits=[self.echo.own_rationale(e) for e in p.edits]) for p in patches]
        ranked = self.ranker.rank(self.merger.merge(patches))
        budget = self.skill.max_chars
        max_chars = char_limit(self.opt.max_skill_chars, budget, state.current_text)
        copied = self.echo.with_failed_answers(failed_answers or [])
        copies_task = self.task_copies(batch, state.current_text, graded or {})
        chosen = select_valid(
            ranked,
            state.current_text,
            lr,
            rejected=state.rejected_edits,
            copied=lambda edit: edit.key() not in own and copied(edit),  # the fix's rule is skillgrad's
            max_chars=max_chars,
            budget=budget,
            copies_task=lambda edit: None if edit.key() in own else copies_task(edit),
            write_example=self.example_writer(batch, rollouts),
            max_examples=self.max_examples,
            aside=lambda edit: idle and edit.key() not in own,
        )
        self.run.write_merged_patch(
            step,
            {
                "step": step,
                "learning_rate": lr,
                "proposed": sum(len(p.edits) for p in patches),
                "form_fix": [e.to_json() for e in fix.edits] if fix else [],
                "reasked": sum(1 for p in patches if p.reask),
                "merged": len(ranked),
                "dropped_counts": chosen.counts(),
                "selected": [m.to_json() for m in chosen.selected],
                "dropped": [d.to_json() for d in chosen.dropped],
            },
        )
        return chosen, max_chars

    def build(
        self, state: TrainState, step: int, chosen: Selection, max_chars: int
    ) -> tuple[SkillDoc | PackageDoc, list[EditOutcome], str | None]:
        """The selected edits applied (edit_report.json, candidate_skill), and why the candidate
        cannot be validated (a failed script check, the budget), or None."""
        current = open_skill(state.current_text, self.skill.max_chars)
        candidate, outcomes = current.apply([m.edit for m in chosen.selected], max_chars)
        self.run.write_edit_report(step, [o.to_json() for o in outcomes])
        self.run.write_candidate(step, candidate.text)
        blocked = None if candidate.text == state.current_text else self.checks.problem(candidate.text)
        if blocked:
            self.events.emit("message", text=f"step {step}: candidate skipped: {blocked}")
        return candidate, outcomes, blocked
