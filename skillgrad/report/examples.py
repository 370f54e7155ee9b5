"""The report's worked examples: which train tasks the best skill's examples came from.

An example's entry names its task and how skillgrad wrote it (skillgrad/demos.py); the run's own
train rollouts tell whether that task is one of its train tasks (an example of a hand-written
initial skill need not be)."""

from __future__ import annotations

from dataclasses import dataclass

from skillgrad.package.doc import skill_demos
from skillgrad.report.data import Run

SOURCES = {"expected": "its expected answer", "rollout": "a reply of the target that passed"}


@dataclass(frozen=True)
class ExampleRow:
    task_id: str
    written_from: str
    reply: str
    train: bool  # the task is among the run's train rollouts


@dataclass(frozen=True)
class ExamplesView:
    version: str
    rows: list[ExampleRow]


def examples_view(run: Run, best_version: str | None) -> ExamplesView | None:
    """The best skill's examples (None when it holds none)."""
    text = run.best_skill if run.best_skill is not None else run.skills.get(best_version or "")
    demos = skill_demos(text or "")
    if not demos:
        return None
    train = {t.task_id for rs in run.rollout_sets if rs.split == "train" for t in rs.tasks}
    rows = [
        ExampleRow(d.task_id, SOURCES.get(d.source, d.source), d.answer, d.task_id in train) for d in demos
    ]
    return ExamplesView(best_version or "best", rows)
