"""The budgeted view's accounting: every error shown, collapsed or counted exactly once, and every
user turn shown or counted, as a property over random traces (the real corpus: test_trace_real.py);
collapsed runs attribute right; gaps say what they hide; the last resort narrows before it drops."""

from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skillgrad.traces.steps import TraceCaps, TraceStep, one_line
from skillgrad.traces.view import HiddenSpan, gap_marker, render_view
from skillgrad.traces.view_read import read_view

_ERRORS = ["Permission denied", "Cancelled: parallel call errored", "exit code 1: FAIL test_x\nat a.ts:3"]
_AGENTS = [None, None, None, "Explore (look around)", "subagent a434715"]


@st.composite
def traces(draw: st.DrawFn) -> list[TraceStep]:
    """Calls answered in order or in parallel batches, repeated and distinct errors, user turns
    (rejections among them), subagent steps, texts short and long."""
    steps: list[TraceStep] = []
    n = 0
    for _ in range(draw(st.integers(1, 40))):
        agent = draw(st.sampled_from(_AGENTS))
        shape = draw(st.sampled_from(["text", "calls", "user", "answer"]))
        if shape == "calls":
            refs = [f"c{n + i}" for i in range(draw(st.integers(1, 5)))]
            n += len(refs)
            tool = draw(st.sampled_from(["Bash", "Read"]))
            steps += [
                TraceStep(
                    "tool_call", draw(st.sampled_from(["ls", "npm test", "cat a"])), tool, agent=agent, ref=r
                )
                for r in refs
            ]
            for r in draw(st.permutations(refs)):
                failed = draw(st.integers(0, 2)) > 0
                text = draw(st.sampled_from(_ERRORS)) if failed else "fine"
                steps.append(TraceStep("tool_result", text, tool, failed, agent, r))
        elif shape == "user":
            rejected = draw(st.booleans())
            text = (
                "rejected the Bash call: no"
                if rejected
                else draw(st.sampled_from(["no, the other file", "go on"]))
            )
            steps.append(TraceStep("user", text, "rejection" if rejected else "follow-up", rejected, agent))
        else:
            size = draw(st.sampled_from([5, 80, 700]))
            steps.append(TraceStep("text", f"{shape} " + "w" * size, agent=agent))
    return steps


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(traces(), st.integers(150, 6000))
def test_every_error_and_user_turn_is_accounted_exactly_once(steps: list[TraceStep], budget: int) -> None:
    view = render_view(steps, TraceCaps(total_chars=budget))
    assert len(view) <= budget
    assert view == render_view(list(steps), TraceCaps(total_chars=budget))
    if "[... trace truncated" in view:
        return  # not even the two ends fit: a plain cut that says so
    account = read_view(view, steps)
    assert account.problems == []
    assert account.errors == sum(1 for s in steps if s.is_error and s.kind != "tool_call")
    assert account.users == sum(1 for s in steps if s.kind == "user")
    assert one_line(steps[-1].text)[:10] in view  # how it ended, always
    markers = [line for line in view.splitlines() if line.startswith("[...")]
    assert not any(re.search(r"\b(\w+) \1\b", m) for m in markers)  # no doubled words


def test_parallel_calls_one_error_and_two_cancelled_attribute_right() -> None:
    steps = [TraceStep("text", "Running three checks.")]
    steps += [
        TraceStep("tool_call", c, "Bash", ref=f"c{i}")
        for i, c in enumerate(["npm test", "npm run lint", "npm run build"])
    ]
    steps.append(TraceStep("tool_result", "Exit code 1\nFAIL src/a.test.ts", "Bash", True, ref="c0"))
    cancelled = "<tool_use_error>Cancelled: parallel tool call Bash(npm test) errored</tool_use_error>"
    steps += [TraceStep("tool_result", cancelled, "Bash", True, ref=f"c{i}") for i in (1, 2)]
    steps += [TraceStep("text", "filler " * 40) for _ in range(20)] + [TraceStep("text", "Fixed.")]
    view = render_view(steps, TraceCaps(total_chars=1200))
    lines = view.splitlines()
    # two different commands cancelled alike are two failures: each with its own call, never the FAIL
    assert not any(line.startswith("steps ") for line in lines)
    for at, command in ((6, "npm run lint"), (7, "npm run build")):
        assert f"{at}. [tool_result Bash ERROR] <tool_use_error>Cancelled: parallel tool call" in view
        assert f"{at - 3}. [tool_call Bash] {command}" in lines
    assert "5. [tool_result Bash ERROR] Exit code 1 ⏎ FAIL src/a.test.ts" in lines  # shown on its own
    assert "2. [tool_call Bash] npm test" in lines  # with the call that caused it
    account = read_view(view, steps)
    assert account.problems == [] and account.errors == 3 and account.errors_shown == {5, 6, 7}


def test_gap_markers_count_user_turns_and_hidden_subagents() -> None:
    steps = [TraceStep("text", "start")]
    for i in range(30):
        steps.append(TraceStep("user", f"please also handle case {i} " + "x" * 150, "follow-up"))
        steps.append(TraceStep("text", f"handled {i} " + "y" * 200))
    steps += [TraceStep("tool_call", "ls", "Bash", agent="subagent a434715") for _ in range(5)]
    steps.append(TraceStep("text", "All done."))
    view = render_view(steps, TraceCaps(total_chars=1500))
    markers = [line for line in view.splitlines() if line.startswith("[...")]
    assert any(re.search(r", \d+ user turns? \.\.\.\]$", m) for m in markers)
    account = read_view(view, steps)
    assert account.problems == [] and account.users == 30 and account.users_in_gaps > 0
    assert gap_marker(HiddenSpan(3, 7, 10, 0, 0, "subagent a434715")) == (
        "[... 5 steps, 10 chars hidden, inside @subagent a434715 ...]"
    )


def test_last_resort_narrows_lines_before_dropping_distinct_errors() -> None:
    steps = [TraceStep("text", "Trying every variant.")]
    for i in range(12):
        steps.append(TraceStep("tool_call", f"variant {i}", "Bash", ref=f"v{i}"))
        steps.append(TraceStep("user", f"also try {i}", "follow-up"))  # user turns keep errors apart
        steps.append(
            TraceStep("tool_result", f"error kind {chr(65 + i)}: " + "z" * 600, "Bash", True, ref=f"v{i}")
        )
    steps.append(TraceStep("text", "None worked."))
    view = render_view(steps, TraceCaps(total_chars=700))
    shown = {m.group(1) for m in re.finditer(r"ERROR[^\n]*?error kind (\w)", view)}
    assert len(shown) >= 4, view  # at full width one or two would fit; narrowed, more do
    account = read_view(view, steps)
    assert account.problems == [] and account.errors == 12


def test_a_lone_subagent_file_keeps_its_final_report() -> None:
    agent = "subagent a434715"
    steps = [TraceStep("tool_call", f"grep {i}", "Grep", agent=agent, ref=str(i)) for i in range(40)]
    steps.append(TraceStep("text", "REPORT: the parser lives in src/parse.ts", agent=agent))
    for budget in (300, 600, 1500):
        view = render_view(steps, TraceCaps(total_chars=budget))
        assert "REPORT: the parser lives in src/parse.ts" in view
        assert "subagent subagent" not in view


def approval_run(commands: list[str], said_at: int) -> list[TraceStep]:
    steps = [TraceStep("text", "Now let me comment on the issue and close it.")]
    for i, command in enumerate(commands):
        if i == said_at:
            steps.append(
                TraceStep("text", "It seems like the commands need user approval. Let me wait for approval.")
            )
        steps.append(TraceStep("tool_call", command, "Bash", ref=f"c{i}"))
        steps.append(TraceStep("tool_result", "This command requires approval", "Bash", True, ref=f"c{i}"))
    steps += [TraceStep("tool_call", f"cat notes/{i}.md", "Bash") for i in range(30)]
    return [*steps, TraceStep("text", "I need your approval to run these commands.")]


def test_the_agents_words_inside_a_run_of_failures_are_never_folded_away() -> None:
    """The same command failing alike 17 times, the agent's words after the 8th: two repeat lines
    with the words between them, at every budget; never `(+1 other step)`."""
    steps = approval_run(["gh issue close 45"] * 17, said_at=8)
    for budget in (4000, 1500, 600, 300):
        view = render_view(steps, TraceCaps(total_chars=budget))
        assert "18. [text] It seems like the comman" in view, budget
        assert "other step" not in view
        run = "2-17: 8x" if budget >= 600 else "2-17, 19-36: 17x"  # at 300 the two runs share a line
        assert f"steps {run} [tool_call Bash] gh issue close 45 -> ERROR This command requires" in view
        assert read_view(view, steps).errors == 17


def test_the_agents_words_between_failures_rank_ahead_of_errors_that_say_the_same() -> None:
    """Twenty different commands refused alike: under a tight budget the agent's words are kept
    before the refusals that repeat what a shown one already said; every error is still counted."""
    steps = approval_run([f"gh issue comment 45 --body 'try {i}'" for i in range(20)], said_at=10)
    view = render_view(steps, TraceCaps(total_chars=700))
    account = read_view(view, steps)
    assert "22. [text] It seems like the commands need" in view
    assert account.errors == 20 and account.errors_in_gaps > 0 and account.problems == []
