"""Made-up edge cases of session files and the budgeted view: what a cut, odd or hostile file holds."""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from skillgrad.errors import UserError
from skillgrad.traces.claude import load_session, steps_from_events
from skillgrad.traces.steps import TraceCaps, TraceStep
from skillgrad.traces.view import render_view
from skillgrad.traces.view_read import read_view

INIT = {"type": "system", "subtype": "init", "session_id": "s1", "tools": ["Bash"]}


def assistant(*blocks: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "assistant", "message": {"role": "assistant", "content": list(blocks)}, **extra}


def call(tool_id: str, command: str) -> dict[str, Any]:
    return assistant({"type": "tool_use", "id": tool_id, "name": "Bash", "input": {"command": command}})


def result_of(tool_id: str, content: Any, is_error: bool = False) -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": tool_id, "content": content, "is_error": is_error}
    return {"type": "user", "message": {"role": "user", "content": [block]}}


def say(text: str) -> dict[str, Any]:
    return assistant({"type": "text", "text": text})


def done(text: str, **extra: Any) -> dict[str, Any]:
    record = {"type": "result", "subtype": "success", "is_error": False, "terminal_reason": "completed"}
    return {**record, "result": text, **extra}


RUN = [
    INIT,
    say("Looking."),
    call("t1", "ls"),
    result_of("t1", "a.txt"),
    say("Found a.txt."),
    done("Found a.txt."),
]


def write_lines(path: Path, records: list[dict[str, Any]], *, newline: str = "\n") -> Path:
    path.write_text("".join(json.dumps(r) + newline for r in records), encoding="utf-8", newline="")
    return path


def test_bom_crlf_and_partial_first_line(tmp_path: Path) -> None:
    bom = tmp_path / "bom.jsonl"
    bom.write_bytes(b"\xef\xbb\xbf" + write_lines(tmp_path / "x", RUN, newline="\r\n").read_bytes())
    assert load_session(bom).final_answer == "Found a.txt."
    tail = tmp_path / "tail.jsonl"  # the tail of a longer file: its first line starts mid-record
    tail.write_text('ult": "cut", "is_error": false}\n' + "".join(json.dumps(r) + "\n" for r in RUN[1:]))
    session = load_session(tail)
    assert session.finished and [s.kind for s in session.steps] == [
        "text",
        "tool_call",
        "tool_result",
        "text",
    ]


def test_pretty_printed_document_and_array(tmp_path: Path) -> None:
    pretty = tmp_path / "out.json"  # `claude -p --output-format json`: one result object
    pretty.write_text(json.dumps(done("42", usage={"input_tokens": 5, "output_tokens": 1}), indent=2))
    session = load_session(pretty)
    assert session.final_answer == "42" and session.finished and session.usage is not None
    array = tmp_path / "all.json"  # `--output-format json --verbose`: every record in one array
    array.write_text(json.dumps(RUN, indent=2))
    assert load_session(array).final_answer == "Found a.txt."
    one_line_array = tmp_path / "line.json"
    one_line_array.write_text(json.dumps(RUN))
    assert len(load_session(one_line_array).steps) == 4


def test_not_a_session_is_one_line_error(tmp_path: Path) -> None:
    junk = tmp_path / "junk.jsonl"
    junk.write_text("hello\nworld\n")
    with pytest.raises(
        UserError, match=r"junk.jsonl: no Claude Code session records found \(line 1 is not JSON\)"
    ):
        load_session(junk)
    binary = tmp_path / "bin.jsonl"
    binary.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(UserError, match="no Claude Code session records"):
        load_session(binary)


def test_lone_surrogate_is_replaced_never_raised(tmp_path: Path) -> None:
    path = tmp_path / "emoji.jsonl"
    raw = "\n".join(json.dumps(r) for r in RUN[:3])
    # Claude Code cut an emoji in half: the escape of a lone high surrogate, in a tool result and text
    raw += '\n{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1",'
    raw += '"content":"party \\ud83c done"}]}}\n{"type":"assistant","message":{"content":[{"type":"text",'
    raw += '"text":"ok \\udfff"}]}}\n'
    path.write_text(raw)
    session = load_session(path)
    assert session.steps[2].text.startswith("party \ufffd done") and "\ufffd" in session.final_answer
    view = render_view(session.steps)
    view.encode("utf-8")  # would raise on a lone surrogate
    assert "\ufffd" in view


def test_cp1252_stdout_does_not_crash(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "s.jsonl", [INIT, say("multi\nline ✓ 日本"), done("multi\nline ✓ 日本")])
    env = {**os.environ, "PYTHONIOENCODING": "cp1252"}
    proc = subprocess.run(
        [sys.executable, "-m", "skillgrad.cli", "trace", str(path)], capture_output=True, env=env, timeout=60
    )
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    assert b"1. [text] multi ? line ? ??" in proc.stdout  # shown with replacements, not a traceback


def test_old_cli_error_subtype_without_terminal_reason_is_a_failure() -> None:
    old = {"type": "result", "subtype": "error_max_turns", "is_error": False, "num_turns": 3}
    session = steps_from_events([INIT, say("Trying."), old])
    assert session.is_error and session.finished and session.steps[-1].is_error
    assert "error_max_turns" in session.steps[-1].text


def test_appended_runs_yield_the_last_run(tmp_path: Path) -> None:
    second = [
        INIT,
        say("Second run."),
        call("t9", "pwd"),
        result_of("t9", "/w"),
        say("In /w."),
        done("In /w."),
    ]
    path = write_lines(tmp_path / "two.jsonl", RUN + second)
    session = load_session(path)
    assert session.runs == 2 and session.final_answer == "In /w."
    assert [s.text for s in session.steps] == ["Second run.", "pwd", "/w", "In /w."]
    # a second run cut off: the file's answer is not the first run's
    cut = load_session(write_lines(tmp_path / "cut.jsonl", RUN + second[:3]))
    assert cut.final_answer == "Second run." and cut.is_error and not cut.finished


def test_trace_command_modes(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "s.jsonl", RUN)
    run = [sys.executable, "-m", "skillgrad.cli", "trace", str(path)]
    as_json = subprocess.run([*run, "--json"], capture_output=True, text=True, timeout=60)
    steps = [json.loads(line) for line in as_json.stdout.splitlines()]
    assert [s["kind"] for s in steps] == ["text", "tool_call", "tool_result", "text"]
    full = subprocess.run([*run, "--full"], capture_output=True, text=True, timeout=60).stdout
    assert full.splitlines()[0] == "# session: 4 steps, 0 errors, finished (result record: success)"
    assert "4. [text] Found a.txt." in full
    small = subprocess.run([*run, "--budget", "60"], capture_output=True, text=True, timeout=60).stdout
    assert len(small.split("\n", 1)[1].rstrip("\n")) <= 60
    bad = subprocess.run([*run, "--budget", "0"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--budget 0" in bad.stderr


def random_steps(rng: random.Random, n: int) -> list[TraceStep]:
    kinds = ["text", "tool_call", "tool_result", "user"]
    steps = []
    for i in range(n):
        kind = rng.choice(kinds)
        text = rng.choice(["ok", "Permission denied", "x" * rng.randint(0, 900), f"line {i}\nnext"])
        agent = rng.choice([None, None, None, "Explore (look around)"])
        steps.append(
            TraceStep(kind, text, "Bash" if "tool" in kind else None, rng.random() < 0.2, agent, str(i))
        )
    return steps


@pytest.mark.parametrize("seed", range(30))
def test_view_never_exceeds_its_budget_and_is_deterministic(seed: int) -> None:
    rng = random.Random(seed)
    steps = random_steps(rng, rng.randint(1, 400))
    for budget in (40, 200, 1000, 4000, 20000):
        view = render_view(steps, TraceCaps(total_chars=budget))
        assert len(view) <= budget
        assert view == render_view(list(steps), TraceCaps(total_chars=budget))
    roomy = render_view(steps, TraceCaps(total_chars=10**7))
    assert "hidden" not in roomy  # everything fits: nothing is hidden


def test_repeated_errors_collapse_with_count_and_gaps_say_what_they_hide() -> None:
    steps = [TraceStep("text", "Plan: push the branch.")]
    for i in range(10):  # one command retried, failing the same way every time
        steps.append(TraceStep("tool_call", "git push origin main", "Bash", ref=f"c{i}"))
        steps.append(TraceStep("tool_result", "This command requires approval", "Bash", True, ref=f"c{i}"))
    steps += [TraceStep("tool_call", f"cat f{i}", "Bash") for i in range(30)]
    steps.append(TraceStep("text", "I could not push."))
    view = render_view(steps, TraceCaps(total_chars=600))
    assert (
        "steps 2-21: 10x [tool_call Bash] git push origin main -> ERROR This command requires approval"
        in view
    )
    gaps = [line for line in view.splitlines() if line.startswith("[... ")]
    assert len(gaps) == 1 and re.fullmatch(r"\[\.\.\. \d+ steps, \d+ chars hidden \.\.\.\]", gaps[0])
    assert view.splitlines()[-1] == "52. [text] I could not push."


def test_different_commands_failing_alike_keep_a_line_each_narrowed_before_dropped() -> None:
    """Four `mix test` commands whose outputs share their first lines are four failures: each keeps
    its own line with its own text; the agent's words between them are never folded away."""
    head = "Exit code 2\nGetting extensions ... done\nCompiling 3 files (.ex)\nGenerated app\n" + (
        "warning: variable conn is unused (lib/app_web/router.ex)\n" * 3
    )
    steps = [TraceStep("text", "Running the failing tests one by one.")]
    for i, (target, tail) in enumerate(
        [("test/a_test.exs", "2 of 12 fail: a_1, a_2"), ("test/b_test.exs", "1 of 12 fail: b_4"),
         ("test/c_test.exs:40", "1 of 12 fail: c_9"), ("test/d_test.exs", "3 of 12 fail: d_1, d_2, d_7")]
    ):  # fmt: skip
        steps.append(TraceStep("tool_call", f"mix test {target}", "Bash", ref=f"m{i}"))
        steps.append(TraceStep("tool_result", head + tail, "Bash", True, ref=f"m{i}"))
        steps.append(TraceStep("text", f"{10 + i % 2} of 12 pass; next file."))
    steps += [TraceStep("tool_call", f"cat lib/f{i}.ex", "Bash") for i in range(40)]
    steps.append(TraceStep("text", "Three suites still fail."))
    for budget in (4000, 1500, 900):
        view = render_view(steps, TraceCaps(total_chars=budget))
        account = read_view(view, steps)
        assert account.problems == [] and account.errors_collapsed == 0
        assert not any(line.startswith("steps ") for line in view.splitlines())
        assert account.errors_shown == {3, 6, 9, 12}, budget  # narrowed, never dropped here
        for i, target in enumerate(["test/a_test.exs", "test/b_test.exs", "test/c_test.exs:40"]):
            assert f"{3 * i + 2}-{3 * i + 3}. [tool_call Bash] mix test {target}" in view
            assert f"{3 * i + 4}. [text] 1" in view  # the agent's words after each failure
    tight = render_view(steps, TraceCaps(total_chars=400))  # too tight: counted, not lost
    assert read_view(tight, steps).errors == 4


def test_summaries_say_what_each_call_did() -> None:
    from skillgrad.traces.summaries import summarize_tool_input as summary

    assert summary("Bash", {"command": "git push\n--force", "run_in_background": True}) == (
        "git push --force (in background)"
    )
    assert summary("Read", {"file_path": "a.py", "offset": 10, "limit": 5}) == "a.py offset=10 limit=5"
    assert summary("Edit", {"file_path": "a.py", "old_string": "x" * 12, "new_string": "y"}) == (
        "a.py (replace 12 chars with 1)"
    )
    edits = [{"old_string": "ab", "new_string": "abc"}, {"old_string": "c", "new_string": ""}]
    assert summary("MultiEdit", {"file_path": "b.ts", "edits": edits}) == "b.ts (2 edits: 3 chars -> 3)"
    todos = [
        {"content": "Port module", "status": "completed", "activeForm": "Porting"},
        {"content": "Run tests", "status": "in_progress", "activeForm": "Running"},
        {"content": "Commit", "status": "pending", "activeForm": "Committing"},
    ]
    assert (
        summary("TodoWrite", {"todos": todos})
        == "3 todos, 1 done: [x] Port module; [>] Run tests; [ ] Commit"
    )
    task = {"description": "Explore the code", "subagent_type": "Explore", "prompt": "p" * 300}
    assert summary("Task", task) == "Explore: Explore the code (prompt 300 chars)"
    ask = {"questions": [{"question": "Skip the hook?", "options": [{"label": "Yes"}, {"label": "No"}]}]}
    assert summary("AskUserQuestion", ask) == "Skip the hook? [Yes | No]"
    assert (
        summary("WebFetch", {"url": "https://x.org", "prompt": "list tools"}) == "https://x.org (list tools)"
    )
    assert summary("WebSearch", {"query": "credo igniter"}) == "credo igniter"
    assert summary("mcp__github__create_issue", {"title": "Bug", "body": "b" * 200}) == (
        "github/create_issue title=Bug body=<200 chars>"
    )
    assert summary("TodoWrite", {"todos": "not a list"}) == "0 todos, 0 done:"  # odd shapes never raise
    assert summary("Edit", ["odd"]) == '["odd"]'


def test_stream_json_subagent_steps_are_attributed_and_report_appears_once() -> None:
    task_call = assistant(
        {
            "type": "tool_use",
            "id": "task1",
            "name": "Task",
            "input": {"subagent_type": "Explore", "description": "map it", "prompt": "Map the repo."},
        }  # noqa: E501
    )
    inner_call = call("sub1", "ls -R")
    inner_call["parent_tool_use_id"] = "task1"
    inner_result = result_of("sub1", "src/\ntests/")
    inner_result["parent_tool_use_id"] = "task1"
    report = say("The repo has src and tests.")
    report["parent_tool_use_id"] = "task1"
    events = [INIT, task_call, inner_call, inner_result, report]
    events += [
        result_of("task1", [{"type": "text", "text": "The repo has src and tests."}]),
        say("Done."),
        done("Done."),
    ]
    session = steps_from_events(events)
    assert [(s.kind, s.agent) for s in session.steps] == [
        ("tool_call", None),
        ("tool_call", "Explore (map it)"),
        ("tool_result", "Explore (map it)"),
        ("tool_result", None),
        ("text", None),
    ]
    assert [s.text for s in session.steps].count("The repo has src and tests.") == 1
    assert "[tool_call Bash @Explore (map it)] ls -R" in render_view(session.steps)


def test_follow_ups_interrupts_and_hook_feedback_become_user_steps() -> None:
    def user(content: Any, **extra: Any) -> dict[str, Any]:
        return {"type": "user", "message": {"role": "user", "content": content}, **extra}

    events = [
        user("Fix the bug."),  # the first prompt: not a step
        say("Looking."),
        user([{"type": "text", "text": "[Request interrupted by user]"}]),
        user("Use the other file instead."),
        user("Stop hook feedback:\nUncommitted changes", isMeta=True),
        user("<command-name>/compact</command-name>\n<command-args></command-args>"),
        user("<local-command-stdout></local-command-stdout>"),  # empty output says nothing
        say("Done."),
    ]
    steps = steps_from_events(events).steps
    users = [(s.tool, s.text) for s in steps if s.kind == "user"]
    assert users == [
        ("interrupt", "Request interrupted by user"),
        ("follow-up", "Use the other file instead."),
        ("hook", "Stop hook feedback:\nUncommitted changes"),
        ("command", "/compact"),
    ]


def random_value(rng: random.Random, depth: int = 0) -> Any:
    choices: list[Any] = [None, True, 3, -1.5, "", "x", "\ud83c", "Task", "Bash", "tool_use", "user", "text"]
    if depth < 3:
        choices += [[random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]]
        choices += [{k: random_value(rng, depth + 1) for k in rng.sample(FIELDS, rng.randint(0, 4))}]
    return rng.choice(choices)


FIELDS = [
    "type", "message", "content", "role", "text", "id", "name", "input", "tool_use_id", "is_error",
    "isSidechain", "parentUuid", "uuid", "parent_tool_use_id", "isMeta", "data", "subtype", "result",
    "agentId", "parentToolUseID", "sessionId", "terminal_reason", "usage", "todos", "prompt",
    "toolUseResult", "operation", "stop_reason", "hookErrors", "preventedContinuation",
    "preventContinuation", "stopReason", "key", "exit_code", "outcome", "hook_name", "level",
]  # fmt: skip


@pytest.mark.parametrize("seed", range(20))
def test_any_record_shape_parses_without_raising(seed: int) -> None:
    rng = random.Random(seed)
    events = []
    for _ in range(200):
        record = {k: random_value(rng) for k in rng.sample(FIELDS, rng.randint(1, 8))}
        record["type"] = rng.choice(
            ["assistant", "user", "system", "result", "progress", "queue-operation", None]
        )
        if record["type"] == "system" and rng.random() < 0.5:
            record["subtype"] = rng.choice(
                ["stop_hook_summary", "informational", "notification", "hook_response", "local_command"]
            )
        if rng.random() < 0.5:
            blocks = [
                {
                    "type": rng.choice(["text", "tool_use", "tool_result", "thinking"]),
                    **{k: random_value(rng) for k in rng.sample(FIELDS, 3)},
                }
                for _ in range(rng.randint(0, 3))
            ]
            record["message"] = {"role": "assistant", "content": blocks}
        events.append(record)
    session = steps_from_events(events)
    view = render_view(session.steps, TraceCaps(total_chars=1000))
    assert len(view) <= 1000
    view.encode("utf-8")


def test_trace_command_says_the_evidence_and_warns_of_an_unmatched_agent_file(tmp_path: Path) -> None:
    main = write_lines(tmp_path / "s.jsonl", RUN)
    stray = {
        "type": "user",
        "isSidechain": True,
        "agentId": "a77",
        "parentUuid": None,
        "message": {"role": "user", "content": "Map it."},
    }  # noqa: E501
    agent = write_lines(
        tmp_path / "agent-a77.jsonl", [stray, {**say("Mapped."), "isSidechain": True, "agentId": "a77"}]
    )
    run = [sys.executable, "-m", "skillgrad.cli", "trace", str(main), str(agent)]
    view = subprocess.run(run, capture_output=True, text=True, timeout=60)
    header = view.stdout.splitlines()[:2]
    assert header == [
        "# session: 4 steps, 0 errors, finished (result record: success)",
        "# warning: agent file agent-a77.jsonl (agentId a77) matches no Task call of this session: "
        "left out (1 step)",
    ]
    as_json = subprocess.run([*run, "--json"], capture_output=True, text=True, timeout=60)
    assert "warning: agent file agent-a77.jsonl" in as_json.stderr and as_json.returncode == 0
    alone = subprocess.run(run[:4] + [str(agent)], capture_output=True, text=True, timeout=60).stdout
    assert alone.splitlines()[1].startswith(
        "# note: this is the file of subagent a77, read without its main session"
    )
