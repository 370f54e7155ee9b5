"""A chat model used as the target: one call, the skill as system prompt, the reply as answer."""

from __future__ import annotations

from pathlib import Path

from skillgrad.backends.interface import ChatModel
from skillgrad.errors import BackendError, FatalBackendError
from skillgrad.package.install import skill_prompt_text
from skillgrad.templates import render
from skillgrad.values import AgentResult, Effort, Message, Task


def task_prompt(task: Task) -> str:
    context = f"Context:\n{task.context}\n\n" if task.context else ""
    return render("skillgrad.backends", "chat_target_task", context_block=context, question=task.question)


class ChatAgent:
    """Agent protocol over a ChatModel. Never raises for one task's failure (see base.py)."""

    def __init__(self, chat: ChatModel, *, effort: Effort | None = None) -> None:
        self.chat = chat
        self.effort = effort
        self.name = chat.name
        self.model = chat.model

    def run(self, task: Task, skill: str, workspace: Path) -> AgentResult:
        text = skill_prompt_text(skill)  # a package flattened (see skillgrad.package.install)
        system = render("skillgrad.backends", "chat_target_system", skill=text.strip() or "(empty)")
        messages = [Message("system", system), Message("user", task_prompt(task))]
        try:
            reply = self.chat.complete(messages, effort=self.effort, stage="rollout")
        except FatalBackendError:
            raise  # not this task's failure: no call can succeed (see errors.py)
        except BackendError as exc:  # what its attempts cost is paid all the same
            return AgentResult(answer="", is_error=True, error=str(exc), usage=exc.paid)
        return AgentResult(answer=reply.text.strip(), usage=reply.usage)
