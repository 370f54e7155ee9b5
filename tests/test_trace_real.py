"""Real Claude Code session files (../shared/reference/claude-code/real, CLI 1.0.57 to 2.1.143) through
the parser and the budgeted view: nothing raises, the view keeps the ending, every error and the
user's turns, subagents are attributed and their reports appear once."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from skillgrad.traces.claude import ParsedSession, load_session
from skillgrad.traces.steps import TraceCaps, TraceStep, one_line
from skillgrad.traces.view import render_view

REAL = Path(__file__).resolve().parents[2] / "shared" / "reference" / "claude-code" / "real"
FILES = sorted(p.name for p in REAL.glob("*.jsonl")) if REAL.is_dir() else []
needs_real = pytest.mark.skipif(not FILES, reason="real session files not present (../shared)")
SUBAGENT_FILES = {  # sessions whose subagents take steps, inline or through progress records
    "kimuson_5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl",
    "kiliman_test2.jsonl",
    "marot_4d5611e5-main.jsonl",
    "marot_subagent.jsonl",
}
_COLLAPSED = re.compile(r"^steps [\d, -]+: (\d+)x ", re.M)
_PAIR = re.compile(r"^\d+-\d+\. \[[^\]]*\] .* -> ERROR ", re.M)
_SINGLE_ERROR = re.compile(r"^\d+\. \[[^\]]* ERROR[^\]]*\] ", re.M)
_GAP_ERRORS = re.compile(r"^\[\.\.\. .*?(\d+) errors? .*\]$", re.M)


def errors_accounted(view: str) -> tuple[int, int]:
    """(errors shown or counted on collapse lines, errors only counted inside gap markers)."""
    shown = len(_SINGLE_ERROR.findall(view)) + len(_PAIR.findall(view))
    shown += sum(int(n) for n in _COLLAPSED.findall(view))
    return shown, sum(int(n) for n in _GAP_ERRORS.findall(view))


def error_steps(session: ParsedSession) -> list[TraceStep]:
    return [s for s in session.steps if s.is_error and s.kind != "tool_call"]


@needs_real
@pytest.mark.parametrize("name", FILES)
@pytest.mark.parametrize("budget", [4000, 1500])
def test_real_session_view(name: str, budget: int) -> None:
    session = load_session(REAL / name)
    view = render_view(session.steps, TraceCaps(total_chars=budget))
    assert len(view) <= budget
    assert view == render_view(session.steps, TraceCaps(total_chars=budget))  # deterministic
    if session.final_answer:
        assert one_line(session.final_answer)[:20] in view
    assert one_line(session.steps[-1].text)[:20] in view  # how it ended, always
    shown, in_gaps = errors_accounted(view)
    assert shown + in_gaps == len(error_steps(session))
    if budget == 4000:
        assert in_gaps == 0, "at the default budget every error is shown or on a collapse line"
    texts = [one_line(s.text) for s in session.steps if s.kind == "text" and s.agent is not None]
    reports = [
        one_line(s.text) for s in session.steps if s.kind == "tool_result" and s.tool in ("Task", "Agent")
    ]
    assert not any(t and t in r for t in texts for r in reports), "a subagent's report appears twice"


@needs_real
@pytest.mark.parametrize("name", sorted(SUBAGENT_FILES & set(FILES)))
def test_subagent_steps_are_attributed(name: str) -> None:
    session = load_session(REAL / name)
    sub = [s for s in session.steps if s.agent is not None]
    assert sub, "the subagent's steps are there, labelled"
    assert any(
        f"@{sub[0].agent}" in line
        for line in render_view(session.steps, TraceCaps(total_chars=100_000)).splitlines()
    )


@needs_real
def test_inline_sidechain_steps_carry_their_task() -> None:
    session = load_session(REAL / "kimuson_5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl")
    agents = {s.agent for s in session.steps if s.agent}
    assert agents == {
        "general-purpose (Check package configuration)",
        "general-purpose (Analyze current project structure)",
    }
    globbed = next(s for s in session.steps if s.kind == "tool_call" and s.tool == "Glob" and s.agent)
    assert globbed.text == "**/package.json in /path/to/Demo"
    # the main chain's own steps stay unlabelled and its last text is the answer
    assert session.final_answer.startswith("CLAUDE.mdファイルを最新の状態に")


@needs_real
def test_separate_subagent_file_is_spliced_under_its_task() -> None:
    main = REAL / "marot_4d5611e5-main.jsonl"
    with_file = load_session(main, [REAL / "marot_4d5611e5-subagent-a2898e3.jsonl"])
    explore = [s for s in with_file.steps if s.agent and s.agent.startswith("Explore")]
    assert len(explore) >= 60  # the agent file's steps, not only the progress records
    task_result = next(
        i for i, s in enumerate(with_file.steps) if s.kind == "tool_result" and s.tool == "Task"
    )
    assert all(with_file.steps.index(s) < task_result for s in explore)


@needs_real
def test_user_turns_are_kept() -> None:
    session = load_session(REAL / "kiliman_test2.jsonl")
    users = [s for s in session.steps if s.kind == "user"]
    assert {s.tool for s in users} >= {"follow-up", "interrupt", "rejection", "command"}
    view = render_view(session.steps)
    assert "We already have a repo, so you don't need to git init" in view
    assert "Request interrupted by user for tool use" in view
    hooks = load_session(REAL / "drmaciver_stop-hook-uncommitted-changes.jsonl")
    assert any(s.kind == "user" and s.tool == "hook" and "Stop hook feedback" in s.text for s in hooks.steps)
    follow = load_session(REAL / "kfischer_b3edadab-main.jsonl")
    assert [s.text for s in follow.steps if s.tool == "follow-up"][:2] == [
        "ok edit it and add some content",
        "Ok now make a task agent that will add some content too so I can test how those agent threads"
        " are handled",
    ]
    rejected = load_session(REAL / "marot_short.jsonl")
    assert [s.tool for s in rejected.steps if s.kind == "user"] == ["rejection", "rejection", "interrupt"]


@needs_real
def test_approval_failure_is_in_the_default_view() -> None:
    session = load_session(REAL / "trackgentic_mp9xupi7.stream.jsonl")
    assert len(session.steps) == 137 and session.finished and not session.is_error
    view = render_view(session.steps)
    collapsed = [line for line in view.splitlines() if re.match(r"steps \d+-1\d\d: \d+x", line)]
    assert any("-> ERROR This command requires approval" in line for line in collapsed)
    assert "137. [text] It seems all trackgentic write commands require manual approval" in view


@needs_real
def test_cut_off_and_init_only_sessions() -> None:
    cut = load_session(REAL / "trackgentic_mp9ygklz.stream.jsonl")
    assert cut.is_error and not cut.finished
    assert "unfinished" in cut.steps[-1].text and "Bash call never got its result" in cut.steps[-1].text
    empty = load_session(REAL / "trackgentic_mp9r3tbb.stream.jsonl")
    assert [s.text for s in empty.steps] == [
        "session has no steps: it recorded no message and no result (unfinished)"
    ]


@needs_real
def test_todo_ask_and_task_summaries_say_what_happened() -> None:
    port = load_session(REAL / "drmaciver_python-to-rust-port.jsonl")
    todo = next(s.text for s in port.steps if s.tool == "TodoWrite")
    assert re.match(r"\d+ todos, \d+ done: \[[x> ]\] ", todo)
    task = next(s.text for s in port.steps if s.kind == "tool_call" and s.tool == "Task")
    assert task.startswith("Explore: Explore Python project structure") or ": " in task.split("(")[0]
    marot = load_session(REAL / "marot_4d5611e5-main.jsonl")
    ask = next(s.text for s in marot.steps if s.tool == "AskUserQuestion")
    assert ask.startswith("Pre-commit hook blocks on pre-existing dialyzer/credo issues")
