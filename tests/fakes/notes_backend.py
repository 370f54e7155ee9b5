"""A backend that exists only for tests: an agent harness that writes its answer into the
workspace and reports each step as a trace. It implements `HarnessBackend` like a real one, so a
test can register it with one `BackendSpec` line and see the rest of skillgrad pick it up."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from skillgrad.config import Config
from skillgrad.values import AgentResult, Effort, Message, Reply, Role, Task, TraceStep, Usage

NAME = "notes_harness"


class RunState:
    """One per run: counts the sessions both roles started, so a test sees it is shared."""

    def __init__(self) -> None:
        self.sessions = 0


def availability(cfg: Config) -> tuple[bool, str]:
    return True, "writes notes"


def new_run_state() -> RunState:
    return RunState()


class NotesChat:
    name = NAME

    def __init__(self, cfg: Config, role: Role, state: RunState) -> None:
        self.model = cfg.model.model_for(role) or "notes-1"
        self.state = state

    def complete(
        self, messages: list[Message], *, schema: dict[str, Any] | None = None, effort: Effort | None = None,
        stage: str,
    ) -> Reply:  # fmt: skip
        self.state.sessions += 1
        return Reply(text=messages[-1].content, data={} if schema else None, usage=Usage(1, 1, 1, None))


class NotesAgent:
    name = NAME
    model = "notes-1"

    def __init__(self, state: RunState) -> None:
        self.state = state

    def run(self, task: Task, skill: str, workspace: Path) -> AgentResult:
        self.state.sessions += 1
        workspace.mkdir(parents=True, exist_ok=True)
        (workspace / "notes.md").write_text(f"{skill}\n{task.question}\n", encoding="utf-8")
        steps = [
            TraceStep("tool_call", "notes.md", tool="Write"),
            TraceStep("tool_result", "written"),
            TraceStep("text", task.answers[0] if task.answers else ""),
        ]
        answer = task.answers[0] if task.answers else ""
        return AgentResult(answer=answer, trace=steps, usage=Usage(10, 5, 1, None), workspace=workspace)


def create_chat(cfg: Config, role: Role, state: RunState | None = None) -> NotesChat:
    return NotesChat(cfg, role, state or RunState())


def create_agent(cfg: Config, state: RunState | None = None) -> NotesAgent:
    return NotesAgent(state or RunState())
