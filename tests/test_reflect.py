from skillgrad.backends.interface import AgentResult
from skillgrad.benchmarks.contract import Score, Task
from skillgrad.loop.analyst_prompt import (
    TRACE_HEADING,
    AnalystInputs,
    analyst_messages,
    parse_patch,
    patch_schema,
    trace_sections,
)
from skillgrad.loop.rollout import Rollout
from skillgrad.skilldoc import Edit
from skillgrad.traces.steps import TraceCaps, TraceStep
from skillgrad.traces.view import render_steps


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
    assert "[tool_call Bash] Bash: cat task.md -> ERROR No such file" in text  # the call and its error


def long_rollout(index: int, passed: bool) -> Rollout:
    trace = [TraceStep("text", f"I will start task {index}.")]
    for j in range(300):
        trace.append(
            TraceStep("tool_call", f"python step_{j}.py --flag {'x' * 60}", tool="Bash", ref=f"c{j}")
        )
        error = j % 50 == 7
        trace.append(TraceStep("tool_result", f"output {j} " + "y" * 300, "Bash", error, ref=f"c{j}"))
    trace.append(TraceStep("text", f"FINAL ANSWER of task {index}"))
    result = AgentResult(answer=f"answer {index}", trace=trace)
    task = Task(f"q{index}", "Do the thing", None, ("x",))
    return Rollout(task, result, Score(1.0 if passed else 0.0, passed, "feedback"))


def test_trace_sections_of_one_prompt_share_one_budget_failed_first():
    rollouts = [long_rollout(i, passed=i == 0) for i in range(4)]
    caps = TraceCaps(total_chars=4000)
    shared = AnalystInputs("# Skill", rollouts, [], 3, True, caps, trace_budget=6000)
    sections = trace_sections(shared)
    assert sum(len(s) for s in sections) <= 6000
    assert all(s.startswith(TRACE_HEADING) for s in sections)
    # each view still ends with its final answer and keeps every error of the failed tasks
    assert all(f"FINAL ANSWER of task {i}" in s for i, s in enumerate(sections))
    assert all(s.count("ERROR") >= 1 for s in sections[1:])
    assert len(sections[0]) < min(len(s) for s in sections[1:])  # the passed task gets the smallest share
    roomy = trace_sections(AnalystInputs("# Skill", rollouts, [], 3, True, caps, trace_budget=100_000))
    assert all(len(s) <= 4000 + len(TRACE_HEADING) + 2 for s in roomy)  # never over one view's cap
    user = analyst_messages(shared)[1].content
    assert all(s in user for s in sections)


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
    assert patch_schema("# Skill\nBe brief.\n", 2)["properties"]["edits"]["maxItems"] == 2


def test_render_caps_and_truncation_marker():
    steps = [TraceStep("tool_result", "x" * 500, tool="Read"), TraceStep("text", "line1\nline2")] * 20
    text = render_steps(steps, TraceCaps(tool_result_chars=50, step_chars=100, total_chars=600))
    assert len(text) <= 600 and "chars hidden" in text
    assert "[+450 chars]" in text and "line1 ⏎ line2" in text
