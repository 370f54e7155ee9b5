from skillgrad.backends.base import AgentResult
from skillgrad.benchmarks.base import Score, Task
from skillgrad.loop.reflect import TRACE_HEADING, AnalystInputs, analyst_messages, parse_patch, patch_schema
from skillgrad.loop.rollout import Rollout
from skillgrad.skill import Edit
from skillgrad.traces.steps import TraceCaps, TraceStep, render_steps


def rollout(passed: bool) -> Rollout:
    trace = [
        TraceStep("tool_call", "Bash: cat task.md", tool="Bash"),
        TraceStep("tool_result", "No such file", tool="Bash", is_error=True),
        TraceStep("text", "Paris is the answer"),
    ]
    result = AgentResult(answer="Paris is the answer", trace=trace)
    score = Score(1.0 if passed else 0.2, passed, "expected 'Paris'; got extra words")
    return Rollout(Task("q1", "Capital of France?", "long context " * 400, ("Paris",)), result, score)


def inputs(include_traces: bool, rejected=()) -> AnalystInputs:
    return AnalystInputs(
        "# Skill\nBe brief.", [rollout(False), rollout(True)], list(rejected), 3, include_traces, TraceCaps()
    )


def test_analyst_prompt_shows_answer_expected_feedback_side_by_side():
    system, user = analyst_messages(inputs(False))
    assert "at most 3 edits" in system.content
    text = user.content
    assert "Be brief." in text and "1 failed, 1 passed" in text
    assert "Agent's answer: Paris is the answer" in text and "Expected answer: Paris" in text
    assert "Grader feedback: expected 'Paris'" in text and "FAILED" in text and "PASSED" in text
    assert "more chars]" in text  # long contexts are cut for the analyst only
    assert TRACE_HEADING not in text and "Rejected edits" not in text


def test_trace_section_only_when_enabled():
    text = analyst_messages(inputs(True))[1].content
    assert text.count(TRACE_HEADING) == 2
    assert "[tool_result Bash ERROR] No such file" in text


def test_rejected_edits_are_listed():
    text = analyst_messages(inputs(False, [Edit("add", "", "Answer in French.")]))[1].content
    assert "Rejected edits" in text and "Answer in French." in text


def test_parse_patch_drops_malformed_and_extra_edits():
    data = {
        "edits": [
            {"op": "add", "target": "", "content": "a", "rationale": ""},
            {"op": "zap"},
            {"op": "delete", "target": "b", "content": "", "rationale": ""},
        ]
    }
    patch = parse_patch(data, minibatch=0, failures=1, max_edits=2)
    assert [e.op for e in patch.edits] == ["add"]
    assert patch_schema(2)["properties"]["edits"]["maxItems"] == 2


def test_render_caps_and_truncation_marker():
    steps = [TraceStep("tool_result", "x" * 500, tool="Read"), TraceStep("text", "line1\nline2")] * 20
    text = render_steps(steps, TraceCaps(tool_result_chars=50, step_chars=100, total_chars=600))
    assert len(text) < 800 and "trace truncated" in text
    assert "[+450 chars]" in text and "line1 ⏎ line2" in text
