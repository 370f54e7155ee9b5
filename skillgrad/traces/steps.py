"""How one TraceStep (the unit of an agent trace, defined in skillgrad.values) reads as one line."""

from __future__ import annotations

from dataclasses import dataclass

from skillgrad.values import StepKind, TraceStep

__all__ = [
    "StepKind",
    "TraceCaps",
    "TraceStep",
    "clip",
    "one_line",
    "render_full",
    "render_step",
    "step_label",
]


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
    """`text` as one line, cut at `limit` characters with a note of how many more there were. Only
    a window of the text is flattened (a tool result can run to megabytes); the count of the rest
    is of its raw characters."""
    if limit is None:
        return one_line(text)
    body = text.strip()
    window = limit * 2 + 64
    while True:
        flat = one_line(body[:window])
        if len(flat) > limit or window >= len(body):
            break
        window *= 4  # mostly blank lines: look further
    if len(flat) <= limit:
        return flat
    rest = len(flat) - limit + max(0, len(body) - window)
    return flat[:limit] + f"... [+{rest} chars]"


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
