"""The target as activation sees it: the skill installed among the distractors and not named.

- A harness (`UnnamedAgent`): the skill and the distractors are installed where the harness
  discovers skills (`.claude/skills`, `.agents/skills`); the prompt is the query itself, so the
  harness decides alone whether to load the skill. A query (a trigger task) is a probe, cut at
  `benchmark.trigger_max_turns`; a benchmark task (the final test of `optimizer.target: both`)
  runs to its end with the skill loaded as the harness chooses.
- A chat model (`RoutingAgent`): a routing prompt lists the installed skills' names and
  descriptions and the model picks one or none (a schema with their names). For a query the pick
  is the answer; for a task, the task is then answered with the picked skill (or none).

Both keep the Agent contract: one task's failure is an `AgentResult(is_error=True)`.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from skillgrad.activation.description import description_of
from skillgrad.activation.distractors import Distractor, install_distractors
from skillgrad.activation.triggers import NONE, is_trigger_task
from skillgrad.backends.chat_agent import ChatAgent
from skillgrad.backends.interface import Agent
from skillgrad.backends.workspace import install_skill
from skillgrad.config import Config
from skillgrad.errors import BackendError, FatalBackendError, StructuredOutputError, UserError
from skillgrad.templates import render, templates_digest
from skillgrad.values import AgentResult, Message, Task, TraceStep, Usage

PROMPTS = "skillgrad.activation"


@runtime_checkable
class PromptHarness(Protocol):
    """A harness target that runs a given prompt in a prepared workspace (see
    `ClaudeCodeAgent.run_prompt`, `CodexAgent.run_prompt`). Never raises for one task's failure."""

    name: str
    model: str
    skills_dir: str

    def run_prompt(
        self, prompt: str, workspace: Path, skills: list[str], max_turns: int | None = None
    ) -> AgentResult: ...


class UnnamedAgent:
    """Agent: a harness with the skill among the distractors, the query as the whole prompt."""

    def __init__(
        self, harness: PromptHarness, skill_name: str, distractors: list[Distractor], probe_turns: int
    ) -> None:
        self.harness = harness
        self.skill_name = skill_name
        self.distractors = distractors
        self.probe_turns = probe_turns
        self.name = harness.name
        self.model = harness.model

    def _prepare(self, task: Task, skill: str, workspace: Path) -> str:
        """Install every skill, write the context file; the prompt."""
        workspace.mkdir(parents=True, exist_ok=True)
        install_distractors(workspace, self.harness.skills_dir, self.distractors)
        install_skill(workspace, skill, self.skill_name, self.harness.skills_dir)
        if is_trigger_task(task):
            return task.question
        note = ""
        if task.context:
            (workspace / "context.md").write_text(task.context, encoding="utf-8")
            note = render("skillgrad.backends", "claude_code_context_note")
        return render(PROMPTS, "unnamed_task", question=task.question, context_note=note)

    def run(self, task: Task, skill: str, workspace: Path) -> AgentResult:
        workspace = Path(workspace).resolve()
        try:
            prompt = self._prepare(task, skill, workspace)
        except OSError as exc:
            failed = f"could not prepare the workspace {workspace}: {exc}"
            return AgentResult("", is_error=True, error=failed, workspace=workspace)
        names = sorted([self.skill_name, *(d.name for d in self.distractors)])
        turns = self.probe_turns if is_trigger_task(task) else None
        return self.harness.run_prompt(prompt, workspace, names, turns)


class RoutingAgent:
    """Agent: a chat model routes the query to one installed skill or none."""

    def __init__(self, target: ChatAgent, skill_name: str, distractors: list[Distractor]) -> None:
        self.target = target
        self.skill_name = skill_name
        self.distractors = distractors
        self.name = target.name
        self.model = target.model

    def route(self, query: str, skill: str) -> tuple[str, Usage]:
        """(the pick: a skill's name or `none`, the call's usage). The listing is in an order drawn
        from the names alone (not alphabetical, not ours first: a small model favours one place),
        the same for every query and description, so a local model reuses the prompt's prefix and
        two descriptions are compared at the same place."""
        listing = [
            (self.skill_name, description_of(skill)),
            *((d.name, d.description) for d in self.distractors),
        ]
        listing.sort(key=lambda entry: hashlib.sha256(entry[0].encode("utf-8")).hexdigest())
        skills = "\n".join(f"- {name}: {description}" for name, description in listing)
        messages = [
            Message("system", render(PROMPTS, "routing_system", skills=skills)),
            Message("user", render(PROMPTS, "routing_user", query=query)),
        ]
        names = [name for name, _ in listing]
        schema: dict[str, Any] = {
            "type": "object",
            "properties": {"skill": {"type": "string", "enum": [*names, NONE]}},
            "required": ["skill"],
            "additionalProperties": False,
        }
        reply = self.target.chat.complete(messages, schema=schema, effort=self.target.effort, stage="rollout")
        return str((reply.data or {}).get("skill", NONE)), reply.usage

    def run(self, task: Task, skill: str, workspace: Path) -> AgentResult:
        try:
            pick, usage = self.route(task.question, skill)
        except FatalBackendError:
            raise  # not this task's failure (see errors.py)
        except (BackendError, StructuredOutputError) as exc:
            return AgentResult("", is_error=True, error=str(exc))
        if is_trigger_task(task):
            return AgentResult(answer=pick, usage=usage)
        texts = {d.name: d.text for d in self.distractors}
        chosen = skill if pick == self.skill_name else texts.get(pick, "")
        result = self.target.run(task, chosen, workspace)
        result.usage = usage + result.usage
        result.trace = [TraceStep("text", f"routed the request to: {pick}"), *result.trace]
        return result


def activation_agent(cfg: Config, target: Agent, distractors: list[Distractor]) -> Agent:
    """The run's target (as the backend made it) for activation: a harness unnamed among the
    distractors, a chat model as router."""
    if isinstance(target, ChatAgent):
        return RoutingAgent(target, cfg.skill.name, distractors)
    if isinstance(target, PromptHarness):
        return UnnamedAgent(target, cfg.skill.name, distractors, cfg.benchmark.trigger_max_turns)
    raise UserError(
        f"optimizer.target={cfg.optimizer.target}: the target backend {target.name!r} cannot run a "
        "prompt with the skill unnamed; use claude_code_exec, codex_exec or a chat backend"
    )


def activation_settings(cfg: Config, distractors: list[Distractor]) -> dict[str, Any]:
    """What shapes an activation run besides the skill and the task: part of the call cache's key."""
    prompts = [(PROMPTS, "routing_system"), (PROMPTS, "routing_user"), (PROMPTS, "unnamed_task")]
    return {
        "activation": {
            "distractors": [[d.name, d.fingerprint()] for d in distractors],
            "probe_turns": cfg.benchmark.trigger_max_turns,
            "templates": templates_digest(prompts),
        }
    }
