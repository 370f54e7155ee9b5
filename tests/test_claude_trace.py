"""Claude Code session records -> TraceSteps -> capped text (skillgrad/traces/claude.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from skillgrad.errors import UserError
from skillgrad.traces.claude import load_session, load_trace_file, steps_from_events
from skillgrad.traces.steps import TraceCaps, TraceStep
from skillgrad.traces.summaries import summarize_tool_input
from skillgrad.traces.view import render_steps

FIXTURES = Path(__file__).parent / "fixtures" / "claude_code"
REFERENCE = Path(__file__).resolve().parents[2] / "shared" / "reference" / "claude-code"
needs_reference = pytest.mark.skipif(
    not REFERENCE.is_dir(), reason="reference captures not present (../shared)"
)


def kinds(steps: list[TraceStep]) -> list[tuple[str, str | None, bool]]:
    return [(s.kind, s.tool, s.is_error) for s in steps]


def assistant(*blocks: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "assistant", "message": {"role": "assistant", "content": list(blocks)}, **extra}


def tool_result(content: Any, *, is_error: bool = False, tool_use_id: str = "t1") -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": tool_use_id, "content": content, "is_error": is_error}
    return {"type": "user", "message": {"role": "user", "content": [block]}}


def result(text: str | None = "done", **extra: Any) -> dict[str, Any]:
    base = {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "terminal_reason": "completed",
        "result": text,
        "total_cost_usd": 0.5,
        "usage": {"input_tokens": 100, "output_tokens": 20, "cache_read_input_tokens": 50},
        "modelUsage": {"claude-sonnet-4-5": {"costBasis": "list"}},
    }
    return {**base, **extra}


TOOL_SESSION: list[dict[str, Any]] = [
    {"type": "system", "subtype": "init", "tools": ["Bash"]},
    {"type": "system", "subtype": "thinking_tokens", "estimated_tokens": 14},
    assistant({"type": "thinking", "thinking": "secret plan", "signature": "s"}),
    assistant({"type": "text", "text": "Checking."}),
    assistant(
        {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls\n-la", "description": "x"}}
    ),
    {"type": "stream_event", "event": {"type": "content_block_delta"}},
    tool_result(
        [{"type": "text", "text": "a.txt"}, {"type": "image", "source": {}}, {"type": "text", "text": "b"}]
    ),
    {"type": "rate_limit_event", "rate_limit_info": {}},
    {"type": "brand_new_kind", "payload": 1},
    assistant({"type": "text", "text": "done"}),
    result("done"),
]


def test_tool_session_steps_and_final_answer_once() -> None:
    session = steps_from_events(TOOL_SESSION)
    assert kinds(session.steps) == [
        ("text", None, False),
        ("tool_call", "Bash", False),
        ("tool_result", "Bash", False),
        ("text", None, False),
    ]
    assert session.steps[1].text == "ls -la"  # one line; the description is left out
    assert session.steps[2].text == "a.txt\n[image]\nb"  # list content: the text parts
    assert [s.text for s in session.steps].count("done") == 1
    assert "secret plan" not in render_steps(session.steps)
    assert session.final_answer == "done" and not session.is_error
    assert session.terminal_reason == "completed"
    assert session.usage is not None and session.usage.input_tokens == 150
    assert session.usage.output_tokens == 20 and session.usage.cost_usd == 0.5


def test_result_text_not_seen_before_becomes_one_step() -> None:
    session = steps_from_events([assistant({"type": "text", "text": "Working."}), result("42")])
    assert [s.text for s in session.steps] == ["Working.", "42"] and session.final_answer == "42"


def test_error_results_are_marked_and_read_from_is_error_and_terminal_reason() -> None:
    max_turns = result(
        None,
        subtype="error_max_turns",
        is_error=True,
        terminal_reason="max_turns",
        errors=["Reached maximum number of turns (1)"],
    )
    session = steps_from_events([assistant({"type": "text", "text": "Trying."}), max_turns])
    assert session.is_error and session.terminal_reason == "max_turns"
    assert session.steps[-1] == TraceStep("text", "Reached maximum number of turns (1)", is_error=True)
    # subtype says success, but the run failed: is_error / terminal_reason decide
    api_error = result("API Error: 500", is_error=True, terminal_reason="api_error")
    session = steps_from_events([api_error])
    assert session.is_error and session.errors == ["API Error: 500"]
    not_completed = result("partial", is_error=False, terminal_reason="aborted")
    assert steps_from_events([not_completed]).is_error


def test_tool_result_string_error_and_unknown_tool_id() -> None:
    session = steps_from_events([tool_result("Exit code 2\nboom", is_error=True, tool_use_id="nope")])
    assert session.steps[0] == TraceStep(
        "tool_result", "Exit code 2\nboom", tool=None, is_error=True, ref="nope"
    )
    assert session.usage is None  # no result record: usage unknown, and the session is unfinished
    assert session.is_error and not session.finished and "no result record" in session.steps[-1].text


def test_cost_unknown_for_non_list_price_models() -> None:
    unknown = result(modelUsage={"qwen-local": {"costBasis": "unknown"}})
    session = steps_from_events([unknown])
    assert session.usage is not None and session.usage.cost_usd is None
    unmarked = result(modelUsage={"claude-opus-4-1": {"costUSD": 1.0}})  # the CLI's default guess
    assert steps_from_events([unmarked]).usage.cost_usd is None  # type: ignore[union-attr]


def test_summaries_are_one_line() -> None:
    assert (
        summarize_tool_input("Write", {"file_path": "/a.txt", "content": "x" * 100})
        == "/a.txt (1 line, 100 chars)"
    )
    assert summarize_tool_input("Grep", {"pattern": "foo", "path": "src"}) == "foo in src"
    assert summarize_tool_input("Custom", {"n": 1}) == "n=1"
    assert "\n" not in summarize_tool_input("Bash", {"command": "a\nb\nc"})


def test_render_caps_and_gap_marker() -> None:
    steps = [TraceStep("tool_result", "r" * 1000, tool="Bash"), TraceStep("text", "t" * 1000)]
    text = render_steps(steps, TraceCaps(tool_result_chars=200, step_chars=500, total_chars=4000))
    assert "r" * 200 + "... [+800 chars]" in text and "t" * 500 + "... [+500 chars]" in text
    many = [TraceStep("text", f"step {i} " + "x" * 300) for i in range(40)]
    capped = render_steps(many, TraceCaps(total_chars=1000))
    assert len(capped) <= 1000 and "steps, " in capped and "chars hidden" in capped
    assert capped.splitlines()[0].startswith("1. [text] step 0") and "40. [text] step 39" in capped


@pytest.mark.parametrize("name", ["cli_tools.stream.jsonl", "session_transcript.jsonl"])
def test_own_captures_stream_json_and_transcript_parse_alike(name: str) -> None:
    steps = load_trace_file(FIXTURES / name)  # the transcript ended: no closing note
    assert kinds(steps) == [
        ("text", None, False),
        ("tool_call", "Bash", False),
        ("tool_result", "Bash", False),
        ("tool_call", "Bash", False),
        ("tool_result", "Bash", True),
        ("tool_call", "Write", False),
        ("tool_result", "Write", False),
        ("tool_call", "Read", False),
        ("tool_result", "Read", False),
        ("text", None, False),
    ]
    assert steps[-1].text == "The answer is 42." and steps[5].text.endswith("(2 lines, 18 chars)")


def test_transcript_status_comes_from_how_it_ends(tmp_path: Path) -> None:
    """A transcript has no result record: it ended when its main thread ends on the answer, and
    is unfinished when it stops mid-turn; the evidence says which."""
    path = FIXTURES / "session_transcript.jsonl"
    session = load_session(path)
    assert session.final_answer == "The answer is 42." and session.usage is None
    assert session.finished and not session.is_error and session.status == "finished"
    assert session.evidence == "the final answer's message says stop_reason end_turn"
    lines = path.read_text(encoding="utf-8").splitlines()
    answer = next(i for i, line in enumerate(lines) if "The answer is 42." in line)
    cut = tmp_path / "cut.jsonl"  # the same transcript, stopped after the last tool result
    cut.write_text("\n".join(lines[:answer]) + "\n", encoding="utf-8")
    stopped = load_session(cut)
    assert not stopped.finished and stopped.is_error and stopped.status == "unfinished"
    assert stopped.steps[-1].is_error and stopped.steps[-1].text == f"session unfinished: {stopped.evidence}"
    assert stopped.evidence.startswith("the last tool result was never answered")


@needs_reference
def test_reference_bash_write_success() -> None:
    session = load_session(REFERENCE / "cli_bash_write_success.stream.jsonl")
    assert kinds(session.steps) == [
        ("text", None, False),
        ("tool_call", "Bash", False),
        ("tool_result", "Bash", False),
        ("text", None, False),
        ("tool_call", "Write", False),
        ("tool_result", "Write", False),
        ("text", None, False),
    ]
    assert session.final_answer == "Done: the command printed hello and I wrote the file."
    assert [s.text for s in session.steps].count(session.final_answer) == 1
    assert session.usage is not None and session.usage.input_tokens == 37971


@needs_reference
def test_reference_tool_error_max_turns_and_json_schema() -> None:
    error = load_session(REFERENCE / "cli_tool_error.stream.jsonl")
    assert [s.is_error for s in error.steps] == [False, False, True, False] and not error.is_error
    max_turns = load_session(REFERENCE / "cli_max_turns.stream.jsonl")
    assert max_turns.is_error and max_turns.terminal_reason == "max_turns"
    assert max_turns.steps[-1].is_error and "maximum number of turns" in max_turns.steps[-1].text
    schema = load_session(REFERENCE / "cli_json_schema.stream.jsonl")
    assert schema.structured_output == {"answer": "hello", "steps": 2}
    assert schema.steps[-2].tool == "StructuredOutput" and schema.steps[-1].kind == "tool_result"
    assert not any(s.kind == "text" and s.text.startswith("{") for s in schema.steps)


@needs_reference
def test_reference_event_examples_never_fail() -> None:
    examples = json.loads((REFERENCE / "event_examples.json").read_text())
    events = [entry["event"] for entry in examples.values()]
    session = steps_from_events(events)  # every kind the CLI emits, in one go: nothing raises
    assert all(s.kind in ("text", "tool_call", "tool_result", "user") for s in session.steps)
    assert any(s.kind == "tool_result" and s.is_error for s in session.steps)


def test_json_array_file_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "raw.json"
    path.write_text(json.dumps(TOOL_SESSION))
    assert len(load_trace_file(path)) == 4


def test_partial_last_line_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "live.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in TOOL_SESSION) + '\n{"type": "assis')
    assert len(load_trace_file(path)) == 4


@pytest.mark.parametrize(
    "content",
    ["hello world\nnot json\n", '{"foo": 1}\n{"bar": 2}\n', "", "[1, 2, 3]"],
    ids=["text", "other-jsonl", "empty", "array-of-numbers"],
)
def test_bad_files_raise_one_line_user_error(tmp_path: Path, content: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    with pytest.raises(UserError) as info:
        load_trace_file(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_missing_and_binary_files_raise_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="not found"):
        load_trace_file(tmp_path / "missing.jsonl")
    binary = tmp_path / "bin.jsonl"
    binary.write_bytes(b"\xff\xfe\x00\x01")
    with pytest.raises(UserError, match="bin.jsonl"):
        load_trace_file(binary)


# -- transcripts (~/.claude/projects): records with parentUuid, no result record --------------------


def entry(kind: str, content: Any = None, **extra: Any) -> dict[str, Any]:
    """One transcript record (a parentUuid marks the ~/.claude/projects form)."""
    record: dict[str, Any] = {"type": kind, "parentUuid": None, "sessionId": "s1", **extra}
    if content is not None:
        record["message"] = {"role": "assistant" if kind == "assistant" else "user", "content": content}
    return record


def text(value: str, **message: Any) -> dict[str, Any]:
    record = entry("assistant", [{"type": "text", "text": value}])
    record["message"].update(message)
    return record


def bash(call_id: str, command: str) -> dict[str, Any]:
    return entry(
        "assistant", [{"type": "tool_use", "id": call_id, "name": "Bash", "input": {"command": command}}]
    )


def answer_of(call_id: str, content: str, **extra: Any) -> dict[str, Any]:
    return entry("user", [{"type": "tool_result", "tool_use_id": call_id, "content": content}], **extra)


PROMPT = entry("user", "Fix the build.")


@pytest.mark.parametrize(
    ("ending", "finished", "evidence"),
    [
        (
            [text("Fixed."), entry("system", subtype="turn_duration")],
            True,
            "the final answer, then a turn_duration record",
        ),
        (
            [text("Fixed.", stop_reason="end_turn")],
            True,
            "the final answer's message says stop_reason end_turn",
        ),
        ([text("Fixed.")], True, "the transcript ends on the agent's answer with no call open"),
        (
            [text("Fixed."), bash("t2", "make")],
            False,
            "the last Bash call never got its result: the transcript",
        ),
        ([answer_of("t1", "ok")], False, "the last tool result was never answered"),
        (
            [text("Fixed."), entry("user", "now run the tests")],
            False,
            "the last user message was never answered",
        ),
        (
            [entry("user", [{"type": "text", "text": "[Request interrupted by user]"}])],
            False,
            "the user interrupted",
        ),
        (
            [text("Fixed."), entry("user", "<command-name>/exit</command-name>")],
            True,
            "the transcript ends on the agent's answer",
        ),
    ],
)
def test_a_transcript_is_finished_or_unfinished_from_evidence(
    ending: list[dict[str, Any]], finished: bool, evidence: str
) -> None:
    session = steps_from_events([PROMPT, bash("t1", "make"), answer_of("t1", "ok"), *ending])
    assert session.finished is finished and session.evidence.startswith(evidence)
    closing = session.steps[-1]
    if finished:
        assert not session.is_error and not closing.is_error
    else:  # one closing error step says why, as the backend expects
        assert (
            session.is_error
            and closing.is_error
            and closing.text == f"session unfinished: {session.evidence}"
        )


def test_stream_json_without_its_result_record_is_cut_off() -> None:
    session = steps_from_events(
        [{"type": "system", "subtype": "init"}, assistant({"type": "text", "text": "Fixed."})]
    )
    assert not session.finished and session.evidence.startswith("no result record: the stream was cut off")


def test_queued_message_becomes_a_follow_up_where_the_agent_reads_it() -> None:
    queued = "no, add the field but set it from sessionId"
    events = [
        PROMPT,
        bash("t1", "edit"),
        {"type": "queue-operation", "operation": "enqueue", "content": queued},
        bash("t2", "edit again"),
        {"type": "queue-operation", "operation": "remove"},  # delivered with the next tool result
        answer_of("t1", "ok"),
        answer_of("t2", "ok"),
        text("I understand: the field stays, set from sessionId.", stop_reason="end_turn"),
    ]
    steps = steps_from_events(events).steps
    users = [i for i, s in enumerate(steps) if s.kind == "user"]
    assert [(steps[i].tool, steps[i].text) for i in users] == [("follow-up", queued)]
    assert steps[users[0] - 1].text == "ok" and steps[users[0] + 1].text.startswith("I understand")


def test_queue_dequeue_and_pop_all_never_duplicate_or_invent_a_turn() -> None:
    events = [
        PROMPT,
        text("Working."),
        {"type": "queue-operation", "operation": "enqueue", "content": "also update the README"},
        {"type": "queue-operation", "operation": "dequeue"},
        entry("user", "also update the README"),  # a dequeued message is written as its own turn
        text("Updating it."),
        {"type": "queue-operation", "operation": "enqueue", "content": "never sent"},
        {"type": "queue-operation", "operation": "popAll"},  # taken back into the input box
        text("Done.", stop_reason="end_turn"),
    ]
    session = steps_from_events(events)
    assert [s.text for s in session.steps if s.kind == "user"] == ["also update the README"]
    delivered_last = steps_from_events(
        [
            *events,
            {"type": "queue-operation", "operation": "enqueue", "content": "wait"},
            {"type": "queue-operation", "operation": "remove"},
        ]
    )
    assert delivered_last.steps[-2].text == "wait" and not delivered_last.finished
    assert delivered_last.evidence == "the last user message was never answered"


def test_task_result_agent_id_splices_the_agent_file_and_an_unmatched_file_warns(tmp_path: Path) -> None:
    task = {"subagent_type": "Explore", "description": "map it", "prompt": "Map the repo."}
    main = [
        PROMPT,
        entry("assistant", [{"type": "tool_use", "id": "task1", "name": "Task", "input": task}]),
        answer_of("task1", "The repo has src.", toolUseResult={"status": "completed", "agentId": "a1b2c3d"}),
        text("Done.", stop_reason="end_turn"),
    ]
    sub = [
        {**entry("user", "Map the repo."), "isSidechain": True, "agentId": "a1b2c3d"},
        {**bash("s1", "ls -R"), "isSidechain": True, "agentId": "a1b2c3d"},
        {**answer_of("s1", "src/"), "isSidechain": True, "agentId": "a1b2c3d"},
        {**text("The repo has src."), "isSidechain": True, "agentId": "a1b2c3d"},
    ]
    other = [
        {**entry("user", "Compact."), "isSidechain": True, "agentId": "acompact-1"},
        {**text("Summary."), "isSidechain": True},
    ]
    files = [tmp_path / "main.jsonl", tmp_path / "agent-a1b2c3d.jsonl", tmp_path / "agent-acompact-1.jsonl"]
    for path, records in zip(files, [main, sub, other], strict=True):
        path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    session = load_session(files[0], files[1:])
    assert [(s.kind, s.agent) for s in session.steps] == [
        ("tool_call", None),
        ("tool_call", "Explore (map it)"),
        ("tool_result", "Explore (map it)"),
        ("tool_result", None),  # the report, once: the subagent's last text repeated it
        ("text", None),
    ]
    assert session.warnings == []  # a compaction agent's file belongs to no Task: no false warning
    stray = tmp_path / "agent-a9.jsonl"
    stray.write_text("".join(json.dumps({**r, "agentId": "a9"}) + "\n" for r in other), encoding="utf-8")
    assert load_session(files[0], [files[1], stray]).warnings == [
        "agent file agent-a9.jsonl (agentId a9) matches no Task call of this session: left out (1 step)"
    ]
    # the 2.1 result text's own line links it as well
    linked = [*main[:2], answer_of("task1", "The repo has src.\nagentId: a1b2c3d (for resuming)"), main[3]]
    files[0].write_text("".join(json.dumps(r) + "\n" for r in linked), encoding="utf-8")
    assert [s.agent for s in load_session(files[0], files[1:2]).steps].count("Explore (map it)") == 2
    lone = load_session(files[1])  # the agent file on its own: its steps are its main thread
    assert lone.lone_agent == "a1b2c3d" and {s.agent for s in lone.steps} == {None}
    assert lone.final_answer == "The repo has src." and lone.finished


def test_harness_boilerplate_is_noise_and_local_commands_are_steps() -> None:
    caveat = (
        "<local-command-caveat>Caveat: The messages below were generated by the user while running local "
        "commands. DO NOT respond to these messages or otherwise consider them in your response unless "
        "the user explicitly asks you to.</local-command-caveat>"
    )
    events = [
        PROMPT,
        text("Working."),
        entry("user", caveat, isMeta=True),
        entry("user", "(no content)"),
        {"type": "system", "subtype": "local_command", "content": "<command-name>/model</command-name>"},
        {
            "type": "system",
            "subtype": "local_command",
            "content": "<local-command-stdout>Kept \x1b[1mSonnet</local-command-stdout>",
        },
        answer_of("t9", "fine", toolUseResult={}),
        text("Done.", stop_reason="end_turn"),
    ]
    steps = steps_from_events(events).steps
    assert [(s.tool, s.text) for s in steps if s.kind == "user"] == [
        ("command", "/model"),
        ("command", "output: Kept Sonnet"),
    ]
    flagged = steps_from_events([PROMPT, bash("t1", "ls"), answer_of("t1", "a")]).steps
    assert not flagged[1].is_error  # an is_error the writer left out (or wrote as "False") is no error
