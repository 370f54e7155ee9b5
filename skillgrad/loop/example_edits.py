"""Example edits: when an analyst is offered them, and how skillgrad writes them (skillgrad/demos.py).

An analyst is offered example edits (`example_offer`) when the skill may hold examples and either
the step's expected answers share a form an example can show (loop/shapes.py: an option label, a
number, a yes/no word, a date format), or the skill holds examples already; the offer lists the ids
of the tasks it was shown. A step of mixed answers (housestyle's conventions) or of spans
(extractive QA, where hand-written examples lowered token F1) reads the prompt as before.

An analyst, or the form fix, names a task by id; `ExampleWriter` looks it up among the train tasks
only and writes its entry: from a rollout of the task in this step that passed with full marks
(bootstrapping: the target's own reply, which the scorer accepted, as DSPy's BootstrapFewShot
keeps), else from the task's expected answer. An id of a val or test task is refused with the
reason, like any edit that cannot apply: an example of a task the gate or the final test scores
would score itself.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from skillgrad.demos import Demo, demo_from_task, entry_task, render_entry
from skillgrad.errors import UserError
from skillgrad.loop.shapes import form_rule
from skillgrad.package.doc import skill_demos
from skillgrad.skilldoc import Edit
from skillgrad.values import Rollout, Task


@dataclass(frozen=True)
class ExampleOffer:
    """The example edits an analyst may propose: `held`, the tasks the skill's examples show;
    `tasks`, (id, how the prompt shows it) of the tasks it may name; at most `max_examples`."""

    max_examples: int
    held: tuple[str, ...]
    tasks: tuple[tuple[str, str], ...]

    @property
    def can_add(self) -> bool:
        return bool(self.tasks) and len(self.held) < self.max_examples


def example_offer(
    skill: str, shown: Sequence[Rollout], batch: Sequence[Rollout], max_examples: int
) -> ExampleOffer | None:
    """What an analyst shown `shown` (of the step's `batch`) is offered; None: no example edit."""
    held = tuple(d.task_id for d in skill_demos(skill))
    shared = form_rule([r.task.answers[0] for r in batch if r.task.answers]) is not None
    if max_examples == 0 or not (shared or held):
        return None
    tasks = tuple(
        (r.task.id, f"task {i}, {'passed' if r.score.passed else 'failed'}")
        for i, r in enumerate(shown, 1)
        if r.task.answers and r.task.id not in held
    )
    offer = ExampleOffer(max_examples, held, tasks)
    return offer if offer.can_add or held else None


class ExampleWriter:
    """`writer(edit)`: the example edit with its entry written, or why it cannot be (a string).

    `splits(name)`: the benchmark's tasks of a split; `rollouts`: the step's train rollouts;
    `example_chars`: the bound of one entry (skill.example_chars)."""

    def __init__(
        self, splits: Callable[[str], list[Task]], rollouts: Sequence[Rollout], example_chars: int
    ) -> None:
        self.splits = splits
        self.rollouts = rollouts
        self.example_chars = example_chars
        self._train: dict[str, Task] | None = None

    def train(self) -> dict[str, Task]:
        if self._train is None:
            self._train = {t.id: t for t in self.splits("train")}
        return self._train

    def __call__(self, edit: Edit) -> Edit | str:
        if edit.op == "remove_example":
            return edit
        task_id = entry_task(edit.content)
        task = self.train().get(task_id)
        if task is None:
            return self.not_train(task_id)
        demo = self.demo(task)
        return demo if isinstance(demo, str) else replace(edit, content=render_entry(demo))

    def demo(self, task: Task) -> Demo | str:
        """The task's demo: a reply of this step's that passed with full marks, else its expected
        answer; or why neither fits skill.example_chars."""
        passed = [
            r.result.answer
            for r in self.rollouts
            if r.task.id == task.id and r.score.passed and r.score.value >= 1.0 and not r.result.is_error
        ]
        tries: list[tuple[str | None, str]] = [(passed[0], "rollout")] if passed else []
        why = ""
        for answer, source in [*tries, (None, "expected")]:
            try:
                return demo_from_task(task, answer, source, max_chars=self.example_chars)
            except ValueError as exc:
                why = str(exc)
        return why

    def not_train(self, task_id: str) -> str:
        for split in ("val", "test"):
            with contextlib.suppress(UserError):  # a split that cannot load holds no such id either
                if any(t.id == task_id for t in self.splits(split)):
                    return f"task {task_id!r} is a {split} task: examples come from train tasks only"
        return f"no train task has id {task_id!r}"
