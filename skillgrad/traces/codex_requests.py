"""Which user messages of a Codex rollout the user sent, each once, and which the harness wrote.

A rollout says a user message twice: as a response item (what the model saw) and as an
`event_msg user_message` (what the user typed; from 0.16x an `item_completed` UserMessage), one
right after the other in either order. The two need not have the same text (an image adds wrapper
parts to the item; a redacted fixture writes different placeholders), so a pair is recognised by
position first, then by text. The harness writes user items of its own too: the context it sets up
for a turn (environment, permissions, AGENTS.md). Most carry a known prefix; when the text does not
tell (a redacted file), a user item waits until the next record says what it was: its event (a
message), `task_started` (context the harness set up before the turn), or the agent's next step
(a message when the file has written no user_message event so far, as older CLIs did not; else
context, since every message the user sends gets its event).
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field

_REDACTED = re.compile(r"\[REDACTED_[A-Z_]+ (len=\d+ sha=\w+)\]")
_RECENT = 16  # unpaired messages remembered, for a pair whose two records are not adjacent


def redacted_empty(text: str) -> bool:
    """A redacted file's placeholder for an empty text (`[REDACTED_MESSAGE len=0 sha=...]`)."""
    found = _REDACTED.fullmatch(text.strip())
    return found is not None and found.group(1).startswith("len=0 ")


def _key(text: str) -> str:
    """What two records of one message share: the text with spaces folded, and a redaction
    placeholder (`[REDACTED_TEXT len=N sha=H]` / `[REDACTED_MESSAGE ...]`) by its length and hash."""
    return _REDACTED.sub(r"[\1]", " ".join(text.split()))


@dataclass
class Requests:
    """Feed it the rollout's user items and events in order; each call returns the follow-ups to
    show now (the first message the user sent is the task itself, never a follow-up)."""

    asked: bool = False
    events_seen: bool = False  # the file writes user_message events
    pending: list[str] = field(default_factory=list)  # user items not yet known to be messages
    last: str | None = None  # "item" or "event": the record just before was a user message
    from_items: deque[str] = field(default_factory=lambda: deque(maxlen=_RECENT))
    from_events: deque[str] = field(default_factory=lambda: deque(maxlen=_RECENT))

    def item(self, text: str) -> list[str]:
        key = _key(text)
        if self.last == "event" or key in self.from_events:  # its event was read: it is shown
            self._forget(self.from_events, key)
            self.last = None
            return []
        self.pending.append(text)
        self.last = "item"
        return []

    def event(self, text: str) -> list[str]:
        self.events_seen = True
        key = _key(text)
        if self.last == "item" or any(_key(p) == key for p in self.pending):
            self.pending.clear()  # the item was this message; the other waiting items had no event
            self.last = None
            return self._show(text)
        self.last = None
        if key in self.from_items:  # shown from its item, some records ago
            self._forget(self.from_items, key)
            return []
        self.from_events.append(key)
        self.last = "event"
        return self._show(text)

    def turn_started(self) -> None:
        """Items written before a turn starts are the context the harness set up for it."""
        self.pending.clear()
        self.last = None

    def other(self, agent_step: bool) -> list[str]:
        """A record that is no user message: no pair spans it. At the agent's next step the waiting
        items were its input: messages, unless the file writes events."""
        self.last = None
        if not agent_step:
            return []
        waiting, self.pending = self.pending, []
        if self.events_seen:
            return []
        shown: list[str] = []
        for text in waiting:
            self.from_items.append(_key(text))
            shown += self._show(text)
        return shown

    def _show(self, text: str) -> list[str]:
        show, self.asked = self.asked, True
        return [text] if show else []

    @staticmethod
    def _forget(recent: deque[str], key: str) -> None:
        if key in recent:
            recent.remove(key)
