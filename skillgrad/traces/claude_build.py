"""The record-by-record state of the Claude Code parser (see claude.py for the forms it reads).

Subagent steps are attributed through whichever link the CLI wrote: inline `isSidechain` lines
(1.0), stream-json `parent_tool_use_id`, 2.1 `agent_progress` records, or a separate
`agent-*.jsonl` file named by the Task result's `toolUseResult.agentId` (or its `agentId:` line). A
file that is one subagent's own, read alone, is that subagent's session: its steps are the main
thread's. Messages the user queued while the agent worked (`queue-operation`) become follow-ups
where the agent first could read them: before its next message.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from skillgrad.text import clean_text
from skillgrad.traces.claude_hooks import add_hook_steps, read_hook_attachment, read_hook_record
from skillgrad.traces.claude_turns import MessageQueue, TurnEvidence, content_text, flag
from skillgrad.traces.steps import HOOK
from skillgrad.traces.summaries import summarize_tool_input
from skillgrad.traces.user_turns import (
    REJECTION_PREFIX,
    is_hook_stop,
    rejection_step,
    starts_turn,
    user_step,
)
from skillgrad.values import TraceStep

_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.DOTALL)
_AGENT_LINE = re.compile(r"\bagentId: ([\w-]+)")
_TASK_TOOLS = {"Task", "Agent"}
ROOT_PROMPT = object()  # the prompt that started an inline sidechain: its Task call shows it


def tool_result_text(content: Any) -> str:
    """Text of a tool_result's content: a string, or the text parts of a list of blocks."""
    if content is None:
        return ""
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
            elif isinstance(block, dict) and block.get("type"):
                parts.append(f"[{block['type']}]")  # images, documents: say they were there
        text = "\n".join(parts)
    else:
        text = json.dumps(content, ensure_ascii=False)
    if "<system-reminder>" in text:
        text = _REMINDER.sub("\n", text)
    return text.strip()  # TraceStep replaces lone surrogates


def _agent_label(tool_input: Any) -> str:
    args = tool_input if isinstance(tool_input, dict) else {}
    kind = str(args.get("subagent_type") or "agent")
    description = " ".join(str(args.get("description") or "").split())[:40]
    return f"{kind} ({description})" if description else kind


@dataclass
class Run:
    """One run's state: its steps, the answer so far, and what pairs results and subagents."""

    steps: list[TraceStep] = field(default_factory=list)
    last_main_text: str | None = None
    result: dict[str, Any] | None = None
    session_id: str | None = None
    started: set[str | None] = field(default_factory=set)  # agents that answered: later user text is a turn
    tool_names: dict[str, str] = field(default_factory=dict)
    open_calls: dict[str, tuple[str, str | None]] = field(default_factory=dict)  # id -> (tool, agent)
    tasks: dict[str, str] = field(default_factory=dict)  # Task call id -> subagent label
    task_prompts: dict[str, str] = field(default_factory=dict)  # unanswered Task call id -> prompt
    sidechain: dict[str, str] = field(default_factory=dict)  # 1.0 sidechain uuid -> label
    agent_tasks: dict[str, str] = field(default_factory=dict)  # agentId -> Task call id
    turns: TurnEvidence = field(default_factory=TurnEvidence)
    queue: MessageQueue = field(default_factory=MessageQueue)

    def main_open_calls(self) -> list[str]:
        return [name for name, agent in self.open_calls.values() if agent is None]


class Builder:
    """Accumulates steps from records, run by run."""

    def __init__(self, subagent_steps: dict[str, list[TraceStep]] | None = None) -> None:
        self.run = Run()
        self.runs = 1
        self.subagent_steps = dict(subagent_steps or {})  # agentId -> steps of its own file
        self.lone: bool | None = None  # decided at the first message: a subagent's own file?
        self.agent_id: str | None = None  # the first agentId a message names (a subagent file's own)

    # -- routing ------------------------------------------------------------------------------
    def add(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if "parentUuid" in event:
            self.run.turns.transcript = True
        if kind in ("assistant", "user"):
            self._maybe_new_session(event)
            if self.lone is None:
                self.lone = flag(event.get("isSidechain")) and not event.get("parent_tool_use_id")
            if self.agent_id is None and event.get("agentId"):
                self.agent_id = str(event["agentId"])
            agent = self._agent_of(event)
            if agent is not ROOT_PROMPT:
                self._message(event, agent if isinstance(agent, str) else None)
        elif kind == "progress":
            self._progress(event)
        elif kind == "system":
            self._system(event)
        elif kind == "result":
            self.run.result = event  # the last one of a run wins: a resumed session has several
        elif kind == "queue-operation":
            self.run.queue.operation(event)
        elif kind == "attachment":
            self._hook(event)

    def _new_run(self) -> None:
        transcript = self.run.turns.transcript
        self.run = Run()
        self.run.turns.transcript = transcript
        self.runs += 1

    def _system(self, event: dict[str, Any]) -> None:
        subtype = event.get("subtype")
        if subtype == "init" and (self.run.steps or self.run.result is not None):
            self._new_run()  # a second `claude -p` run appended to the same file
        elif subtype == "local_command" and None in self.run.started:
            step = user_step(str(event.get("content") or ""))  # 2.1: slash commands as system records
            if step is not None:
                self.run.steps.append(step)
        else:
            self._hook(event)
        self.run.turns.system(subtype)

    def _hook(self, event: dict[str, Any]) -> None:
        """A record about a hook: its error or block, where it happened (claude_hooks.py)."""
        run = self.run
        agent = self._agent_of(event) if flag(event.get("isSidechain")) else None
        label = agent if isinstance(agent, str) else None
        if event.get("type") == "attachment":
            outcome = read_hook_attachment(event.get("attachment"), label)
        else:
            last = run.steps[-1] if run.steps else None
            recent_error = last is not None and last.tool == HOOK and last.kind == "text"
            outcome = read_hook_record(event, label, recent_error)
        if outcome is None:
            return
        add_hook_steps(run.steps, outcome.steps)
        if outcome.stopped and label is None:
            run.turns.stopped_by_hook(outcome.stopped)

    def _maybe_new_session(self, event: dict[str, Any]) -> None:
        session = event.get("sessionId") or event.get("session_id")
        if not isinstance(session, str) or flag(event.get("isSidechain")):
            return
        if self.run.session_id is not None and session != self.run.session_id and self.run.steps:
            self._new_run()  # transcripts of two sessions one after the other
        self.run.session_id = session

    def _agent_of(self, event: dict[str, Any]) -> object:
        """The subagent label of a record, None for the main agent, or ROOT_PROMPT for the prompt
        that started an inline (1.0) sidechain, which the Task call already shows."""
        run = self.run
        parent_call = event.get("parent_tool_use_id")
        if isinstance(parent_call, str) and parent_call:
            return run.tasks.get(parent_call, "subagent")
        if self.lone or not flag(event.get("isSidechain")):
            return None
        uuid, parent = str(event.get("uuid")), event.get("parentUuid")
        if isinstance(parent, str) and parent in run.sidechain:
            run.sidechain[uuid] = run.sidechain[parent]
            return run.sidechain[uuid]
        label = f"subagent {event['agentId']}" if event.get("agentId") else "subagent"
        if event.get("type") == "user" and parent is None:  # the prompt that started a sidechain
            run.sidechain[uuid] = self._match_task(_plain_text(event)) or label
            return ROOT_PROMPT
        run.sidechain[uuid] = label
        return label

    def _match_task(self, prompt: str) -> str | None:
        """The unanswered Task call whose prompt started this sidechain (else the oldest one)."""
        pending = self.run.task_prompts
        call = next((c for c, p in pending.items() if p.strip() == prompt.strip()), None)
        call = call or next(iter(pending), None)
        if call is None:
            return None
        del pending[call]
        return self.run.tasks[call]

    def _progress(self, event: dict[str, Any]) -> None:
        data = event.get("data")
        if not isinstance(data, dict) or data.get("type") != "agent_progress":
            return  # hook, bash and waiting progress: bookkeeping
        inner, call = data.get("message"), event.get("parentToolUseID")
        agent_id = str(data.get("agentId") or "")
        if agent_id and isinstance(call, str):
            self.run.agent_tasks[agent_id] = call
        if not isinstance(inner, dict) or agent_id in self.subagent_steps:
            return  # the agent's own file, when given, is the fuller record
        label = self.run.tasks.get(str(call), f"subagent {agent_id}".strip())
        if inner.get("type") in ("assistant", "user"):
            self._message(inner, label)

    # -- messages -----------------------------------------------------------------------------
    def _message(self, event: dict[str, Any], agent: str | None) -> None:
        msg = event.get("message")
        if not isinstance(msg, dict):
            return
        if event.get("type") == "assistant":
            if agent is None:
                self.deliver_queued()
            self._assistant(event, msg, agent)
        else:
            self._user(event, msg.get("content"), agent)

    def deliver_queued(self) -> None:
        """Messages that left the queue since the agent's last message: it reads them now."""
        for text in self.run.queue.take():
            step = user_step(text)
            if step is not None:
                self.run.steps.append(step)
                self.run.turns.saw("user")

    def _assistant(self, event: dict[str, Any], msg: dict[str, Any], agent: str | None) -> None:
        content = msg.get("content")
        if not isinstance(content, list):
            return
        run = self.run
        run.started.add(agent)
        failed = bool(event.get("error") or event.get("isApiErrorMessage"))  # an API error as text
        for block in content:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text" and str(block.get("text", "")).strip():
                step = TraceStep("text", str(block["text"]), is_error=failed, agent=agent)
                run.steps.append(step)
                if agent is None:
                    run.last_main_text = step.text
                    run.turns.saw("result" if failed else "answer", msg.get("stop_reason"))
            elif kind in ("tool_use", "server_tool_use"):
                self._tool_use(block, agent)
            # thinking / redacted_thinking blocks are dropped by design

    def _tool_use(self, block: dict[str, Any], agent: str | None) -> None:
        run = self.run
        name, call_id = str(block.get("name") or "tool"), str(block.get("id"))
        name = clean_text(name)
        run.tool_names[call_id] = name
        run.open_calls[call_id] = (name, agent)
        tool_input = block.get("input")
        if name in _TASK_TOOLS:
            run.tasks[call_id] = _agent_label(tool_input)
            prompt = tool_input.get("prompt") if isinstance(tool_input, dict) else None
            run.task_prompts[call_id] = str(prompt or "")
        step = TraceStep(
            "tool_call", summarize_tool_input(name, tool_input), tool=name, agent=agent, ref=call_id
        )
        run.steps.append(step)
        if agent is None:
            run.turns.saw("call")

    def _user(self, event: dict[str, Any], content: Any, agent: str | None) -> None:
        run = self.run
        is_turn = agent in run.started  # before its first answer, a user message is the prompt
        meta, compact = flag(event.get("isMeta")), flag(event.get("isCompactSummary"))
        texts: list[str] = []
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            for block in content:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "tool_result":
                    self._tool_result(block, agent, event.get("toolUseResult"))
                elif block.get("type") == "text":
                    texts.append(str(block.get("text", "")))
        for text in texts:
            if agent is None:
                run.queue.shown(text)
            step = user_step(text, is_meta=meta, is_compact=compact, agent=agent) if is_turn else None
            if step is not None:
                if step.tool == HOOK:  # a hook's feedback: once, whichever record said it first
                    add_hook_steps(run.steps, [step])
                else:
                    run.steps.append(step)
                if agent is None and is_hook_stop(step):
                    run.turns.stopped_by_hook(step.text)
                elif agent is None and starts_turn(step):
                    run.turns.saw("interrupt" if step.tool == "interrupt" else "user")

    def _tool_result(self, block: dict[str, Any], agent: str | None, outcome: Any) -> None:
        run = self.run
        call_id = str(block.get("tool_use_id"))
        name = run.tool_names.get(call_id)
        run.open_calls.pop(call_id, None)
        text = tool_result_text(block.get("content"))
        error = flag(block.get("is_error"))
        if agent is None:
            run.turns.saw("result")
        if error and text.startswith(REJECTION_PREFIX):
            run.steps.append(rejection_step(name, text, agent))
            if agent is None:
                run.turns.saw("interrupt")
            return
        if call_id in run.tasks:
            self._close_task(call_id, text, outcome)
        run.steps.append(TraceStep("tool_result", text, tool=name, is_error=error, agent=agent, ref=call_id))

    def _close_task(self, call_id: str, report: str, outcome: Any) -> None:
        """Splice in a separate agent file's steps; drop the subagent's last text when the Task
        result repeats it, so the report appears once."""
        run = self.run
        run.task_prompts.pop(call_id, None)
        linked = outcome.get("agentId") if isinstance(outcome, dict) else None
        found = _AGENT_LINE.search(report)
        agent_id = str(linked or (found.group(1) if found else "")) or None
        if agent_id:
            run.agent_tasks[agent_id] = call_id
        agent_id = next((a for a, c in run.agent_tasks.items() if c == call_id), None)
        label = run.tasks[call_id]
        if agent_id in self.subagent_steps:
            self.splice(agent_id, label)
        last = next((i for i in range(len(run.steps) - 1, -1, -1) if run.steps[i].agent == label), None)
        if last is not None and run.steps[last].kind == "text" and _same_report(run.steps[last].text, report):
            del run.steps[last]

    def splice(self, agent_id: str, label: str) -> None:
        self.run.steps.extend(
            TraceStep(s.kind, s.text, s.tool, s.is_error, label, s.ref)
            for s in self.subagent_steps.pop(agent_id)
        )


def _plain_text(event: dict[str, Any]) -> str:
    message = event.get("message")
    return content_text(message.get("content") if isinstance(message, dict) else None)


def _same_report(text: str, report: str) -> bool:
    a, b = " ".join(text.split()), " ".join(report.split())
    return bool(a) and (a == b or a in b)
