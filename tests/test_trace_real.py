"""Real Claude Code and Codex session files (../shared/reference: claude-code/real, claude-code/real-new,
codex/real; CLI 1.0.57 to 2.1.143 and Codex 0.125 to 0.129) through the parsers and the budgeted
view. Nothing raises; the view keeps the ending, and accounts for every error and user turn exactly
once; subagents are attributed however the CLI linked them; queued messages, status and boilerplate
come out right. Where a class can be made from a real file (cut it, drop a record form), the test
does so, so the classes hold beyond the files at hand."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from skillgrad.config import TraceConfig
from skillgrad.traces.any_session import load_any_session
from skillgrad.traces.claude import load_session
from skillgrad.traces.parsed_session import ParsedSession
from skillgrad.traces.show import TraceShow, show_trace
from skillgrad.traces.steps import TraceCaps, TraceStep, is_session_note, one_line
from skillgrad.traces.user_turns import BOILERPLATE, boilerplate
from skillgrad.traces.view import render_view
from skillgrad.traces.view_read import read_view

SHARED = Path(__file__).resolve().parents[2] / "shared" / "reference"
FOLDERS = ("claude-code/real", "claude-code/real-new", "codex/real")
FILES = (
    sorted(f"{d}/{p.name}" for d in FOLDERS for p in (SHARED / d).glob("*.jsonl")) if SHARED.is_dir() else []
)
needs_real = pytest.mark.skipif(not FILES, reason="real session files not present (../shared)")
REAL, NEW, CODEX = (SHARED / d for d in FOLDERS)
TRANSCRIPTS = [f for f in FILES if f.startswith("claude-code") and not f.endswith(".stream.jsonl")]
SUBAGENT_FILES = {  # sessions whose subagents take steps, inline or through progress records
    "kimuson_5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl",
    "kiliman_test2.jsonl",
    "marot_4d5611e5-main.jsonl",
    "marot_subagent.jsonl",
}
STATUS = {  # every real file: its status and the evidence that decides it
    "codemie_incremental-subagents-agent-a485154.jsonl": (
        "finished",
        "the transcript ends on the agent's answer",
    ),
    "codemie_incremental-subagents-turn-2.jsonl": ("finished", "the final answer, then a stop_hook_summary"),
    "codemie_session-624a4a58.jsonl": ("finished", "the final answer's message says stop_reason end_turn"),
    "automagik_manual_test_output.stream.jsonl": ("finished", "result record: success"),
    "drmaciver_hello-world-script.jsonl": ("finished", "the transcript ends on the agent's answer"),
    "drmaciver_python-to-rust-port.jsonl": ("finished", "the transcript ends on the agent's answer"),
    "drmaciver_stop-hook-reflection-first-stop.jsonl": (
        "finished",
        "the transcript ends on the agent's answer",
    ),
    "drmaciver_stop-hook-uncommitted-changes.jsonl": (
        "finished",
        "the transcript ends on the agent's answer",
    ),
    "kfischer_b3edadab-main.jsonl": ("finished", "the transcript ends on the agent's answer"),
    "kiliman_test2.jsonl": ("finished", "the transcript ends on the agent's answer"),  # then only /export
    "kimuson_1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl": ("finished", "the final answer's message says"),
    "kimuson_5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl": ("finished", "the transcript ends on the agent's"),
    "marot_4d5611e5-agent-acompact-e1f845.jsonl": ("finished", "the transcript ends on the agent's answer"),
    "marot_4d5611e5-main.jsonl": ("finished", "the final answer, then a stop_hook_summary record"),
    "marot_4d5611e5-subagent-a2898e3.jsonl": ("finished", "the transcript ends on the agent's answer"),
    "marot_short.jsonl": ("unfinished", "the user interrupted the agent and it never resumed"),
    "marot_subagent.jsonl": ("finished", "the final answer, then a stop_hook_summary record"),
    "trackgentic_mp9r3tbb.stream.jsonl": ("unfinished", "it recorded no message and no result"),
    "trackgentic_mp9xupi7.stream.jsonl": ("finished", "result record: success"),
    "trackgentic_mp9ygklz.stream.jsonl": ("unfinished", "no result record: the stream was cut off"),
    "trackgentic_mpa014m2.stream.jsonl": ("finished", "result record: success"),
    "codemie_codex-turn-2.codex.jsonl": ("finished", "the last turn ends with task_complete"),
    "codemie_rollout-2026-05-11T11-26-55.codex.jsonl": ("finished", "the last turn ends with task_complete"),
    "localpush_rollout-2026-02-23T12-54-34.codex.jsonl": (
        "finished",
        "the last turn ends with task_complete",
    ),
    # Codex 0.40 wrote no turn events: the rollout is judged by how it stops
    "agentcmd_rollout-2025-09-25T09-49-46.codex.jsonl": (
        "finished",
        "the session ends on the agent's answer with no call open (Codex 0.40.0 writes no turn events)",
    ),
}


def error_steps(session: ParsedSession) -> list[TraceStep]:
    return [s for s in session.steps if s.is_error and s.kind != "tool_call"]


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@needs_real
@pytest.mark.parametrize("name", FILES)
@pytest.mark.parametrize("budget", [4000, 1500, 600])
def test_real_session_view(name: str, budget: int) -> None:
    session = load_any_session(SHARED / name)
    view = render_view(session.steps, TraceCaps(total_chars=budget))
    assert len(view) <= budget
    assert view == render_view(session.steps, TraceCaps(total_chars=budget))  # deterministic
    if session.final_answer:
        assert one_line(session.final_answer)[:20] in view
    assert one_line(session.steps[-1].text)[:20] in view  # how it ended, always
    account = read_view(view, session.steps)
    assert account.problems == []
    assert account.errors == len(error_steps(session))  # each shown, collapsed or counted, once
    assert account.users == sum(1 for s in session.steps if s.kind == "user")
    if budget == 4000:
        assert account.errors_in_gaps == 0, "at the default budget every error is shown or on a collapse line"
        assert account.users_in_gaps == 0, "and every user turn is shown"
    markers = [line for line in view.splitlines() if line.startswith("[...")]
    assert not any(re.search(r"\b(\w+) \1\b", m) for m in markers)  # no doubled words
    assert "Caveat: The messages below" not in view  # harness boilerplate is noise
    shown = show_trace(session, TraceConfig(), TraceShow(budget=budget))  # `skillgrad trace --budget`
    assert len(shown) <= budget and shown.startswith("# session: ")
    texts = [one_line(s.text) for s in session.steps if s.kind == "text" and s.agent is not None]
    reports = [
        one_line(s.text) for s in session.steps if s.kind == "tool_result" and s.tool in ("Task", "Agent")
    ]
    assert not any(t and t in r for t in texts for r in reports), "a subagent's report appears twice"


@needs_real
@pytest.mark.parametrize("name", FILES)
def test_status_comes_from_evidence(name: str) -> None:
    session = load_any_session(SHARED / name)
    status, evidence = STATUS[Path(name).name]
    assert session.status == status and session.evidence.startswith(evidence)
    if status == "unfinished":
        assert is_session_note(session.steps[-1]) and session.evidence in session.steps[-1].text
    else:  # no invented closing note (a hook error the CLI wrote may be the last step)
        assert not any(is_session_note(s) for s in session.steps)


@needs_real
@pytest.mark.parametrize("name", [f for f in TRANSCRIPTS if STATUS[Path(f).name][0] == "finished"])
def test_a_finished_transcript_stopped_mid_turn_is_unfinished(name: str, tmp_path: Path) -> None:
    """Cut each finished transcript at its last tool result (before the agent answered it), then
    after a follow-up the agent never answered: both are unfinished, and say why."""
    rows = records(SHARED / name)
    results = [
        i
        for i, r in enumerate(rows)
        if r.get("type") == "user"
        and not r.get("isSidechain")
        and any(
            b.get("type") == "tool_result"
            for b in (r.get("message") or {}).get("content") or []
            if isinstance(b, dict)
        )
    ]
    if results and not load_session(SHARED / name).lone_agent:
        cut = load_session(write(tmp_path / "cut.jsonl", rows[: results[-1] + 1]))
        assert cut.status == "unfinished" and cut.evidence.startswith(
            ("the last tool result was never answered", "the last Bash call never got", "the last")
        )
    asked = {**rows[-1], "type": "user", "message": {"role": "user", "content": "and one more thing"}}
    asked.pop("isSidechain", None)
    follow = load_session(write(tmp_path / "follow.jsonl", [*rows, asked]))
    assert follow.status == "unfinished" and follow.evidence == "the last user message was never answered"


@needs_real
@pytest.mark.parametrize("name", sorted(SUBAGENT_FILES & {Path(f).name for f in FILES}))
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
    main = REAL / "marot_4d5611e5-main.jsonl"  # linked through agent_progress records
    with_file = load_session(main, [REAL / "marot_4d5611e5-subagent-a2898e3.jsonl"])
    explore = [s for s in with_file.steps if s.agent and s.agent.startswith("Explore")]
    assert len(explore) >= 60  # the agent file's steps, not only the progress records
    task_result = next(
        i for i, s in enumerate(with_file.steps) if s.kind == "tool_result" and s.tool == "Task"
    )
    assert all(with_file.steps.index(s) < task_result for s in explore)


@needs_real
def test_agent_file_linked_only_by_the_task_results_agent_id() -> None:
    main = NEW / "codemie_incremental-subagents-turn-2.jsonl"
    agent = NEW / "codemie_incremental-subagents-agent-a485154.jsonl"
    alone = load_session(main)
    session = load_session(main, [agent])
    label = "solution-architect (Analyze CLI and spec new commands)"
    spliced = [s for s in session.steps if s.agent == label]
    calls = [s for s in spliced if s.kind == "tool_call"]
    assert len(calls) == 20 and len(spliced) == len(session.steps) - len(alone.steps)
    task_result = next(i for i, s in enumerate(session.steps) if s.kind == "tool_result" and s.tool == "Task")
    assert session.steps[task_result - len(spliced) : task_result] == spliced  # right under its Task
    assert session.warnings == []
    # a compaction agent's file belongs to no Task: no warning, and its summary is not spliced in
    compaction = load_session(main, [REAL / "marot_4d5611e5-agent-acompact-e1f845.jsonl"])
    assert compaction.warnings == [] and compaction.steps == alone.steps


@needs_real
@pytest.mark.parametrize("name", [f for f in TRANSCRIPTS if "agent-" in f or "subagent-" in f])
def test_a_lone_subagent_file_is_its_own_session_and_keeps_its_report(name: str) -> None:
    session = load_session(SHARED / name)
    assert session.lone_agent and {s.agent for s in session.steps} == {None}
    last_text = next(s.text for s in reversed(session.steps) if s.kind == "text")
    assert session.final_answer == last_text
    for budget in (600, 300):
        assert one_line(last_text)[:20] in render_view(session.steps, TraceCaps(total_chars=budget))


@needs_real
def test_a_message_queued_mid_turn_is_a_follow_up_where_it_was_read() -> None:
    session = load_session(NEW / "codemie_session-624a4a58.jsonl")
    steps = session.steps
    at = next(
        i
        for i, s in enumerate(steps)
        if s.text == "no, add conversationId field, but set value from sessionId"
    )
    assert steps[at].kind == "user" and steps[at].tool == "follow-up"
    assert steps[at - 1].kind == "tool_result" and steps[at - 1].tool == "Edit"
    assert steps[at + 1].text.startswith("I understand - you want to ADD the `conversationId` field")
    assert steps[at].text in render_view(steps)
    # the class: every message that left a queue (enqueue, then remove/dequeue) is a user step, once
    for name in TRANSCRIPTS:
        queue: list[str] = []
        delivered: list[str] = []
        for row in records(SHARED / name):
            if row.get("operation") == "enqueue" and isinstance(row.get("content"), str):
                queue.append(row["content"])
            elif row.get("operation") in ("remove", "dequeue") and queue:
                delivered.append(queue.pop(0))
        users = [s.text for s in load_session(SHARED / name).steps if s.kind == "user"]
        assert all(users.count(text) == 1 for text in delivered), name


@needs_real
@pytest.mark.parametrize("kind", BOILERPLATE, ids=lambda b: b.name)
def test_each_boilerplate_class_on_its_real_file(kind: object) -> None:
    where, line = kind.seen_in.rsplit(" line ", 1)  # type: ignore[attr-defined]
    record = records(SHARED / where)[int(line) - 1]
    content = record["message"]["content"]
    assert boilerplate(content) == kind.name  # type: ignore[attr-defined]
    if kind.name == "local-command caveat":  # type: ignore[attr-defined]
        # later CLIs wrap it in a tag: the same class once the tags are stripped
        assert boilerplate(f"<local-command-caveat>{content}</local-command-caveat>") == kind.name  # type: ignore[attr-defined]


@needs_real
def test_user_turns_are_kept() -> None:
    session = load_session(REAL / "kiliman_test2.jsonl")
    users = [s for s in session.steps if s.kind == "user"]
    assert {s.tool for s in users} >= {"follow-up", "interrupt", "rejection", "command"}
    assert any(
        s.tool == "command" and s.text.startswith("memory note: When committing to git") for s in users
    )
    view = render_view(session.steps)  # 23 distinct failures and 15 user turns: all narrowed in
    assert "64. [user follow-up] We already have a repo, " in view
    assert "63. [user interrupt] Request interrupted by u" in view
    roomy = render_view(session.steps, TraceCaps(total_chars=12000))
    assert "We already have a repo, so you don't need to git init" in roomy
    hooks = load_session(REAL / "drmaciver_stop-hook-uncommitted-changes.jsonl")
    assert any(s.kind == "user" and s.tool == "hook" and "Stop hook feedback" in s.text for s in hooks.steps)
    follow = load_session(REAL / "kfischer_b3edadab-main.jsonl")
    assert [s.text for s in follow.steps if s.tool == "follow-up"][:2] == [
        "ok edit it and add some content",
        "Ok now make a task agent that will add some content too so I can test how those agent threads"
        " are handled",
    ]
    rejected = load_session(REAL / "marot_short.jsonl")  # 2.1 writes local commands as system records
    assert [(s.tool, s.text[:30]) for s in rejected.steps if s.kind == "user"] == [
        ("rejection", "rejected the Bash call: The us"),
        ("rejection", "rejected the Glob call: The us"),
        ("interrupt", "Request interrupted by user fo"),
        ("command", "/model"),
        ("command", "output: Kept model as Default "),
    ]


@needs_real
def test_approval_failures_are_kept_apart_with_the_agents_words() -> None:
    """27 failures of 21 different commands, most answered "This command requires approval": only
    the same command failing the same way shares a line; the agent's words between them are kept;
    the stream's `stop-hook-error` notification is a hook error step, after the answer."""
    session = load_session(REAL / "trackgentic_mp9xupi7.stream.jsonl")
    assert len(session.steps) == 138 and session.finished and not session.is_error
    assert session.steps[-1] == TraceStep("text", "Stop hook error occurred", "hook", is_error=True)
    assert session.final_answer.startswith("It seems all trackgentic write commands require manual approval")
    view = render_view(session.steps)
    lines = view.splitlines()
    assert (
        "steps 100-105: 3x [tool_call Bash] trackgentic update mp9xevrbwj --status done -> ERROR This" in view
    )
    for said in (
        "110. [text] I need approval",
        "119. [text] I need your approval",
        "134. [text] I keep needing",
    ):
        assert any(line.startswith(said) for line in lines), said
    for line in (x for x in lines if x.startswith("steps ")):  # a shared line: one command, one error
        where = re.match(r"steps ([\d, -]+): ", line)
        assert where is not None
        calls = {
            (session.steps[a - 2].text, session.steps[a - 1].text)
            for part in where.group(1).split(", ")
            for a in range(int(part.partition("-")[0]) + 1, int(part.rpartition("-")[2]) + 1, 2)
        }
        assert len(calls) == 1, line
    assert "137. [text] It seems all trackgentic write commands require manual approval" in view
    assert lines[-1] == "138. [text hook ERROR] Stop hook error occurred"


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


@needs_real
def test_codex_unified_exec_names_each_commands_exit() -> None:
    """Every command's exit code (from its exec_command_end record) is in the steps exactly once,
    on a result that names the command; no exec_command result is empty."""
    path = CODEX / "codemie_rollout-2026-05-11T11-26-55.codex.jsonl"
    steps = load_any_session(path).steps
    ends = [r["payload"] for r in records(path) if r["payload"].get("type") == "exec_command_end"]
    assert len(ends) == 43
    for end in ends:  # the exec call's own result, or the result of a poll of its session
        polls = {
            s.ref for s in steps if s.tool == "write_stdin" and s.text == f"poll session {end['process_id']}"
        }
        found = [
            s
            for s in steps
            if s.kind == "tool_result"
            and (s.ref == end["call_id"] or s.ref in polls)
            and "exit code" in s.text
        ]
        assert len(found) == 1 and found[0].text.startswith(f"exit code {end['exit_code']}"), end["command"]
        assert found[0].is_error == (end["exit_code"] != 0)
        if found[0].ref in polls:  # a poll's result names its command
            assert f"`{' '.join(end['command'][-1].split())[:60]}" in found[0].text
    assert not [
        s for s in steps if s.kind == "tool_result" and s.tool == "exec_command" and not s.text.strip()
    ]
    npm = [s for s in error_steps_of(steps) if "npm test" in s.text]
    assert (
        len(npm) == 1 and npm[0].tool == "exec_command" and npm[0].text.startswith("exit code 1 of `npm test")
    )
    assert "exit code 1 of `npm test" in render_view(steps)


def error_steps_of(steps: list[TraceStep]) -> list[TraceStep]:
    return [s for s in steps if s.is_error and s.kind != "tool_call"]


def said_as(text: str) -> str:
    """A message's first line, a redaction placeholder by its length and hash: what the response
    item and the event of one message share (an image adds parts to the item's text)."""
    first = text.splitlines()[0] if text else ""
    return re.sub(r"\[REDACTED_[A-Z_]+ (len=\d+ sha=\w+)\]", r"[\1]", first)


@needs_real
@pytest.mark.parametrize("name", [f for f in FILES if f.startswith("codex")])
@pytest.mark.parametrize("drop", ["response_item", "event_msg"])
def test_codex_follow_ups_read_from_either_record_once(name: str, drop: str, tmp_path: Path) -> None:
    """Every message the user sent after the first (each `user_message` event) is one follow-up, in
    order, however often the same words were sent; the harness's context items are none. With either
    record form alone (older and newer CLIs, compacted history) the same follow-ups come out."""
    rows = records(SHARED / name)
    sent = [r["payload"]["message"] for r in rows if (r.get("payload") or {}).get("type") == "user_message"]
    both = [s.text for s in load_any_session(SHARED / name).steps if s.tool == "follow-up"]
    assert [said_as(t) for t in both] == [said_as(t) for t in sent[1:]]

    def said(row: dict) -> bool:
        payload = row.get("payload") or {}
        return row.get("type") == drop and (
            payload.get("type") == "user_message"
            or (payload.get("type") == "message" and payload.get("role") == "user")
        )

    alone = write(tmp_path / "r.jsonl", [r for r in rows if not said(r)])
    one_form = [s.text for s in load_any_session(alone).steps if s.tool == "follow-up"]
    assert [said_as(t) for t in one_form] == [said_as(t) for t in both]
