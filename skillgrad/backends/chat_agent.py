"""A chat model used as the target: one call, the skill as system prompt, the reply as answer.

A skill's worked examples (its examples section, a package's examples.md) reach a chat target as
earlier turns of the conversation by default (`model.chat_examples: turns`): each example's task as
a user turn, its reply as the assistant's, before the task itself, the way DSPy sends its demos.
The task template's closing instruction ("Reply with the answer only.") is said once, in the task's
own turn, as DSPy's last turn alone carries its instructions: repeated on every example turn, the
1.5B answered most movie_recommendation test tasks with one label no example showed (29 of 32);
trained with it, movie_recommendation gained on each of 3 seeds (+0.083 on average), 23
benchmark-seeds +0.019, none significantly (docs/benchmarks.md).
With the 1.5B, the rule and three examples as turns scored +0.049 over text on average (14 pairs,
docs/benchmarks.md), four examples alone +0.16 to +0.25 (issue 36). `text` keeps them in the system
prompt as written. A section that is not skillgrad's own (hand-written in another shape) always
stays text: only ours parses back whole.
`chat_messages` is the one place both are built, so a trained skill can be deployed on a chat model
exactly as it was trained.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from skillgrad.backends.interface import ChatModel
from skillgrad.demos import EXAMPLES_FILE, section_is_ours
from skillgrad.errors import BackendError, FatalBackendError
from skillgrad.package.doc import skill_demos, without_demos
from skillgrad.package.install import main_file, skill_prompt_text
from skillgrad.package.model import SKILL_FILE, as_package
from skillgrad.templates import render
from skillgrad.values import AgentResult, Effort, Message, Task

ChatExamples = Literal["turns", "text"]
# How a chat target is shown a skill's examples, as the rollout cache keys it and bench rows record
# it: a new spelling whenever what is sent changes (rows and entries of an older form are redone).
EXAMPLES_SHOWN_AS: dict[ChatExamples, str] = {"text": "text", "turns": "turns, instruction once"}


def task_prompt(task: Task) -> str:
    context = f"Context:\n{task.context}\n\n" if task.context else ""
    return render("skillgrad.backends", "chat_target_task", context_block=context, question=task.question)


def example_turn(question: str) -> str:
    """An example's task (written as the target receives a task, `demos.task_as_seen`) as an
    earlier user turn: without the task template's closing instruction, which the last turn says."""
    instruction = render("skillgrad.backends", "chat_target_task", context_block="", question="").strip()
    return question.removesuffix(instruction).rstrip()


def _examples_are_ours(skill: str) -> bool:
    package = as_package(skill)
    return section_is_ours(main_file(skill) if package is None else package.files.get(EXAMPLES_FILE, ""))


def _without_pointer(skill: str) -> str:
    """A package's text without the SKILL.md line that points to the examples file it no longer has."""
    package = as_package(skill)
    if package is None:
        return skill
    pointer = render("skillgrad", "examples_pointer").strip()
    lines = [line for line in package.skill_md.splitlines() if line.strip() != pointer]
    return package.with_file(SKILL_FILE, "\n".join(lines).rstrip("\n") + "\n").encode()


def chat_messages(skill: str, task: Task, examples: ChatExamples = "turns") -> list[Message]:
    """The messages a chat target is sent for `task` with `skill` (a package flattened): the system
    prompt, the skill's worked examples as turns (`examples="turns"`, skillgrad's own section
    only, each task without the closing instruction), then the task."""
    demos = skill_demos(skill) if examples == "turns" and _examples_are_ours(skill) else []
    text = skill_prompt_text(_without_pointer(without_demos(skill)) if demos else skill)
    system = render("skillgrad.backends", "chat_target_system", skill=text.strip() or "(empty)")
    turns = [
        m for d in demos for m in (Message("user", example_turn(d.question)), Message("assistant", d.answer))
    ]
    return [Message("system", system), *turns, Message("user", task_prompt(task))]


class ChatAgent:
    """Agent protocol over a ChatModel. Never raises for one task's failure (see base.py)."""

    def __init__(
        self, chat: ChatModel, *, effort: Effort | None = None, examples: ChatExamples = "turns"
    ) -> None:
        self.chat = chat
        self.effort = effort
        self.examples = examples
        self.name = chat.name
        self.model = chat.model

    def run(self, task: Task, skill: str, workspace: Path) -> AgentResult:
        messages = chat_messages(skill, task, self.examples)
        try:
            reply = self.chat.complete(messages, effort=self.effort, stage="rollout")
        except FatalBackendError:
            raise  # not this task's failure: no call can succeed (see errors.py)
        except BackendError as exc:  # what its attempts cost is paid all the same
            return AgentResult(answer="", is_error=True, error=str(exc), usage=exc.paid)
        return AgentResult(answer=reply.text.strip(), usage=reply.usage)
