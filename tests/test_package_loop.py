"""The loop's view of a package: script checks and self-test, the size budget, the copy-of-task
guard, the analyst's prompt and schema, selection, and the report's per-file diffs and sizes."""

from __future__ import annotations

import jsonschema

from skillgrad.loop.analyst_prompt import AnalystInputs, analyst_messages
from skillgrad.loop.checks import CandidateChecks, front_matter, script_problem
from skillgrad.loop.patch_merge import MergedEdit
from skillgrad.loop.selection import COPIES_TASK, INAPPLICABLE, select_valid
from skillgrad.loop.taskcopy import TaskCopyGuard
from skillgrad.package.model import SkillPackage
from skillgrad.package.prompt import package_schema, touched_files
from skillgrad.report.package_diff import version_diffs, version_sizes
from skillgrad.skilldoc import Edit
from skillgrad.traces.steps import TraceCaps, TraceStep
from skillgrad.values import AgentResult, Rollout, Score, Task

SKILL_MD = "# House\n\n- Read references/flags.md for the flags.\n"
FLAGS = "# Flags\n\n- `--zone` picks the warehouse.\n"
UNUSED = "# Unused\n\nnothing here\n" + "filler line\n" * 200


def package(**extra: str) -> SkillPackage:
    return SkillPackage(
        {"SKILL.md": SKILL_MD, "references/flags.md": FLAGS, "references/unused.md": UNUSED, **extra}
    )


def never(edit: Edit) -> bool:
    return False


# -- script checks -----------------------------------------------------------------------------


def test_scripts_must_parse() -> None:
    assert script_problem(package(**{"scripts/ok.py": "print(1)\n", "scripts/ok.sh": "echo hi\n"})) is None
    broken_py = script_problem(package(**{"scripts/bad.py": "def f(:\n    pass\n"}))
    assert broken_py is not None and broken_py.startswith("scripts/bad.py does not compile: line 1")
    broken_sh = script_problem(package(**{"scripts/bad.sh": "if then fi\n"}))
    assert broken_sh is not None and broken_sh.startswith("scripts/bad.sh fails bash -n")
    shebang = script_problem(package(**{"scripts/tool": "#!/usr/bin/env python3\nprint(\n"}))
    assert shebang is not None and "does not compile" in shebang


def self_testing(command: str, script: str) -> str:
    skill = f"---\ndescription: d\nself_test: {command}\n---\n{SKILL_MD}"
    return SkillPackage({"SKILL.md": skill, "scripts/house.py": script}).encode()


def test_self_test_runs_in_the_sandbox_and_fails_a_candidate_with_its_output() -> None:
    checks = CandidateChecks(None, 20)
    good = "import sys\nif sys.argv[1:] == ['--self-test']:\n    print('fine')\n"
    assert checks.problem(self_testing("python scripts/house.py --self-test", good)) is None
    bad = "import sys\nsys.exit('zone table is empty')\n"
    problem = checks.problem(self_testing("python scripts/house.py --self-test", bad))
    assert problem is not None and "exited 1" in problem and "zone table is empty" in problem
    assert front_matter("---\nself_test: make check\n---\nbody")["self_test"] == "make check"


def test_self_test_timeout_is_a_failure() -> None:
    checks = CandidateChecks(None, 2)
    problem = checks.problem(self_testing("python scripts/house.py", "import time\ntime.sleep(30)\n"))
    assert problem is not None and "timed out" in problem


def test_candidate_over_budget_is_skipped_with_its_size() -> None:
    text = package().encode()
    size = package().chars()
    assert CandidateChecks(size, 5).problem(text) is None
    assert (
        CandidateChecks(size - 1, 5).problem(text)
        == f"the skill is {size} chars, over skill.max_chars={size - 1}"
    )
    assert CandidateChecks(300, 5).problem("x" * 301) == "the skill is 301 chars, over skill.max_chars=300"


# -- copy guard --------------------------------------------------------------------------------

TASK = Task(
    "order-17",
    "Ship order 17 to the Lisbon warehouse using the express lane and print the label code",
    None,
    ("LBL-PT-EXP-0017",),
)


def test_edit_copying_a_task_question_is_dropped_with_the_task_id() -> None:
    guard = TaskCopyGuard([TASK], 10)
    copy = Edit(
        "add",
        "end",
        "When asked: ship order 17 to the Lisbon warehouse using the express lane and print the label "
        "code, answer LBL.",
    )
    general = Edit("add", "end", "Ship orders with `house ship --lane` and print the label code it returns.")
    found = guard(copy)
    assert found is not None and found.task_id == "order-17" and guard(general) is None
    chosen = select_valid(
        [MergedEdit(copy, 1, 1, [0]), MergedEdit(general, 1, 1, [0])],
        "# Skill\n",
        4,
        rejected=[],
        copied=never,
        copies_task=guard,
    )
    assert [m.edit for m in chosen.selected] == [general]
    assert chosen.dropped[0].why == COPIES_TASK
    assert chosen.dropped[0].detail == "task order-17: 10 or more consecutive words of its text"
    assert chosen.counts()[COPIES_TASK] == 1


def test_short_shared_phrases_are_not_copies() -> None:
    assert TaskCopyGuard([TASK], 10)(Edit("add", "end", "Print the label code.")) is None


def test_a_short_question_restated_whole_is_a_copy() -> None:
    """Seen from the 1.5B analyst on housestyle: the tasks' questions added as rules."""
    short = Task("inv-3", "When was the invoice issued?", "It was issued on March 5, 2021.", ("2021-03-05",))
    guard = TaskCopyGuard([TASK, short], 10)
    for restated in ("when was the invoice issued", "It was issued on March 5, 2021."):
        found = guard(Edit("add", "end", restated))
        assert found is not None and found.task_id == "inv-3" and "whole" in found.why
    assert guard(Edit("add", "end", "Say when the invoice was issued.")) is None


# -- analyst prompt and schema ------------------------------------------------------------------


def rollout(passed: bool, reads: str) -> Rollout:
    trace = [
        TraceStep("tool_call", f"cat .claude/skills/house/{reads}", tool="Bash"),
        TraceStep("text", "done"),
    ]
    return Rollout(
        Task("t", "Ship it"), AgentResult("done", trace), Score(float(passed), passed, "wrong zone")
    )


def test_analyst_sees_the_file_list_and_the_files_failing_tasks_read_in_full() -> None:
    rollouts = [rollout(False, "references/flags.md"), rollout(True, "references/unused.md")]
    assert touched_files(package(), rollouts) == ["references/flags.md"]
    inputs = AnalystInputs(package().encode(), rollouts, [], 3, True, TraceCaps(), budget=5000)
    user = analyst_messages(inputs)[1].content
    assert "| references/unused.md | " in user and '"# Unused"' in user  # listed with its first line
    assert '<file path="SKILL.md">' in user and '<file path="references/flags.md">' in user
    assert "`--zone` picks the warehouse." in user and "filler line" not in user
    assert "of a budget of 5000" in user and "within 5000 chars" in user
    assert '"create" makes a new text file' in user


def test_schema_ties_targets_to_their_file_and_offers_create() -> None:
    schema = package_schema(package(), 4)
    ok = {"edits": [
        {"op": "replace", "file": "references/flags.md", "target": "- `--zone` picks the warehouse.",
         "content": "- `--zone` takes the warehouse code.", "rationale": "r"},
        {"op": "create", "file": "references/zones.md", "target": "", "content": "# Zones", "rationale": "r"},
        {"op": "add", "file": "SKILL.md", "target": "end", "content": "Check zones.", "rationale": "r"},
    ]}  # fmt: skip
    jsonschema.validate(ok, schema)
    wrong_file = {"edits": [{**ok["edits"][0], "file": "SKILL.md"}]}
    try:
        jsonschema.validate(wrong_file, schema)
        raise AssertionError("a target of another file must not validate")
    except jsonschema.ValidationError:
        pass


def test_selection_applies_package_edits_in_turn() -> None:
    edits = [
        Edit("create", "", "# Zones\n- LIS: Lisbon", file="references/zones.md"),
        Edit(
            "add",
            "- Read references/flags.md for the flags.",
            "Zone codes are in references/zones.md.",
            file="SKILL.md",
        ),
        Edit("create", "", "# Zones again", file="references/zones.md"),
    ]
    chosen = select_valid(
        [MergedEdit(e, 1, 1, [0]) for e in edits], package().encode(), 4, rejected=[], copied=never
    )
    assert [m.edit for m in chosen.selected] == edits[:2]
    assert chosen.dropped[0].why == INAPPLICABLE and "already exists" in chosen.dropped[0].detail


# -- report ------------------------------------------------------------------------------------


def test_report_diffs_a_package_file_by_file() -> None:
    old = package().encode()
    new = (
        package(**{"references/zones.md": "# Zones\n"})
        .with_file("references/flags.md", FLAGS + "- `--lane` express|ground\n")
        .encode()
    )
    diffs = version_diffs("step 1: v0000 → v0001", "v0000", old, "v0001", new)
    assert [d.title for d in diffs] == [
        "step 1: v0000 → v0001 · references/flags.md",
        "step 1: v0000 → v0001 · references/zones.md (new file)",
    ]
    assert diffs[0].added == 1 and diffs[0].removed == 0
    assert [line.text for line in diffs[0].lines if line.kind == "add"] == ["- `--lane` express|ground"]
    assert diffs[0].old_label == "v0000/references/flags.md"
    single = version_diffs("t", "a", "x\n", "b", "y\n")
    assert len(single) == 1 and single[0].added == single[0].removed == 1
    sizes = version_sizes({"v0000": old, "v0001": new}, 9000)
    assert [(s.version, s.chars, s.files) for s in sizes] == [
        ("v0000", package().chars(), 3),
        ("v0001", package().chars() + 34, 4),
    ]


def test_compare_page_text_of_a_package_holds_every_text_file() -> None:
    from skillgrad.report.package_diff import one_text

    text = one_text(package(**{"scripts/x.sh": "echo x\n"}).encode())
    assert text.index("## File: SKILL.md") < text.index("## File: references/flags.md") < text.index("echo x")
    assert one_text("# single\n") == "# single\n"


def test_single_file_prompt_states_the_budget_only_when_set() -> None:
    def user(budget: int | None) -> str:
        inputs = AnalystInputs(
            "# Skill\nBe brief.\n", [rollout(False, "x")], [], 3, False, TraceCaps(), budget=budget
        )
        return analyst_messages(inputs)[1].content

    assert "Size budget" not in user(None)
    assert "Size budget: at most 900 chars (now 18)." in user(900)
    assert "| SKILL.md |" not in user(900)  # a single file is shown as before, not as a package


def test_call_cache_keys_on_every_file_of_a_package(tmp_path) -> None:
    from skillgrad.cache import CachedAgent, CallCache
    from tests.test_cache import TASK, ScriptedAgent, prepared

    inner = ScriptedAgent()
    agent = CachedAgent(inner, CallCache(tmp_path / "c"))
    base = package(**{"assets/x.bin": "placeholder"})
    binary = SkillPackage(base.files, {"assets/logo.png": b"\x00\x01"})
    agent.run(TASK, base.encode(), prepared(tmp_path, "w1"))
    agent.run(TASK, SkillPackage(dict(base.files)).encode(), prepared(tmp_path, "w2"))  # same package
    assert inner.calls == 1
    agent.run(
        TASK, base.with_file("references/flags.md", FLAGS + "- more\n").encode(), prepared(tmp_path, "w3")
    )
    agent.run(TASK, binary.encode(), prepared(tmp_path, "w4"))
    agent.run(
        TASK, SkillPackage(base.files, {"assets/logo.png": b"\x00\x02"}).encode(), prepared(tmp_path, "w5")
    )
    assert inner.calls == 4  # a reference, a binary file's presence and its bytes all change the key
