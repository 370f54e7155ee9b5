"""TraceStep, the unit of an agent trace, and the one renderer the optimizer and users see."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

StepKind = Literal["text", "tool_call", "tool_result"]

TRUNCATION_MARKER = "[... trace truncated: {n} more characters omitted ...]"


@dataclass(frozen=True)
class TraceStep:
    kind: StepKind
    text: str
    tool: str | None = None
    is_error: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "text": self.text, "tool": self.tool, "is_error": self.is_error}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TraceStep:
        return cls(data["kind"], data["text"], data.get("tool"), bool(data.get("is_error", False)))


@dataclass(frozen=True)
class TraceCaps:
    """Rendering caps (characters): tool results, other steps, and the whole block."""

    tool_result_chars: int = 200
    step_chars: int = 500
    total_chars: int = 4000


def _clip(text: str, limit: int) -> str:
    # One step, one line: a multi-line tool output keeps its line breaks as visible markers.
    text = " ⏎ ".join(line.rstrip() for line in text.strip().splitlines() if line.strip())
    return text if len(text) <= limit else text[:limit] + f"... [+{len(text) - limit} chars]"


def render_step(index: int, step: TraceStep, caps: TraceCaps) -> str:
    limit = caps.tool_result_chars if step.kind == "tool_result" else caps.step_chars
    label = step.kind if step.tool is None else f"{step.kind} {step.tool}"
    if step.is_error:
        label += " ERROR"
    return f"{index}. [{label}] {_clip(step.text, limit)}"


def render_steps(steps: list[TraceStep], caps: TraceCaps | None = None) -> str:
    """Numbered, capped text of `steps`; ends with an explicit marker when the total cap cuts it."""
    caps = caps or TraceCaps()
    lines: list[str] = []
    used = 0
    for i, step in enumerate(steps, 1):
        line = render_step(i, step, caps)
        if used + len(line) + 1 > caps.total_chars:
            omitted = sum(len(render_step(j, s, caps)) + 1 for j, s in enumerate(steps[i - 1 :], i))
            lines.append(TRUNCATION_MARKER.format(n=omitted))
            break
        lines.append(line)
        used += len(line) + 1
    return "\n".join(lines)
