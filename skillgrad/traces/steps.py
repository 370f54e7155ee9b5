"""How one TraceStep (the unit of an agent trace, defined in skillgrad.values) reads as one line,
and the two `text` steps the harness or the parser writes rather than the agent: a hook that failed
without blocking (`text`, tool `hook`, an error) and the note that closes an unfinished session
(`text`, tool `session`: evidence, not an error of the session's own)."""

from __future__ import annotations

from dataclasses import dataclass

from skillgrad.values import StepKind, TraceStep

__all__ = [
    "StepKind",
    "TraceCaps",
    "TraceStep",
    "clip",
    "hook_error_step",
    "is_session_note",
    "one_line",
    "render_full",
    "render_step",
    "session_note",
    "step_label",
]

HOOK = "hook"  # the tool of a hook error step (and the source of a hook's `user` step)
SESSION = "session"  # the tool of the parser's closing note


@dataclass(frozen=True)
class TraceCaps:
    """Rendering caps (characters): tool results, other steps, and the whole view (its budget)."""

    tool_result_chars: int = 200
    step_chars: int = 500
    total_chars: int = 4000

    def step_limit(self, step: TraceStep) -> int:
        return self.tool_result_chars if step.kind == "tool_result" else self.step_chars


def hook_error_step(text: str, agent: str | None = None) -> TraceStep:
    """A hook that failed without blocking: the harness says so; the agent went on."""
    return TraceStep("text", text, HOOK, is_error=True, agent=agent)


def session_note(text: str) -> TraceStep:
    """The parser's closing note of an unfinished session: it says why, as the trace's last step.
    It is kept as an error so that every view shows it, but it is no error the session recorded."""
    return TraceStep("text", text, SESSION, is_error=True)


def is_session_note(step: TraceStep) -> bool:
    return step.kind == "text" and step.tool == SESSION


def one_line(text: str) -> str:
    # One step, one line: a multi-line text keeps its line breaks as visible markers.
    return " ⏎ ".join(line.rstrip() for line in text.strip().splitlines() if line.strip())


def clip(text: str, limit: int | None, count: bool = True) -> str:
    """`text` as one line, cut at `limit` characters with a note of how many more there were
    (`count=False`: only "..."). Only a window of the text is flattened (a tool result can run to
    megabytes); the count of the rest is of its raw characters."""
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
    cut = f"... [+{rest} chars]" if count else "..."
    if window >= len(body) and rest <= len(cut):
        return flat  # the whole text is no longer than its cut
    return flat[:limit] + cut


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
