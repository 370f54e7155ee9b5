"""The form fix: skillgrad's own proposal when a step shows a form problem (optimizer.form_fix).

A weak analyst rarely writes the rule that "expected '(A)'; got '(B) 12/26/1951'" x 6 states, and
more rarely asks for worked examples; a hand-written rule with three worked train examples is what
lifted the 1.5B on bbh date_understanding from 0.000 to 0.250 (issue 36). When the step's answers
show that their form is what fails them (`shapes.FormReport.is_problem`: every expected answer
shares a form a rule can state, no answer out of that form passed, most failed answers are out of
it), the form fix proposes that rule and examples of the step's own train tasks, next to the
analysts' proposals. They go through the same selection, learning rate and validation gate as any
edit, so a fix that does not help is rejected like one; they rank first (they are backed by every
failure of the step), and the copy guards do not apply to them: the rule is skillgrad's template,
the examples are written from train tasks by `ExampleWriter`.

Where the train answers share no form, there is no rule to add and no form problem to find; a
skill holding no example then gets worked examples of a step that failed a task and selected no
other edit, or whose rules would follow rules the gate rejected, alone (`first_examples`).

At a later step, with the examples at their cap and the answers in the form, the target's wrong
answers may still lean on one label, often the one the examples show most: `rebalance` swaps one
example of that label for a task of the label shown least, and the gate judges the swap.

    examples  the rule, up to skill.max_examples worked examples, the swap, and the first
              examples where the train answers share no form (the default)
    rule      the rule alone
    none      nothing: only the analysts propose
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from skillgrad.demos import EXAMPLE_OPS
from skillgrad.loop.patch_merge import Patch
from skillgrad.loop.shapes import form_report, form_rule, named_answer
from skillgrad.package.doc import skill_demos
from skillgrad.package.install import skill_prompt_text
from skillgrad.skilldoc import END_ANCHOR, Edit, normalize_text
from skillgrad.values import Rollout, Task

FORM_FIX_MINIBATCH = -1  # the form fix's patch, among the analysts' minibatch patches


class FormFix(Protocol):
    def propose(
        self,
        skill: str,
        batch: Sequence[Rollout],
        max_examples: int,
        train: Sequence[Task] = (),
        idle: bool = False,
    ) -> Patch | None:
        """The fix's edits for this step (None: the step shows no form problem and no example
        to swap, or nothing is left to add); `train`: every train task, for examples of labels
        the step lacks; `idle`: the step's rules are not worth a candidate (none was selected, or
        the gate rejected rules and no example: `first_examples`). Pure: never raises for a
        step's content."""
        ...


def task_label(task: Task) -> str:
    """A task's first expected answer, normalized (`skilldoc.normalize_text`)."""
    return normalize_text(task.answers[0])


def wrong_labels(batch: Sequence[Rollout], labels: set[str]) -> Counter[str]:
    """How often the step's answers give another of `labels` (normalized) than their task's: "(C)
    Ambiguous" to a task of (A) counts for (C)."""
    wrong: Counter[str] = Counter()
    for r in batch:
        given = named_answer(r.result.answer, labels)
        if r.task.answers and given is not None and given != task_label(r.task):
            wrong[given] += 1
    return wrong


def label_counts(held_answers: Sequence[str], wrong: Counter[str]) -> tuple[Counter[str], Counter[str]]:
    """(each label's examples held, each label shown: held and given wrongly), normalized."""
    held = Counter(normalize_text(answer) for answer in held_answers)
    return held, held + wrong


def pick_examples(
    batch: Sequence[Rollout],
    room: int,
    taken: set[str],
    held_answers: Sequence[str] = (),
    train: Sequence[Task] = (),
) -> list[str]:
    """Up to `room` task ids for worked examples, of the step's tasks and then the other `train`
    tasks, each time of the expected answer shown least, so the labels stay balanced: a step of
    answers (C) (C) (C) (B) (B) (B) gives (C) (B) (C) (B), not (B) (C) (C) (C), after which the
    1.5B answered (C) to 17 of 32 disambiguation_qa test tasks. Shown are the examples held
    (`held_answers`) and picked, and each answer of the step that gives another expected answer
    than its task's: the target's own bias counts as shown, so the examples pull against it (the
    1.5B answered "(C) Ambiguous" to 30 of 32 disambiguation_qa tasks; four examples (B) (C) (C)
    (A) kept it at (B) or (C) on every test task, (B) (B) (A) (A) had it answer 22 right). A label
    the step lacks is drawn from the rest of train. No label is given more examples than an even
    share of the examples held and picked (3 labels, 4 examples: 2 at most) while another label is
    left: the 1.5B answers the examples' majority label, (B) to 30 of 32 disambiguation_qa tasks
    after examples (B) (B) (B) (A), which pulling against its "(C) Ambiguous" had picked. Between
    equally shown answers: a task the target passed with full marks first (its entry is its own
    reply), then the step's order, then train's."""
    in_step = [r.task for r in batch if r.task.answers]
    passed = {r.task.id for r in batch if r.score.passed and r.score.value >= 1.0}
    step_ids = {t.id for t in in_step}
    pool = [
        *sorted((t for t in in_step if t.id not in taken), key=lambda t: t.id not in passed),
        *(t for t in train if t.answers and t.id not in taken and t.id not in step_ids),
    ]
    labels = {task_label(t) for t in [*in_step, *train] if t.answers}
    held, shown = label_counts(held_answers, wrong_labels(batch, labels))
    cap = -(-(len(held_answers) + room) // max(1, len(labels)))  # as even as the labels allow
    picked: list[str] = []
    while pool and len(picked) < room:
        under = [t for t in pool if held[task_label(t)] < cap] or pool  # else: fill the room anyway
        task = min(under, key=lambda t: shown[task_label(t)])  # first of the least
        pool.remove(task)
        picked.append(task.id)
        shown[task_label(task)] += 1
        held[task_label(task)] += 1
    return picked


def rebalance(skill: str, batch: Sequence[Rollout], max_examples: int) -> Patch | None:
    """With the examples at their cap and the step's answers in the expected form: where the target
    gave one wrong label on two tasks or more and the examples show that label, the last such
    example replaced by a task of the step whose label is shown least (the examples held and the
    wrong answers counted, as `pick_examples` counts them), a failed one first. The 1.5B answers
    the examples' majority label: (B) to 30 of 32 disambiguation_qa tasks after examples (B) (B)
    (B) (A). One example a step; the gate judges it like any edit. None: nothing to swap."""
    held = skill_demos(skill)
    expected = [r.task.answers[0] for r in batch if r.task.answers]
    if not held or len(held) < max_examples or form_rule(expected) is None:
        return None
    wrong = wrong_labels(batch, {normalize_text(a) for a in expected})
    label, count = wrong.most_common(1)[0] if wrong else ("", 0)
    of_label = [d for d in held if normalize_text(d.answer) == label]
    taken = {d.task_id for d in held}
    pool = [r for r in batch if r.task.answers and r.task.id not in taken and task_label(r.task) != label]
    if count < 2 or not of_label or not pool:
        return None
    _, shown = label_counts([d.answer for d in held], wrong)
    pick = min(pool, key=lambda r: (shown[task_label(r.task)], r.score.passed))  # first of the least
    name = of_label[-1].answer.strip()  # as the skill shows it, not normalized
    why = (
        f"form fix: the target answered {name} wrongly on {count} of {len(batch)} tasks of the step, "
        f"and {len(of_label)} of the {len(held)} examples show {name}"
    )
    edit = Edit("replace_example", of_label[-1].task_id, pick.task.id, why)
    return Patch(FORM_FIX_MINIBATCH, [edit], count)


def first_examples(
    skill: str, batch: Sequence[Rollout], max_examples: int, train: Sequence[Task] = ()
) -> Patch | None:
    """Where the train answers share no form a rule can state (dyck_languages' closing brackets,
    free-text facts, spans; ruin_names seed 0, whose train mixes option labels with two names), no
    form problem is ever found, so nothing but an analyst that asks for them puts worked examples
    in the skill, and the 1.5B's analyst seldom does (dyck_languages: two rules a step, no
    example; yet three worked examples lift the 1.5B from 0.000 to 0.125 there, bench/headroom.py).
    With a skill holding no example, on a step that failed a task and selected no other edit, or
    whose rules would follow rules the gate rejected against this skill while it never saw an
    example (dyck_languages seed 2: one rule rejected at step 1, three new rules rejected at step
    2, no example ever tried): worked examples of the step's tasks up to the cap
    (`pick_examples`), which the gate judges like any edit. Alone, the analysts' edits set aside:
    a candidate is kept or dropped whole, and on extractive QA worked examples lowered token F1
    (issue 36), so examples that do not help would take the rules down with them. None otherwise."""
    failed = sum(1 for r in batch if not r.score.passed)
    if max_examples <= 0 or not failed or skill_demos(skill):
        return None
    tasks = list(train) or [r.task for r in batch]
    if form_rule([t.answers[0] for t in tasks if t.answers]) is not None:
        return None
    ids = pick_examples(batch, max_examples, set(), (), train)
    why = (
        f"form fix: {failed} of {len(batch)} tasks of the step failed, the train answers share no "
        "form a rule can state, and the skill shows no worked example"
    )
    return Patch(FORM_FIX_MINIBATCH, [Edit("add_example", "", i, why) for i in ids], failed) if ids else None


def examples_untried(rejected: Sequence[Edit]) -> bool:
    """Whether the gate has rejected edits against this skill (`TrainState.rejected_edits`) and
    none of them was a worked example: rules failed, examples were never judged."""
    return bool(rejected) and not any(edit.op in EXAMPLE_OPS for edit in rejected)


@dataclass(frozen=True)
class RuleAndExamples:
    """The form rule, and with `examples` worked examples up to the cap."""

    examples: bool = True

    def propose(
        self,
        skill: str,
        batch: Sequence[Rollout],
        max_examples: int,
        train: Sequence[Task] = (),
        idle: bool = False,
    ) -> Patch | None:
        report = form_report(batch)
        if report is None or not report.is_problem():
            if not self.examples:
                return None
            if idle:  # rebalance needs examples held, first_examples none
                return first_examples(skill, batch, max_examples, train)
            return rebalance(skill, batch, max_examples)
        why = (
            f"form fix: {report.off_failed} of {report.total} answers of the step failed and were "
            f"not {report.expected_shape}"
        )
        edits = []
        if normalize_text(report.rule) not in normalize_text(skill_prompt_text(skill)):
            edits.append(Edit("add", END_ANCHOR, report.rule, why))
        if self.examples:
            held = skill_demos(skill)
            taken = {d.task_id for d in held}
            answers = [d.answer for d in held]
            ids = pick_examples(batch, max_examples - len(taken), taken, answers, train)
            edits += [Edit("add_example", "", task_id, why) for task_id in ids]
        return Patch(FORM_FIX_MINIBATCH, edits, report.failed) if edits else None


class NoFix:
    def propose(
        self,
        skill: str,
        batch: Sequence[Rollout],
        max_examples: int,
        train: Sequence[Task] = (),
        idle: bool = False,
    ) -> Patch | None:
        return None


FORM_FIXES: dict[str, FormFix] = {
    "examples": RuleAndExamples(examples=True),
    "rule": RuleAndExamples(examples=False),
    "none": NoFix(),
}
