"""One reflection in a workspace, as the reflect stage runs it (`loop.reflect_stage` calls it when
`optimizer.reflection` is workspace): the folder written through the run folder (redacted), the
analyst's model bound to it (`WorkspaceChat`, a ChatModel whose `complete` is a bounded,
read-only session in the folder, its prompt the index plus the folder's guide), and what goes into
the reflection record: the tool calls, the files and line ranges they opened, turns and wall time.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillgrad.backends.reading import Investigation, ReadingBounds, ReadingChatModel
from skillgrad.evidence.opened import opened, read_ranges
from skillgrad.evidence.workspace_files import Redaction, WorkspaceFiles, build_workspace_files, redacted
from skillgrad.run_folder import RunDir
from skillgrad.skilldoc import Edit
from skillgrad.templates import render
from skillgrad.values import Effort, Message, Reply, Rollout


def guide(workspace_files: WorkspaceFiles, tools: str, turns: int) -> str:
    """The system prompt's part on the folder: its listing, the harness's tools, the turns."""
    return render("skillgrad.evidence", "guide", listing=workspace_files.listing, tools=tools, turns=turns)


def with_guide(messages: list[Message], text: str) -> list[Message]:
    """The messages with the workspace's guide appended to the system prompt (the analyst's
    instructions); the user prompt, the index, is unchanged."""
    if not any(m.role == "system" for m in messages):
        return [Message("system", text.strip()), *messages]
    return [Message(m.role, m.content + text) if m.role == "system" else m for m in messages]


class WorkspaceChat:
    """The analyst's ChatModel for one reflection: `complete` reads the folder, then answers."""

    def __init__(self, inner: ReadingChatModel, folder: Path, bounds: ReadingBounds, guide: str) -> None:
        self.inner = inner
        self.folder = folder
        self.bounds = bounds
        self.guide = guide
        self.name = inner.name
        self.model = inner.model
        self.sent: list[Message] = []  # the messages of the last call, guide included
        self.found: Investigation | None = None

    def complete(
        self,
        messages: list[Message],
        *,
        schema: dict[str, Any] | None = None,
        effort: Effort | None = None,
        stage: str,
    ) -> Reply:
        self.sent = with_guide(messages, self.guide)
        self.found = self.inner.investigate(
            self.sent, folder=self.folder, bounds=self.bounds, schema=schema, effort=effort, stage=stage
        )
        return self.found.reply


def session_record(found: Investigation | None, folder: Path) -> dict[str, Any]:
    """The record's account of the session: its tool calls, what they opened, turns, wall time."""
    if found is None:
        return {}
    records = opened(found.tool_uses, folder)
    return {
        "session": {
            "turns": found.turns,
            "sessions": found.sessions,
            "tool_calls": len(found.tool_uses),
            "wall_s": round(found.wall_s, 3),
            "usage": (found.reply.saved or found.reply.usage).to_json(),  # what it cost, paid now or not
        },
        "tool_calls": [use.to_json() for use in found.tool_uses],
        "opened": records,
        "read": read_ranges(records),
    }


def digest_record(reply: Reply, wall_s: float) -> dict[str, Any]:
    """The same account for an analyst that read only its prompt (one turn, no tool call)."""
    session: dict[str, Any] = {"turns": 1, "sessions": 1, "tool_calls": 0, "wall_s": round(wall_s, 3)}
    session["usage"] = (reply.saved or reply.usage).to_json()
    return {"reflection": "digest", "session": session}


@dataclass
class ReflectionWorkspace:
    """One reflection's workspace, written, and the analyst's model bound to it; `rollouts` are
    the minibatch redacted, as the folder holds them, for the prompt's trace views."""

    folder: Path
    name: str
    workspace_files: WorkspaceFiles
    chat: WorkspaceChat
    rollouts: list[Rollout]
    build_s: float  # writing the folder, before the call

    def record(self, found: Investigation | None = None) -> dict[str, Any]:
        """Fields of the reflection record (beside prompt, reply and edits)."""
        return {
            "reflection": "workspace",
            "workspace": self.name,
            "workspace_files": sorted(self.workspace_files.files),
            "workspace_build_s": round(self.build_s, 3),
            **session_record(found or self.chat.found, self.folder),
        }


class WorkspaceOpener:
    """Opens a fresh workspace per analyst call, under the step's reflections folder."""

    def __init__(self, run: RunDir, bounds: ReadingBounds) -> None:
        self.run = run
        self.bounds = bounds
        redactor = run.redactor
        self.redaction = Redaction(redactor.redact, redactor.redact_json)

    def open(
        self,
        step: int,
        name: str,
        chat: ReadingChatModel,
        skill: str,
        rollouts: list[Rollout],
        rejected: list[Edit],
        include_traces: bool,
    ) -> ReflectionWorkspace:
        started = time.monotonic()
        clean = [redacted(r, self.redaction) for r in rollouts]
        workspace_files = build_workspace_files(self.redaction.text(skill), clean, rejected, include_traces)
        folder = self.run.write_folder(self.run.reflection_workspace(step, name), workspace_files.files)
        text = guide(workspace_files, chat.reading_tools, self.bounds.turns)
        bound = WorkspaceChat(chat, folder, self.bounds, text)
        return ReflectionWorkspace(folder, name, workspace_files, bound, clean, time.monotonic() - started)
