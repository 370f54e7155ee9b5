"""Claude Code hooks read as they happened, and how a session ended when a hook stopped it
(skillgrad/traces/claude_hooks.py, claude_turns.py). The records are written in the shapes the CLI
writes them (the field names of ../shared/reference's transcripts and streams: `stop_hook_summary`
with `hookErrors` / `preventedContinuation` / `stopReason`, the `informational` system record with
`preventContinuation`, the stream-json `notification` with its `key`, `hook_response` with its
`exit_code` and `outcome`); no shared file holds a failed or blocking hook, so these do."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from skillgrad.config import TraceConfig
from skillgrad.traces.claude import load_session, steps_from_events
from skillgrad.traces.show import TraceShow, show_trace
from skillgrad.traces.steps import TraceCaps, TraceStep, is_session_note
from skillgrad.traces.view import render_view
from skillgrad.traces.view_read import read_view

SESSION = "e9fb405b-169f-40eb-9396-7e75076f045d"
NON_BLOCKING = "Failed with non-blocking status code: /bin/sh: 1: codemie: not found"


def record(kind: str, uuid: str, parent: str | None, **fields: Any) -> dict[str, Any]:
    """A ~/.claude/projects transcript line (CLI 2.1), as the real files write one."""
    return {
        "parentUuid": parent,
        "isSidechain": False,
        "userType": "external",
        "cwd": "/Users/User/repo/app",
        "sessionId": SESSION,
        "version": "2.1.39",
        "gitBranch": "main",
        "type": kind,
        "uuid": uuid,
        "timestamp": "2026-01-14T19:20:03.207Z",
        **fields,
    }


def prompt(uuid: str, parent: str | None, text: str, **fields: Any) -> dict[str, Any]:
    return record("user", uuid, parent, message={"role": "user", "content": text}, **fields)


def answer(uuid: str, parent: str, text: str) -> dict[str, Any]:
    message = {
        "model": "claude-sonnet-4-5-20250929",
        "id": f"msg_{uuid}",
        "type": "message",
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
    }
    return record("assistant", uuid, parent, message=message, requestId=f"req_{uuid}")


def stop_summary(
    uuid: str, parent: str, errors: list[str], prevented: bool, reason: str = ""
) -> dict[str, Any]:
    return record(
        "system",
        uuid,
        parent,
        slug="adaptive-imagining-grove",
        subtype="stop_hook_summary",
        hookCount=1,
        hookInfos=[{"command": "codemie hook"}],
        hookErrors=errors,
        preventedContinuation=prevented,
        stopReason=reason,
        hasOutput=bool(errors),
        level="suggestion",
        toolUseID="07b0d798-5f1d-484a-9250-9fd3310531a9",
    )


def informational(uuid: str, parent: str, content: str) -> dict[str, Any]:
    return record(
        "system", uuid, parent, subtype="informational", content=content, isMeta=False, level="warning",
        preventContinuation=True,
    )  # fmt: skip


def first_turn() -> list[dict[str, Any]]:
    return [prompt("u1", None, "Add a --json flag to the CLI."), answer("a1", "u1", "Added the --json flag.")]


def header(session: Any) -> str:
    return show_trace(session, TraceConfig(), TraceShow()).splitlines()[0]


def test_a_non_blocking_stop_hook_error_is_a_hook_error_step_not_a_block(tmp_path: Path) -> None:
    rows = [*first_turn(), stop_summary("s1", "a1", [NON_BLOCKING], prevented=False)]
    session = load_session(write(tmp_path, rows))
    assert session.steps[-1] == TraceStep("text", f"stop hook error: {NON_BLOCKING}", "hook", is_error=True)
    assert not any(s.kind == "user" for s in session.steps)  # not a user turn, not "stop hook blocked"
    assert session.status == "finished" and session.final_answer == "Added the --json flag."
    assert session.evidence == "the final answer, then a stop_hook_summary record"
    assert header(session).startswith("# session: 2 steps, 1 error, finished")
    view = render_view(session.steps)
    assert f"2. [text hook ERROR] stop hook error: {NON_BLOCKING}" in view
    assert read_view(view, session.steps).errors == 1
    assert {"kind": "text", "text": f"stop hook error: {NON_BLOCKING}", "tool": "hook", "is_error": True} in [
        s.to_json() for s in session.steps
    ]


def test_a_blocking_stop_hook_is_a_block_and_ends_the_session(tmp_path: Path) -> None:
    reason = "uncommitted changes: commit them first"
    rows = [*first_turn(), stop_summary("s1", "a1", [], prevented=True, reason=reason)]
    session = load_session(write(tmp_path, rows))
    block = TraceStep("user", f"stop hook prevented continuation: {reason}", "hook")
    assert session.steps[-1] == block and session.status == "finished"
    assert session.evidence == f"a hook stopped the turn: stop hook prevented continuation: {reason}"
    quiet = load_session(write(tmp_path, [*first_turn(), stop_summary("s1", "a1", [], prevented=False)]))
    assert [s.kind for s in quiet.steps] == ["text"]  # a hook that ran fine leaves no step


def test_a_prompt_stopped_by_a_hook_is_an_ending_not_a_gap(tmp_path: Path) -> None:
    """The follow-up, the CLI's meta "Operation stopped by hook: ..." user record, then the
    `informational` record with preventContinuation: the session ended there, on one hook step."""
    said = "Operation stopped by hook: Another session is active in this repository"
    rows = [
        *first_turn(),
        prompt("u2", "a1", "Now add a --yaml flag."),
        prompt("u3", "u2", said, isMeta=True),
        informational("i1", "u3", said),
    ]
    session = load_session(write(tmp_path, rows))
    assert [(s.kind, s.tool, s.text) for s in session.steps[1:]] == [
        ("user", "follow-up", "Now add a --yaml flag."),
        ("user", "hook", said),
    ]
    assert session.status == "finished" and not any(is_session_note(s) for s in session.steps)
    assert session.evidence == f"a hook stopped the last prompt: {said}"
    assert (
        header(session) == f"# session: 3 steps, 0 errors, finished (a hook stopped the last prompt: {said})"
    )
    # the CLI's user record alone (no informational record) says the same
    alone = load_session(write(tmp_path, rows[:-1]))
    assert alone.status == "finished" and alone.evidence.startswith("a hook stopped the last prompt")
    # and without the hook, the same follow-up is a message never answered
    asked = load_session(write(tmp_path, rows[:-2]))
    assert asked.status == "unfinished" and asked.evidence == "the last user message was never answered"


def test_a_prompt_blocked_by_a_user_prompt_submit_hook(tmp_path: Path) -> None:
    """A blocking UserPromptSubmit hook erases the prompt: only the informational record tells."""
    said = "UserPromptSubmit operation blocked by hook:\n[guard.sh]: secrets\n\n\nOriginal prompt: x"
    session = load_session(write(tmp_path, [*first_turn(), informational("i1", "a1", said)]))
    assert session.steps[-1] == TraceStep("user", said, "hook")
    view = render_view(session.steps)
    assert "2. [user hook] UserPromptSubmit operation blocked by hook: ⏎ [guard.sh]: secrets" in view
    assert session.status == "finished" and session.evidence.startswith("a hook stopped the turn: UserPrompt")


def test_stream_json_hook_errors_are_steps_once() -> None:
    """`claude -p` writes no stop_hook_summary: its `stop-hook-error` notification is the hook
    error step; after a summary that holds the errors it adds nothing. A failed hook_response too."""
    init = {"type": "system", "subtype": "init", "session_id": "s1", "tools": ["Bash"]}
    started = {
        "type": "system", "subtype": "hook_response", "hook_id": "h1", "hook_name": "SessionStart:startup",
        "hook_event": "SessionStart", "output": "", "stdout": "", "stderr": "setup.sh: not found",
        "exit_code": 127, "outcome": "error", "uuid": "u0", "session_id": "s1",
    }  # fmt: skip
    said = {
        "type": "assistant",
        "message": {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
    }
    notice = {
        "type": "system", "subtype": "notification", "key": "stop-hook-error",
        "text": "Stop hook error occurred", "priority": "immediate", "uuid": "n1", "session_id": "s1",
    }  # fmt: skip
    result = {"type": "result", "subtype": "success", "is_error": False, "result": "Done.", "num_turns": 1}
    session = steps_from_events([init, started, said, notice, result])
    assert [(s.kind, s.tool, s.is_error, s.text) for s in session.steps] == [
        ("text", "hook", True, "SessionStart:startup hook failed (exit code 127): setup.sh: not found"),
        ("text", None, False, "Done."),
        ("text", "hook", True, "Stop hook error occurred"),
    ]
    assert session.final_answer == "Done." and session.status == "finished"
    summary = {"type": "system", "subtype": "stop_hook_summary", "hookErrors": [NON_BLOCKING]}
    both = steps_from_events([init, said, summary, notice, result])
    assert [s.text for s in both.steps if s.tool == "hook"] == [f"stop hook error: {NON_BLOCKING}"]


def test_the_closing_note_is_no_error_of_the_header(tmp_path: Path) -> None:
    rows = [*first_turn(), prompt("u2", "a1", "Now add a --yaml flag.")]
    session = load_session(write(tmp_path, rows))
    assert session.status == "unfinished" and is_session_note(session.steps[-1])
    assert session.steps[-1].is_error  # every view keeps it and says why
    assert header(session).startswith("# session: 3 steps, 0 errors, unfinished (the last user message")


def test_pasted_content_is_shown_as_what_was_pasted(tmp_path: Path) -> None:
    traceback = 'Traceback (most recent call last):\n  File "app.py"'
    pasted = f'<pasted_content id="482f">\n{traceback}\n</pasted_content id="482f">'
    rows = [
        *first_turn(),
        prompt("u2", "a1", f"It fails:\n\n{pasted}\n\nfix it"),
        answer("a2", "u2", "Fixed."),
    ]
    session = load_session(write(tmp_path, rows))
    follow = next(s for s in session.steps if s.tool == "follow-up")
    assert follow.text == 'It fails:\n\nTraceback (most recent call last):\n  File "app.py"\n\nfix it'
    closed = pasted.replace('</pasted_content id="482f">', "</pasted_content>")  # either closing tag
    rows[2] = prompt("u2", "a1", closed)
    assert "pasted_content" not in render_view(load_session(write(tmp_path, rows)).steps)


def test_trace_prints_the_header_inside_its_budget(tmp_path: Path) -> None:
    """`--budget N` prints at most N characters, the header included; a header longer than half of
    it is cut, and the lines that do not fit are counted."""
    main = write(tmp_path, [*first_turn(), stop_summary("s1", "a1", [NON_BLOCKING], prevented=False)])
    strays = []
    for i in range(12):
        stray = tmp_path / f"agent-a{i}.jsonl"
        row = {**prompt(f"x{i}", None, "Map it."), "isSidechain": True, "agentId": f"a{i}"}
        stray.write_text(
            json.dumps(row)
            + "\n"
            + json.dumps({**answer(f"y{i}", f"x{i}", "Mapped."), "isSidechain": True, "agentId": f"a{i}"})
            + "\n",
            encoding="utf-8",
        )
        strays.append(str(stray))
    for budget in (400, 1000, 4000):
        run = [sys.executable, "-m", "skillgrad.cli", "trace", str(main), *strays, "--budget", str(budget)]
        out = subprocess.run(run, capture_output=True, text=True, timeout=60).stdout.rstrip("\n")
        assert len(out) <= budget, budget
        lines = out.splitlines()
        assert lines[0].startswith("# session: 2 steps, 1 error, finished")
        assert lines[-1] == f"2. [text hook ERROR] stop hook error: {NON_BLOCKING}"
        warned = [line for line in lines if line.startswith("# warning: agent file agent-a")]
        if len(warned) < 12:
            assert any(line.startswith("# ... ") and "more header line" in line for line in lines), budget


def write(tmp_path: Path, rows: list[dict[str, Any]]) -> Path:
    path = tmp_path / "session.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_hook_steps_fit_every_view() -> None:
    steps = steps_from_events(
        [{"type": "system", "subtype": "stop_hook_summary", "hookErrors": ["x" * 5000]}]
    ).steps
    for budget in (100, 600, 4000):
        view = render_view(steps, TraceCaps(total_chars=budget))
        assert len(view) <= budget and read_view(view, steps).problems == []


def attachment(uuid: str, parent: str, **fields: Any) -> dict[str, Any]:
    """A later 2.1 transcript's `attachment` record (the CLI writes hook outcomes as these)."""
    return record("attachment", uuid, parent, attachment=fields)


def test_hook_attachments_of_later_transcripts(tmp_path: Path) -> None:
    """2.1.2xx writes `hook_non_blocking_error` / `hook_blocking_error` / `hook_stopped_continuation`
    attachments: an error, a block, a block that ended the session."""
    edit = {
        "type": "tool_use",
        "id": "toolu_01",
        "name": "Write",
        "input": {"file_path": "pom.xml", "content": "x"},
    }
    wrote = answer("a2", "u1", "")
    wrote["message"]["content"] = [edit]
    done = {"type": "tool_result", "tool_use_id": "toolu_01", "content": "File created successfully"}
    outdated = "Failed with non-blocking status code: outdated dependencies, use these versions instead"
    rows = [
        prompt("u1", None, "Add the json dependency."),
        wrote,
        attachment("h1", "a2", type="hook_non_blocking_error", hookName="PreToolUse:Write",
                   toolUseID="toolu_01", hookEvent="PreToolUse", stderr=outdated, stdout="", exitCode=1,
                   command="yul", durationMs=5349),
        prompt("u2", "h1", [done]),
        attachment("h2", "u2", type="hook_blocking_error", hookName="PostToolUse:Write", toolUseID="toolu_01",
                   hookEvent="PostToolUse", blockingError={"blockingError": "[lint.sh]: style violation",
                                                           "command": "lint.sh"}),
        answer("a3", "h2", "Fixed the style."),
        attachment("h3", "a3", type="hook_stopped_continuation", message="budget reached", hookName="Stop",
                   toolUseID="t", hookEvent="Stop"),
    ]  # fmt: skip
    session = load_session(write(tmp_path, rows))
    assert [(s.kind, s.tool, s.is_error, s.text) for s in session.steps] == [
        ("tool_call", "Write", False, "pom.xml (1 line, 1 chars)"),
        ("text", "hook", True, f"PreToolUse:Write hook error: {outdated}"),
        ("tool_result", "Write", False, "File created successfully"),
        ("user", "hook", False, "PostToolUse:Write hook blocked: [lint.sh]: style violation"),
        ("text", None, False, "Fixed the style."),
        ("user", "hook", False, "Stop hook stopped the session: budget reached"),
    ]
    assert session.status == "finished"
    assert session.evidence == "a hook stopped the turn: Stop hook stopped the session: budget reached"


@pytest.mark.parametrize("order", ["attachment, feedback, summary", "summary, feedback", "feedback, summary"])
def test_a_stop_hook_block_is_one_step_whichever_records_say_it(tmp_path: Path, order: str) -> None:
    """A Stop hook that blocked: its attachment, the "Stop hook feedback" message the agent reads
    and the summary that lists it again (in the order the CLI version writes them) are one block,
    never also an error; the agent's answer after it ends the session."""
    said = "no audit record yet: add one before you stop"
    forms = {
        "attachment": attachment("h1", "a1", type="hook_blocking_error", hookName="Stop", hookEvent="Stop",
                                 blockingError={"blockingError": said, "command": "check-audit-stop.sh"}),
        "feedback": prompt("u2", "a1", f"Stop hook feedback:\n{said}", isMeta=True),
        "summary": stop_summary("s1", "a1", [said], prevented=False),
    }  # fmt: skip
    rows = [
        *first_turn(),
        *(forms[f] for f in order.split(", ")),
        answer("a2", "u2", "Added the audit record."),
    ]
    session = load_session(write(tmp_path, rows))
    hooks = [(s.kind, s.is_error) for s in session.steps if s.tool == "hook"]
    assert hooks == [("user", False)], [s.text for s in session.steps]
    assert session.status == "finished" and session.final_answer == "Added the audit record."
