"""TraceStep, the unit of an agent trace, and how one step reads as one line."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from skillgrad.text import clean_text

StepKind = Literal["text", "tool_call", "tool_result", "user"]


@dataclass(frozen=True)
class TraceStep:
    """One step of an agent's session.

    kind: `text` (the agent wrote), `tool_call`, `tool_result`, or `user` (what the user or a hook
    said after the first prompt). tool: the tool's name; for `user` steps the source (`follow-up`,
    `interrupt`, `hook`, `command`, `rejection`, `compact`). agent: the subagent that took the step
    (None for the main agent). ref: the tool-use id that pairs a call with its result.
    """

    kind: StepKind
    text: str
    tool: str | None = None
    is_error: bool = False
    agent: str | None = None
    ref: str | None = None

    def __post_init__(self) -> None:
        # Every string a step carries comes from an agent, a tool or a file: made encodable here,
        # once, so no renderer or writer downstream can fail on a lone surrogate.
        for name in ("text", "tool", "agent", "ref"):
            value = getattr(self, name)
            if isinstance(value, str):
                object.__setattr__(self, name, clean_text(value))
            elif value is not None:
                object.__setattr__(self, name, clean_text(str(value)))

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "kind": self.kind,
            "text": self.text,
            "tool": self.tool,
            "is_error": self.is_error,
        }
        if self.agent is not None:
            data["agent"] = self.agent
        if self.ref is not None:
            data["ref"] = self.ref
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TraceStep:
        kind = data.get("kind")
        return cls(
            kind if kind in ("text", "tool_call", "tool_result", "user") else "text",
            clean_text(str(data.get("text", ""))),
            data.get("tool"),
            bool(data.get("is_error", False)),
            data.get("agent"),
            data.get("ref"),
        )


@dataclass(frozen=True)
class TraceCaps:
    """Rendering caps (characters): tool results, other steps, and the whole view (its budget)."""

    tool_result_chars: int = 200
    step_chars: int = 500
    total_chars: int = 4000

    def step_limit(self, step: TraceStep) -> int:
        return self.tool_result_chars if step.kind == "tool_result" else self.step_chars


def one_line(text: str) -> str:
    # One step, one line: a multi-line text keeps its line breaks as visible markers.
    return " ⏎ ".join(line.rstrip() for line in text.strip().splitlines() if line.strip())


def clip(text: str, limit: int | None) -> str:
    text = one_line(text)
    if limit is None or len(text) <= limit:
        return text
    return text[:limit] + f"... [+{len(text) - limit} chars]"


def step_label(step: TraceStep) -> str:
    label = step.kind if step.tool is None else f"{step.kind} {step.tool}"
    if step.is_error:
        label += " ERROR"
    return label if step.agent is None else f"{label} @{step.agent}"


def render_step(index: int, step: TraceStep, limit: int | None) -> str:
    """`N. [kind tool ERROR @subagent] text`, the text clipped to `limit` characters (None: all)."""
    return f"{index}. [{step_label(step)}] {clip(step.text, limit)}"


def render_full(steps: list[TraceStep]) -> str:
    """Every step, uncapped: what `skillgrad trace --full` prints."""
    return "\n".join(render_step(i, s, None) for i, s in enumerate(steps, 1))
