"""The reflection workspace's pieces (issue 28), without a CLI: trace_full.txt and its line spans,
gap markers that point into it (within the view's budget), the folder's files and their redaction,
what an analyst's tool calls opened, the bounded read-and-answer loop, the call cache keyed on the
folder's content, the mode decision, the estimate and the report's view. The real Claude Code and
Codex analysts are in test_reflection_workspace_{claude,codex}_e2e.py."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest

from skillgrad.backends.reading import (
    Investigation,
    ReadingBoundError,
    ReadingBounds,
    SessionOutcome,
    ToolUse,
    can_read_folders,
    investigate,
)
from skillgrad.cache import CachedChatModel, CallCache
from skillgrad.config import Config
from skillgrad.errors import BackendError, StructuredOutputError, UserError
from skillgrad.evidence.fulltrace import WRAP_CHARS, full_trace, locator
from skillgrad.evidence.mode import reads_workspace, reflection_mode
from skillgrad.evidence.opened import opened, read_ranges
from skillgrad.evidence.reflection_workspace import WorkspaceOpener, with_guide
from skillgrad.evidence.workspace_files import Redaction, build_workspace_files, redacted
from skillgrad.package.model import SkillPackage
from skillgrad.redact import Redactor
from skillgrad.run_folder import RunDir
from skillgrad.skilldoc import Edit
from skillgrad.traces.steps import TraceCaps
from skillgrad.traces.view import render_view
from skillgrad.values import AgentResult, Message, Reply, Rollout, Score, Task, TraceStep, Usage

KEY = "sk-ant-UNIT-workspace-0123456789abcdef"
SCHEMA = {"type": "object", "properties": {"edits": {"type": "array"}}, "required": ["edits"]}


def long_session(n: int = 60, middle: str = "CAUSE: the agent read data/old.csv") -> list[TraceStep]:
    steps = [TraceStep("user", "What is the capital of Germany?")]
    for i in range(n):
        text = middle if i == n // 2 else f"note {i}: " + "filler " * 20
        steps += [TraceStep("tool_call", f"cat notes/{i}.md", tool="Bash", ref=f"c{i}")]
        steps += [TraceStep("tool_result", text, tool="Bash", ref=f"c{i}")]
    return [*steps, TraceStep("text", "Bonn")]


# ---------------------------------------------------------------------------------------------
# trace_full.txt and the gap pointers


def test_full_trace_numbers_every_step_uncapped_with_its_lines() -> None:
    steps = [
        TraceStep("user", "first line\nsecond line"),
        TraceStep("tool_call", "ls", tool="Bash", agent="Explore (find files)"),
        TraceStep("tool_result", "x" * (WRAP_CHARS * 2 + 5), tool="Bash", is_error=True),
        TraceStep("text", ""),
    ]
    full = full_trace(steps, "Task 1 (q1)")
    lines = full.text.splitlines()
    assert lines[0].startswith("# Task 1 (q1): the agent's whole session, 4 steps")
    assert full.spans == ((2, 3), (4, 4), (5, 7), (8, 8))
    assert lines[1] == "1. [user] first line" and lines[2] == "    second line"
    assert lines[3] == "2. [tool_call Bash @Explore (find files)] ls"
    assert lines[4].startswith("3. [tool_result Bash ERROR] xxx") and all(
        len(x) <= WRAP_CHARS + 4 for x in lines
    )
    assert sum(x.count("x") for x in lines[4:7]) == WRAP_CHARS * 2 + 5  # wrapped, nothing dropped
    assert lines[7] == "4. [text]" and full.lines_of(1, 2) == (4, 7)
    assert locator("tasks/01/trace_full.txt", full)(0, 1) == "tasks/01/trace_full.txt lines 2-4"
    assert locator("t.txt", full)(1, 1) == "t.txt line 4"


def test_gap_markers_point_into_trace_full_within_the_budget() -> None:
    steps = long_session()
    full = full_trace(steps, "Task 3 (q7)")
    locate = locator("tasks/03/trace_full.txt", full)
    for budget in (600, 1500, 4000):
        plain, pointed = (
            render_view(steps, TraceCaps(), budget),
            render_view(steps, TraceCaps(), budget, locate),
        )
        assert len(pointed) <= budget and "trace_full.txt" not in plain
        assert "CAUSE" not in pointed  # the middle step is hidden ...
        markers = re.findall(r"\[\.\.\. .*?: tasks/03/trace_full\.txt lines (\d+)-(\d+) \.\.\.\]", pointed)
        assert markers and len(markers) == pointed.count("[...")  # every gap says where it is
        file_lines = full.text.splitlines()
        shown = [int(m.group(1)) for m in re.finditer(r"^(\d+)\. \[", pointed, re.M)]
        for start, end in markers:  # ... and each pointer holds exactly the steps its gap hides
            hidden = [
                int(m.group(1))
                for m in re.finditer(r"^(\d+)\. \[", "\n".join(file_lines[int(start) - 1 : int(end)]), re.M)
            ]
            assert hidden and not set(hidden) & set(shown)
            assert hidden == list(range(hidden[0], hidden[-1] + 1))
    # every hidden step is behind some pointer: the cause can be found
    spans = [range(int(a), int(b) + 1) for a, b in markers]
    cause = next(i for i, line in enumerate(full.text.splitlines(), 1) if "CAUSE" in line)
    assert any(cause in span for span in spans)


# ---------------------------------------------------------------------------------------------
# the folder


def rollout(task_id: str, *, passed: bool, steps: list[TraceStep] | None = None, secret: str = "") -> Rollout:
    task = Task(
        task_id, f"Capital? {secret}", f"Long context {secret} " * 3, ("Berlin",), {"rubric": [secret or "r"]}
    )
    result = AgentResult(
        f"Bonn {secret}", steps or [], Usage(), error=f"boom {secret}" if secret else None,
        is_error=bool(secret), raw=[{"type": "assistant", "text": f"raw {secret}", "b": 1, "a": 2}],
    )  # fmt: skip
    return Rollout(task, result, Score(1.0 if passed else 0.0, passed, f"expected Berlin {secret}"))


def redaction() -> Redaction:
    redactor = Redactor([KEY])
    return Redaction(redactor.redact, redactor.redact_json)


def test_casefile_holds_each_task_in_full_and_the_skill_package() -> None:
    package = SkillPackage({"SKILL.md": "# Capitals\n", "references/list.md": "Berlin\n"}).encode()
    rollouts = [rollout("q1", passed=False, steps=long_session(10)), rollout("q2", passed=True)]
    rejected = [Edit("add", "end", "Say Bonn.")]
    case = build_workspace_files(package, rollouts, rejected, include_traces=True)
    files = case.files
    assert {"tasks/01/task.md", "tasks/01/answer.txt", "tasks/01/expected.txt", "tasks/01/score.json"} <= set(
        files
    )
    assert "tasks/01/trace_full.txt" in files and "tasks/02/trace_full.txt" not in files  # q2 has no steps
    assert files["tasks/01/transcript.jsonl"] == '{"a": 2, "b": 1, "text": "raw ", "type": "assistant"}\n'
    assert (
        "Long context" in files["tasks/01/task.md"]
        and "## Expected answer\n\nBerlin" in files["tasks/01/task.md"]
    )
    assert json.loads(files["tasks/02/score.json"])["passed"] is True
    assert files["skill/SKILL.md"] == "# Capitals\n" and files["skill/references/list.md"] == "Berlin\n"
    assert json.loads(files["rejected_edits.json"])[0]["content"] == "Say Bonn."
    assert (
        "- `tasks/01/`: task 1 (q1), FAILED, score 0.00; trace_full.txt: 22 steps (0 errors), 23 lines"
        in case.listing
    )
    assert files["README.md"].endswith(case.listing + "\n")
    assert case.locators[0] is not None and case.locators[1] is None
    none = build_workspace_files("# s\n", rollouts, [], include_traces=False)  # model.trace_to_optimizer off
    assert not [p for p in none.files if p.endswith(("trace_full.txt", "transcript.jsonl"))]


def test_every_text_of_a_rollout_is_redacted_before_anything_is_rendered() -> None:
    steps = [TraceStep("tool_result", f"leaked {KEY}\nmore", tool="Bash")]
    clean = redacted(rollout("q1", passed=False, steps=steps, secret=KEY), redaction())
    case = build_workspace_files("# s\n", [clean], [], include_traces=True)
    assert not [path for path, text in case.files.items() if KEY in text]
    assert KEY not in json.dumps(clean.task.to_json()) + clean.result.answer + clean.score.feedback
    assert KEY not in (clean.result.error or "") + json.dumps(clean.result.raw) + clean.result.trace[0].text
    # the line spans are those of the redacted text
    assert case.files["tasks/01/trace_full.txt"].splitlines()[1] == "1. [tool_result Bash] leaked [REDACTED]"


def test_the_desk_writes_a_fresh_folder_and_records_what_was_read(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "run", Redactor([KEY]))
    run.create()
    stale = run.root / run.reflection_workspace(1, "mb_00") / "stale.txt"
    stale.parent.mkdir(parents=True)
    stale.write_text("from a killed run")
    chat = FakeReader([])
    workspace = WorkspaceOpener(run, ReadingBounds(4, 60)).open(
        1,
        "mb_00",
        chat,
        f"# s {KEY}\n",
        [rollout("q1", passed=False, steps=long_session(5))],
        [],
        include_traces=True,
    )
    assert not stale.exists() and workspace.folder == run.root / "steps/0001/reflections/mb_00"
    assert KEY not in (workspace.folder / "skill" / "SKILL.md").read_text()
    record = workspace.record(
        Investigation(
            Reply("{}"),
            (
                ToolUse.of(
                    "Read", {"file_path": "tasks/01/trace_full.txt", "offset": 3, "limit": 2}, "x", False
                ),
            ),
            2,
            1,
            1.5,
        )
    )
    assert record["workspace"] == "mb_00" and "tasks/01/trace_full.txt" in record["workspace_files"]
    assert record["opened"] == [{"tool": "Read", "path": "tasks/01/trace_full.txt", "lines": [3, 4]}]
    assert record["session"]["turns"] == 2 and record["session"]["tool_calls"] == 1


def test_the_guide_goes_to_the_system_prompt() -> None:
    messages = [Message("system", "You improve a SKILL."), Message("user", "index")]
    sent = with_guide(messages, "\n\n## Your workspace")
    assert sent[0].content == "You improve a SKILL.\n\n## Your workspace" and sent[1] == messages[1]
    assert with_guide([Message("user", "x")], "\n\nguide")[0] == Message("system", "guide")


# ---------------------------------------------------------------------------------------------
# what was opened


def folder_with_trace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "tasks" / "01").mkdir(parents=True)
    (root / "tasks" / "01" / "trace_full.txt").write_text(
        "".join(f"{i}. [text] line {i}\n" for i in range(1, 101))
    )
    (root / "tasks" / "02").mkdir()
    (root / "tasks" / "02" / "task.md").write_text("# Task\n")
    return root


def test_claude_reads_greps_globs_and_refusals(tmp_path: Path) -> None:
    root = folder_with_trace(tmp_path)
    uses = [
        ToolUse.of(
            "Grep",
            {"pattern": "ERROR", "path": ".", "-n": True},
            "tasks/01/trace_full.txt:57:57. x\ntasks/01/trace_full.txt:80:80. y",
            False,
        ),
        ToolUse.of(
            "Grep",
            {"pattern": "line", "path": "tasks/01/trace_full.txt", "-n": True},
            "12:12. [text] line 12",
            False,
        ),
        ToolUse.of(
            "Read",
            {"file_path": str(root / "tasks/01/trace_full.txt"), "offset": 50, "limit": 10},
            "...",
            False,
        ),
        ToolUse.of("Read", {"file_path": "tasks/01/trace_full.txt", "offset": 95}, "...", False),
        ToolUse.of(
            "Read",
            {"file_path": "/etc/passwd"},
            "Claude requested permissions to read from /etc/passwd",
            True,
        ),
        ToolUse.of("Glob", {"pattern": "**/*.md"}, "tasks/02/task.md", False),
        ToolUse.of("Write", {"file_path": "x.txt", "content": "hi"}, "No such tool available: Write", True),
    ]
    records = opened(uses, root)
    assert records[0] == {
        "tool": "Grep",
        "pattern": "ERROR",
        "in": ".",
        "hits": [{"path": "tasks/01/trace_full.txt", "lines": [57, 80]}],
    }
    assert records[1]["hits"] == [{"path": "tasks/01/trace_full.txt", "lines": [12]}]
    assert records[2] == {"tool": "Read", "path": "tasks/01/trace_full.txt", "lines": [50, 59]}
    assert records[3]["lines"] == [95, 100]  # clamped to the file
    assert records[4]["path"] == "/etc/passwd" and "requested permissions" in records[4]["refused"]
    assert records[5] == {"tool": "Glob", "pattern": "**/*.md", "found": 1}
    assert records[6]["tool"] == "Write" and "No such tool" in records[6]["refused"]
    assert read_ranges(records) == {"tasks/01/trace_full.txt": [[50, 59], [95, 100]]}


@pytest.mark.parametrize(
    ("command", "lines"),
    [
        ("sed -n '40,60p' tasks/01/trace_full.txt", [40, 60]),
        ("sed -n 7p tasks/01/trace_full.txt", [7, 7]),
        ("nl -ba tasks/01/trace_full.txt | sed -n '20,30p'", [20, 30]),
        ("head -n 15 tasks/01/trace_full.txt", [1, 15]),
        ("tail -n 10 tasks/01/trace_full.txt", [91, 100]),
        ("tail -n +90 tasks/01/trace_full.txt", [90, 100]),
        ("awk 'NR>=5 && NR<=9' tasks/01/trace_full.txt", [5, 9]),
        ("cat tasks/01/trace_full.txt", [1, 100]),
        ("cd tasks && cat 01/trace_full.txt", None),  # a path relative to another folder: kept as written
    ],
)
def test_codex_shell_reads_become_files_and_lines(
    tmp_path: Path, command: str, lines: list[int] | None
) -> None:
    root = folder_with_trace(tmp_path)
    records = opened([ToolUse.of("shell", {"command": command}, "", False)], root)
    if lines is None:
        assert records == [{"tool": "shell", "command": command}]
    else:
        assert records == [
            {"tool": "shell", "command": command, "path": "tasks/01/trace_full.txt", "lines": lines}
        ]


def test_codex_searches_and_refused_writes(tmp_path: Path) -> None:
    root = folder_with_trace(tmp_path)
    grep = ToolUse.of(
        "shell",
        {"command": "grep -rn 'line 5' tasks"},
        "tasks/01/trace_full.txt:5:5. [text] line 5\ntasks/01/trace_full.txt:50:50. [text] line 50",
        False,
    )
    one = ToolUse.of("shell", {"command": "grep -n ERROR tasks/01/trace_full.txt"}, "44:44. x", False)
    touch = ToolUse.of(
        "shell", {"command": "touch x"}, "touch: cannot touch 'x': Read-only file system", True
    )
    records = opened([grep, one, touch], root)
    assert records[0]["pattern"] == "line 5" and records[0]["in"] == ["tasks"]
    assert records[0]["hits"] == [{"path": "tasks/01/trace_full.txt", "lines": [5, 50]}]
    assert records[1]["hits"] == [{"path": "tasks/01/trace_full.txt", "lines": [44]}]
    assert records[2]["command"] == "touch x" and "Read-only" in records[2]["refused"]


# ---------------------------------------------------------------------------------------------
# the read-and-answer loop, bounded


def runner(outcomes: list[SessionOutcome], seen: list[list[Message]] | None = None):
    def run(messages: list[Message], seconds_left: float) -> SessionOutcome:
        if seen is not None:
            seen.append(messages)
        return outcomes.pop(0)

    return run


def read(n: int) -> list[ToolUse]:
    return [ToolUse.of("Read", {"file_path": f"f{i}"}, "x", False) for i in range(n)]


def test_investigate_reasks_in_a_new_session_and_sums_everything() -> None:
    seen: list[list[Message]] = []
    outcomes = [
        SessionOutcome(None, Usage(5, 1, 1), failure="HTTP 529 overloaded", tool_uses=read(1), turns=2),
        SessionOutcome("not json", Usage(10, 2, 1), tool_uses=read(2), turns=3),
        SessionOutcome('{"edits": []}', Usage(20, 3, 1), tool_uses=read(1), turns=2),
    ]
    found = investigate(
        runner(outcomes, seen),
        [Message("user", "go")],
        SCHEMA,
        ReadingBounds(4, 60),
        backend="b",
        stage="reflect",
        retries=1,
        json_retries=1,
        backoff_s=0,
    )
    assert found.reply.data == {"edits": []} and found.reply.usage == Usage(35, 6, 3)
    assert len(found.tool_uses) == 4 and found.turns == 7 and found.sessions == 3
    assert "not json" in seen[2][-2].content  # the re-ask shows the bad reply, in a new session


def test_a_bound_ends_the_call_at_once_with_what_it_spent() -> None:
    bounded = SessionOutcome(
        None,
        Usage(30, 4, 1),
        tool_uses=read(3),
        turns=5,
        bound="used its 4 turns (optimizer.reflection_turns)",
    )
    with pytest.raises(ReadingBoundError, match="optimizer.reflection_turns") as caught:
        investigate(
            runner([bounded]),
            [Message("user", "go")],
            SCHEMA,
            ReadingBounds(4, 60),
            backend="b",
            stage="reflect",
            retries=3,
            json_retries=2,
            backoff_s=0,
        )
    assert isinstance(caught.value, BackendError) and caught.value.spent.reply.usage == Usage(30, 4, 1)
    assert len(caught.value.spent.tool_uses) == 3


def test_the_deadline_covers_retries_and_reasks() -> None:
    def slow(messages: list[Message], seconds_left: float) -> SessionOutcome:
        time.sleep(0.3)
        return SessionOutcome("not json", Usage(1, 1, 1))

    with pytest.raises(ReadingBoundError, match="optimizer.reflection_timeout_s=0.5s"):
        investigate(
            slow,
            [Message("user", "go")],
            SCHEMA,
            ReadingBounds(4, 0.5),
            backend="b",
            stage="reflect",
            retries=0,
            json_retries=5,
        )
    with pytest.raises(StructuredOutputError):  # no deadline reached: re-asked, then the usual error
        investigate(
            runner([SessionOutcome("x", Usage())] * 2),
            [Message("user", "go")],
            SCHEMA,
            ReadingBounds(4, 60),
            backend="b",
            stage="reflect",
            retries=0,
            json_retries=1,
        )


# ---------------------------------------------------------------------------------------------
# the call cache keys on the folder's content


class PlainChat:
    name, model = "plain_chat", "m0"

    def complete(
        self, messages: list[Message], *, schema: Any = None, effort: Any = None, stage: str
    ) -> Reply:
        return Reply("{}")


class FakeReader:
    name, model, reading_tools = "fake_reader", "m1", "Read"

    def __init__(self, replies: list[Any]) -> None:
        self.replies = replies
        self.calls = 0

    def complete(
        self, messages: list[Message], *, schema: Any = None, effort: Any = None, stage: str
    ) -> Reply:
        raise AssertionError("a workspace analyst is asked through investigate")

    def investigate(
        self,
        messages: list[Message],
        *,
        folder: Path,
        bounds: ReadingBounds,
        schema: Any = None,
        effort: Any = None,
        stage: str,
    ) -> Investigation:
        self.calls += 1
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply


def test_cached_investigation_is_keyed_on_the_folder_and_replays_its_tool_calls(tmp_path: Path) -> None:
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "a.txt").write_text("one")
    use = ToolUse.of("Read", {"file_path": "a.txt"}, "one", False)
    answer = Investigation(Reply('{"edits": []}', {"edits": []}, Usage(100, 10, 1)), (use,), 3, 1, 2.5)
    spent = Investigation(Reply("", usage=Usage(50, 5, 1)))
    inner = FakeReader([answer, answer, ReadingBoundError("bound", spent)])
    paid: list[Usage] = []
    chat = CachedChatModel(
        inner, CallCache(tmp_path / "cache"), sampling={}, on_paid=lambda stage, u: paid.append(u)
    )
    plain = CachedChatModel(PlainChat(), CallCache(tmp_path / "c2"), sampling={})
    assert can_read_folders(chat) and not can_read_folders(plain)
    messages, bounds = [Message("user", "go")], ReadingBounds(4, 60)
    first = chat.investigate(messages, folder=folder, bounds=bounds, schema=SCHEMA, stage="reflect")
    again = chat.investigate(
        messages, folder=folder, bounds=ReadingBounds(4, 999), schema=SCHEMA, stage="reflect"
    )
    assert (
        inner.calls == 1
        and again.reply.saved == Usage(100, 10, 1)
        and again.reply.usage == Usage(0, 0, 0, 0.0)
    )
    assert again.tool_uses == first.tool_uses and again.turns == 3 and again.reply.data == {"edits": []}
    (folder / "a.txt").write_text("two")  # other evidence: asked again
    chat.investigate(messages, folder=folder, bounds=bounds, schema=SCHEMA, stage="reflect")
    assert inner.calls == 2
    with pytest.raises(ReadingBoundError):  # another turn bound: another key; the bound's cost is paid
        chat.investigate(messages, folder=folder, bounds=ReadingBounds(2, 60), schema=SCHEMA, stage="reflect")
    assert paid == [Usage(100, 10, 1), Usage(100, 10, 1), Usage(50, 5, 1)]


# ---------------------------------------------------------------------------------------------
# the mode, the estimate, the report


def test_the_mode_follows_the_optimizer_and_refuses_a_chat_workspace() -> None:
    cfg = Config()
    cfg.model.backend = "openai_chat"
    assert reflection_mode(cfg) == "digest"
    cfg.model.optimizer_backend = "claude_code_exec"
    assert reflection_mode(cfg) == "workspace"
    cfg.optimizer.reflection = "digest"
    assert reflection_mode(cfg) == "digest" and not reads_workspace(cfg, FakeReader([]))
    cfg.model.optimizer_backend, cfg.optimizer.reflection = "openai_chat", "workspace"
    with pytest.raises(
        UserError, match="optimizer.reflection=workspace: the optimizer backend 'openai_chat'"
    ):
        reflection_mode(cfg)
    cfg.model.optimizer_backend = "codex_exec"
    with pytest.raises(UserError, match="cannot read a workspace"):
        reads_workspace(cfg, object())  # a harness whose chat model cannot investigate


def test_workspace_on_a_chat_optimizer_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from skillgrad.cli import main
    from tests.test_train_e2e import write_data

    data = write_data(tmp_path)
    config = tmp_path / "c.yaml"
    benchmark = f"benchmark:\n  name: qa\n  data: {data}\n  train_size: 2\n  val_size: 2\n"
    config.write_text(benchmark + "model:\n  backend: openai_chat\n  api_key: k-12345678\n")
    out = str(tmp_path / "run")
    code = main(["train", "--config", str(config), "--out", out, "--set", "optimizer.reflection=workspace"])
    err = capsys.readouterr().err
    assert code == 2 and "optimizer.reflection=workspace" in err and "Traceback" not in err
    assert not (tmp_path / "run").exists()


def test_the_estimate_counts_a_workspace_analysts_turns(tmp_path: Path) -> None:
    from skillgrad.session.projection import Assumptions, estimate

    tasks = [Task(f"q{i}", f"Question {i}?", answers=("a",)) for i in range(8)]
    splits = {"train": tasks, "val": tasks[:4]}
    cfg = Config()
    cfg.model.backend = "claude_code_exec"
    cfg.train.batch_size, cfg.train.minibatch_size = 4, 2
    loop_only = Assumptions(retry_share=0.0)  # the loop's calls, without the assumed retries
    workspace = estimate(cfg, splits, "# skill\n", loop_only)
    cfg.optimizer.reflection = "digest"
    digest = estimate(cfg, splits, "# skill\n", loop_only)
    w, d = workspace["by_stage"]["reflect"], digest["by_stage"]["reflect"]
    assert w["calls"] == d["calls"] == 8  # 2 epochs x 2 steps x 2 minibatches
    assert d["model_turns"] == 8 and w["model_turns"] == 8 * 7  # half of 12 turns reading, one answering
    assert w["input_tokens"] > 7 * d["input_tokens"] and w["output_tokens"] > d["output_tokens"]
    assert (
        workspace["assumptions"]["reflection"] == "workspace"
        and workspace["assumptions"]["analyst_turns"] == 7
    )


def test_the_report_shows_what_each_reflection_opened(tmp_path: Path) -> None:
    from skillgrad.report.reflections import reflection_rows

    folder = tmp_path / "steps" / "0001" / "reflections"
    (folder / "mb_00" / "tasks" / "01").mkdir(parents=True)
    (folder / "mb_00" / "tasks" / "01" / "trace_full.txt").write_text(
        "".join(f"{i}. [text] line {i}\n" for i in range(1, 30))
    )
    trace = "tasks/01/trace_full.txt"
    session = {"turns": 3, "tool_calls": 2, "wall_s": 1.2, "usage": {"input_tokens": 90, "output_tokens": 9}}
    record = {
        "minibatch": 0, "tasks": ["q1"], "edits": [{"op": "add", "content": "Rule."}],
        "reflection": "workspace", "workspace": "mb_00", "session": session,
        "opened": [
            {"tool": "Grep", "pattern": "x", "in": ".", "hits": [{"path": trace, "lines": [7]}]},
            {"tool": "Read", "path": trace, "lines": [5, 8]},
            {"tool": "Read", "path": "../../../../etc/passwd", "lines": [1, 3]},
            {"tool": "Read", "path": "tasks/01/answer.txt", "lines": [1, 2]},
            {"tool": "Read", "path": trace, "lines": ["5", None]},  # not the trainer's record
        ],
    }  # fmt: skip
    # a 12 MB reply on one line, then a short one: each shown in part, the next line still found
    (folder / "mb_00" / "tasks" / "01" / "answer.txt").write_text("y" * 12_000_000 + "\nsecond\n")
    (folder / "mb_00.json").write_text(json.dumps(record))
    (folder / "mb_01.json").write_text("{torn")
    (folder / "planted.json").write_text(json.dumps(record))
    warnings: list[str] = []
    rows = reflection_rows(tmp_path, warnings)
    assert [r.name for r in rows] == ["mb_00"]
    assert warnings == [f"{folder / 'mb_01.json'}: not valid UTF-8 JSON (Expecting property name enclosed in "
                        "double quotes: line 1 column 2 (char 1)); skipped in the report"]  # fmt: skip
    found = rows[0].opened
    assert found[0].what == "search `x` in .: tasks/01/trace_full.txt line(s) 7"
    assert found[1].what == "tasks/01/trace_full.txt lines 5-8" and [n for n, _ in found[1].excerpt] == [
        5,
        6,
        7,
        8,
    ]
    assert found[1].excerpt[0][1] == "5. [text] line 5" and found[2].excerpt == []  # never outside the folder
    assert found[3].excerpt == [(1, "y" * 300 + "…"), (2, "second")]
    assert found[4].excerpt == [] and found[4].what == f"{trace} lines 5-None"
