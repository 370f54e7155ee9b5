"""The examples section of a skill: worked examples of train tasks, written by skillgrad.

Small targets copy the form of an answer they are shown far more reliably than they follow a rule
that describes it (issue 36: a format rule lifted the 1.5B on bbh date_understanding from 0.000 to
0.125, the same rule with 3 worked train examples to 0.250). A skill may therefore hold one marked
section (in a skill package, the file `examples.md`):

    <!-- examples -->
    ## Worked examples
    ...
    <!-- example {"task": "date_understanding-17", "source": "expected"} -->
    Task:
    <the task as the chat target receives it>

    Correct reply:
    (B)
    <!-- /examples -->

The analyst never writes an example's text: it names a train task by id (`add_example`,
`replace_example`, `remove_example`) and skillgrad writes the entry from the task's question and
expected answer, or from a rollout of the task that passed (bootstrapping, as DSPy's
BootstrapFewShot does). The task is rendered with the chat target's own template
(backends/prompts/chat_target_task.md), so the example shows exactly what the target will see; the
reply is the answer as the scorer accepts it. Each entry's marker names its task and source, which
is how the report tells which train tasks a skill's examples came from.

The section is skillgrad's: its text is rendered from its entries, and an edit that is not an
example edit cannot touch it (`skilldoc.py` treats it like a protected region). Text that outside
input could use to end the section early (`<!--`) or to split an entry (a line `Correct reply:` in
the task) is neutralised when the entry is written, so parsing a section and rendering it again gives
the same text. A section that does not (hand-written in another shape) is left alone:
`section_is_ours` tells.

This module imports only values and templates, so `skilldoc.py` and the package may use it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from skillgrad.templates import render
from skillgrad.values import Task

EXAMPLES_OPEN = "<!-- examples -->"
EXAMPLES_CLOSE = "<!-- /examples -->"
EXAMPLES_FILE = "examples.md"  # a skill package's examples
DemoSource = Literal["expected", "rollout"]
DEMO_SOURCES: tuple[DemoSource, ...] = ("expected", "rollout")
DEFAULT_EXAMPLE_CHARS = 1500  # one entry, marker included (skill.example_chars)
MIN_QUESTION_CHARS = 200  # below this a cut task no longer shows what was asked
CUT = " [...] "

ExampleOp = Literal["add_example", "replace_example", "remove_example"]
EXAMPLE_OPS: tuple[ExampleOp, ...] = ("add_example", "replace_example", "remove_example")

_PROMPTS = "skillgrad"
_TARGET_PROMPTS = "skillgrad.backends"  # the chat target's task template, read as a file
_MARKER = re.compile(r"^<!-- example (\{.*?\}) -->$", re.MULTILINE)
_REPLY_LINE = "\n\nCorrect reply:\n"
_SECTION = re.compile(re.escape(EXAMPLES_OPEN) + r"(.*?)" + re.escape(EXAMPLES_CLOSE), re.DOTALL)


@dataclass(frozen=True)
class Demo:
    """One worked example: `question` is the task as the target sees it (bounded), `answer` the
    reply as the scorer accepts it; `source`: the task's expected answer or a rollout that passed."""

    task_id: str
    question: str
    answer: str
    source: str = "expected"


def task_as_seen(task: Task) -> str:
    """The task as the chat target receives it (its own template, see backends/chat_agent.py)."""
    context = f"Context:\n{task.context}\n\n" if task.context else ""
    return render(_TARGET_PROMPTS, "chat_target_task", context_block=context, question=task.question).strip()


def _neutral(text: str) -> str:
    """`text` that cannot end a section or start an entry (an HTML comment's ends broken up),
    without the blank-line runs that the skill's own tidying would collapse."""
    text = re.sub(r"\n{3,}", "\n\n", text.replace("<!--", "< !--").replace("-->", "-- >"))
    return text.strip()


def _neutral_question(text: str) -> str:
    """A task that cannot be mistaken for its reply: a `Correct reply:` line of its own is reworded."""
    return re.sub(r"^Correct reply:$", "Correct reply :", _neutral(text), flags=re.MULTILINE)


def _marker(task_id: str, source: str) -> str:
    # JSON with `>` escaped: no id can close the comment it sits in.
    data = json.dumps({"task": task_id, "source": source}, ensure_ascii=False).replace(">", "\\u003e")
    return f"<!-- example {data} -->"


def render_entry(demo: Demo) -> str:
    """One entry of the section, marker first."""
    return render(
        _PROMPTS,
        "example_entry",
        marker=_marker(demo.task_id, demo.source),
        question=_neutral_question(demo.question),
        answer=_neutral(demo.answer),
    ).strip()


def render_demos(demos: Sequence[Demo]) -> str:
    """The whole section, markers included ("" for no demos)."""
    if not demos:
        return ""
    entries = "\n\n".join(render_entry(d) for d in demos)
    return render(_PROMPTS, "examples_section", entries=entries).strip()


def parse_entries(text: str) -> list[Demo]:
    """The entries in `text` (a section's body, or one entry), in order; malformed ones skipped."""
    marks = list(_MARKER.finditer(text))
    demos = []
    for mark, end in zip(marks, [m.start() for m in marks[1:]] + [len(text)], strict=False):
        demo = _entry(mark.group(1), text[mark.end() : end])
        if demo is not None:
            demos.append(demo)
    return demos


def entry_task(content: str) -> str:
    """The task an example edit's content names: its entry's task once written, else its id."""
    written = parse_entries(content)
    return written[0].task_id if written else content.strip()


def _entry(marker_json: str, body: str) -> Demo | None:
    try:
        meta = json.loads(marker_json)
    except json.JSONDecodeError:
        return None
    if not isinstance(meta, dict) or not isinstance(meta.get("task"), str):
        return None
    body = body.strip("\n")
    if not body.startswith("Task:\n") or _REPLY_LINE not in body:
        return None
    question, answer = body[len("Task:\n") :].split(_REPLY_LINE, 1)
    source = meta.get("source") if meta.get("source") in DEMO_SOURCES else "expected"
    return Demo(meta["task"], question.strip(), answer.strip(), str(source))


def section_span(text: str) -> tuple[int, int] | None:
    """Where the first examples section is, its markers included (None: there is none). An open
    marker without a close reaches the end of the text, as an unclosed protected region does."""
    start = text.find(EXAMPLES_OPEN)
    if start < 0:
        return None
    close = text.find(EXAMPLES_CLOSE, start)
    return (start, len(text) if close < 0 else close + len(EXAMPLES_CLOSE))


def parse_demos(skill_text: str) -> list[Demo]:
    """The demos of the skill's examples section ([] when it has none)."""
    match = _SECTION.search(skill_text)
    return parse_entries(match.group(1)) if match else []


def section_is_ours(skill_text: str) -> bool:
    """True when the skill has no examples section or one that its entries render back exactly
    (so rewriting it loses nothing a person wrote there)."""
    span = section_span(skill_text)
    if span is None:
        return True
    return skill_text[span[0] : span[1]] == render_demos(parse_demos(skill_text))


def without_section(skill_text: str) -> str:
    """The skill with its examples section taken out (what the rest of the skill says)."""
    return with_demos(skill_text, [])


def section_alone(skill_text: str) -> str:
    """The skill's examples section alone, as written ("" when it has none): what a re-asked
    analyst is shown, the rules left out and the examples its edits name kept."""
    span = section_span(skill_text)
    return skill_text[span[0] : span[1]] + "\n" if span else ""


def with_demos(skill_text: str, demos: Sequence[Demo]) -> str:
    """The skill with its examples section replaced by `demos` (appended at the end when it has
    none; removed when `demos` is empty)."""
    section = render_demos(demos)
    span = section_span(skill_text)
    if span is None:
        if not section:
            return skill_text
        base = skill_text.rstrip("\n")
        return (base + "\n\n" if base else "") + section + "\n"
    before, after = skill_text[: span[0]].rstrip("\n"), skill_text[span[1] :].lstrip("\n")
    parts = [p for p in (before, section, after.rstrip("\n")) if p]
    return "\n\n".join(parts) + "\n" if parts else ""


def demo_from_task(
    task: Task,
    answer: str | None = None,
    source: str = "expected",
    *,
    max_chars: int = DEFAULT_EXAMPLE_CHARS,
) -> Demo:
    """The demo of `task`: the task as the target sees it, cut to fit `max_chars` for the whole
    entry (a long context first, kept around the answer where it holds it, then the middle of
    the question), and `answer` (default: the task's first expected answer) whole. Raises
    ValueError, saying why, when the task states no answer or the entry cannot fit."""
    reply = _neutral(answer if answer is not None else (task.answers[0] if task.answers else ""))
    if not reply:
        raise ValueError(f"task {task.id} states no expected answer to show")
    probe = Demo(task.id, "", reply, source)
    room = max_chars - len(render_entry(probe))
    if room < MIN_QUESTION_CHARS:
        raise ValueError(
            f"task {task.id}'s reply is {len(reply)} chars: "
            f"its example would not fit skill.example_chars={max_chars}"
        )
    seen = _neutral_question(task_as_seen(task))
    if len(seen) > room and task.context:
        seen = _neutral_question(task_as_seen(_cut_context(task, reply, len(seen) - room)))
    if len(seen) > room:
        seen = _cut_middle(seen, room)
    return Demo(task.id, seen, reply, source)


def _cut_context(task: Task, reply: str, excess: int) -> Task:
    """`task` with its context shortened by `excess` chars (and the cut mark), keeping a window
    around the first place the reply occurs in it, else its beginning."""
    context = task.context or ""
    keep = max(0, len(context) - excess - len(CUT) * 2)
    at = context.lower().find(reply.lower())
    start = 0 if at < 0 else max(0, min(at - keep // 2, len(context) - keep))
    head = CUT.lstrip() if start > 0 else ""
    tail = CUT.rstrip() if start + keep < len(context) else ""
    return Task(task.id, task.question, head + context[start : start + keep] + tail, task.answers)


def _cut_middle(text: str, limit: int) -> str:
    """`text` in `limit` chars: its beginning and its end (where a task's options are)."""
    keep = max(0, limit - len(CUT))
    head = keep // 2
    return text[:head].rstrip() + CUT + text[len(text) - (keep - head) :].lstrip()
