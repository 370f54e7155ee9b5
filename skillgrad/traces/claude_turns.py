"""How a Claude Code session ended, from evidence, and the messages the user queued mid-turn.

A stream-json run always ends with a result record, so one without it was cut off. A
`~/.claude/projects` transcript never has one: it ended when the main agent's last word is an
answer (stronger when `stop_reason: end_turn` or an end-of-turn record such as `turn_duration` or
`stop_hook_summary` follows it), and it stopped mid-turn when a call never got its result, a tool
result or a user message was never answered, or the user interrupted and nothing followed. A hook
that stopped the prompt or the turn ("Operation stopped by hook: ...", a system `informational`
record with `preventContinuation`, a `stop_hook_summary` with `preventedContinuation`) ended it:
that is an ending, not a gap.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any, Literal

END_OF_TURN_RECORDS = ("stop_hook_summary", "turn_duration")
Happening = Literal["answer", "call", "result", "user", "interrupt"]
EMPTY_SESSION = "session has no steps: it recorded no message and no result (unfinished)"
_SAID_CHARS = 160  # of a hook's words, in the evidence


@dataclass
class TurnEvidence:
    """What the main agent's thread did last, and what closed it."""

    transcript: bool = False  # records carry parentUuid: a ~/.claude/projects transcript
    last: Happening | None = None
    end_turn: bool = False  # the last answer's message said stop_reason end_turn
    end_record: str | None = None  # an end-of-turn record after the last answer
    hook_stop: str | None = None  # what a hook said when it stopped the session after that

    def saw(self, what: Happening, stop_reason: Any = None) -> None:
        self.last, self.end_turn, self.end_record = what, stop_reason == "end_turn", None
        self.hook_stop = None

    def stopped_by_hook(self, said: str) -> None:
        self.hook_stop = self.hook_stop or " ".join(said.split())[:_SAID_CHARS]

    def system(self, subtype: Any) -> None:
        if self.last == "answer" and self.end_record is None and subtype in END_OF_TURN_RECORDS:
            self.end_record = str(subtype)


def flag(value: Any) -> bool:
    """A boolean field as a writer may have put it: true, "true", 1 (and "False" is false)."""
    if isinstance(value, str):
        return value.strip().lower() == "true"
    return bool(value)


def verdict(evidence: TurnEvidence, open_calls: list[str], has_steps: bool) -> tuple[bool, str]:
    """(finished, the evidence that decided, in words) for a session without a result record."""
    if not has_steps:
        return False, "it recorded no message and no result"
    call = f"the last {open_calls[-1]} call never got its result" if open_calls else ""
    if not evidence.transcript:
        cut = "no result record: the stream was cut off, or the session never ended"
        return False, cut + (f"; {call}" if call else "")
    if evidence.hook_stop:
        what = "the last prompt" if evidence.last in ("user", "interrupt", None) else "the turn"
        return True, f"a hook stopped {what}: {evidence.hook_stop}"
    if call:
        return False, f"{call}: the transcript stops mid-turn"
    if evidence.last == "answer":
        if evidence.end_record:
            return True, f"the final answer, then a {evidence.end_record} record"
        if evidence.end_turn:
            return True, "the final answer's message says stop_reason end_turn"
        return True, "the transcript ends on the agent's answer with no call open"
    return False, {
        "interrupt": "the user interrupted the agent and it never resumed",
        "user": "the last user message was never answered",
        "result": "the last tool result was never answered: the transcript stops mid-turn",
        "call": "the last tool result was never answered: the transcript stops mid-turn",
        None: "the main agent never answered",
    }[evidence.last]


def closing_note(reason: str, has_steps: bool) -> str:
    """The error step that ends an unfinished session's trace."""
    return f"session unfinished: {reason}" if has_steps else EMPTY_SESSION


@dataclass
class MessageQueue:
    """Messages the user typed while the agent worked (`queue-operation` records). A message is
    delivered when it leaves the queue (remove, dequeue); popAll takes them back unsent."""

    queued: deque[str] = field(default_factory=deque)
    delivered: list[str] = field(default_factory=list)

    def operation(self, record: dict[str, Any]) -> None:
        op = record.get("operation")
        if op == "enqueue":
            text = content_text(record.get("content"))
            if text.strip():
                self.queued.append(text)
        elif op in ("remove", "dequeue") and self.queued:
            self.delivered.append(self.queued.popleft())
        elif op in ("popAll", "clear"):
            self.queued.clear()

    def shown(self, text: str) -> None:
        """A user record carries `text`: a dequeued message is written as a turn of its own."""
        flat = " ".join(text.split())
        self.delivered = [d for d in self.delivered if " ".join(d.split()) != flat]

    def take(self) -> list[str]:
        out, self.delivered = self.delivered, []
        return out


def content_text(content: Any) -> str:
    """The text of a message's content: a string, or the text blocks of a list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text"
        )
    return ""
