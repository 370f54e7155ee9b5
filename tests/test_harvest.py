"""`skillgrad harvest` over real and made-up sessions, the harvested benchmark's split and judge, and
the proposal / adopt / undo file handling."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from skillgrad.backends.interface import AgentResult, Message, Reply, Usage
from skillgrad.benchmarks.harvested import (
    HarvestedBenchmark,
    HarvestedOptions,
    read_harvested,
    split_by_cluster,
)
from skillgrad.config import load_config
from skillgrad.errors import UserError
from skillgrad.harvest.command import harvest
from skillgrad.harvest.grouping import cluster_ids
from skillgrad.harvest.proposal import adopt, propose, skill_file, undo
from skillgrad.harvest.secrets import redact_patterns
from skillgrad.redact import Redactor
from skillgrad.traces.steps import TraceStep

REAL = Path(__file__).resolve().parents[2] / "shared" / "reference" / "claude-code" / "real"
needs_real = pytest.mark.skipif(not REAL.is_dir(), reason="real session files not present (../shared)")

PLANTED = {
    "anthropic": "sk-ant-api03-PLANTEDplantedPLANTED0123456789abcdef",
    "github": "ghp_PLANTED0123456789abcdefghijABCDEFGHIJ",
    "aws": "AKIAPLANTED012345678",
    "by_value": "zz-known-by-value-only-8812",
}


def user(text: str, uuid: str, parent: str | None, **extra: Any) -> dict[str, Any]:
    record = {"type": "user", "uuid": uuid, "parentUuid": parent, "sessionId": "s-1", "isSidechain": False}
    return {
        **record,
        "timestamp": "2026-11-20T10:00:00Z",
        "message": {"role": "user", "content": text},
        **extra,
    }


def assistant(blocks: list[dict[str, Any]], uuid: str, parent: str) -> dict[str, Any]:
    record = {
        "type": "assistant",
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": "s-1",
        "isSidechain": False,
    }
    return {**record, "message": {"role": "assistant", "content": blocks}}


def tool_result(tool_id: str, text: str, uuid: str, parent: str, error: bool = False) -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": tool_id, "content": text, "is_error": error}
    return {**user("", uuid, parent), "message": {"role": "user", "content": [block]}}


def planted_session(path: Path) -> Path:
    records = [
        user(f"Deploy the app; the token is {PLANTED['github']}", "u1", None),
        assistant(
            [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "./deploy.sh"}}],
            "a1",
            "u1",
        ),
        tool_result(
            "t1", f"error: bad key {PLANTED['anthropic']} for AWS {PLANTED['aws']}", "r1", "a1", True
        ),
        assistant(
            [{"type": "tool_use", "id": "t2", "name": "Read", "input": {"file_path": "/p/deploy.sh"}}],
            "a2",
            "r1",
        ),
        tool_result("t2", "echo deploy", "r2", "a2"),
        assistant(
            [
                {
                    "type": "tool_use",
                    "id": "t3",
                    "name": "Edit",
                    "input": {"file_path": "/p/deploy.sh", "old_string": "a", "new_string": "b"},
                }
            ],
            "a3",
            "r2",
        ),  # noqa: E501
        tool_result("t3", "ok", "r3", "a3"),
        assistant([{"type": "text", "text": f"Deployed with password={PLANTED['by_value']}."}], "a4", "r3"),
        user("No, don't deploy to prod, instead use staging", "u2", "a4"),
        assistant([{"type": "text", "text": "Deployed to staging."}], "a5", "u2"),
        user("thanks, looks good", "u3", "a5"),
        assistant([{"type": "text", "text": "You're welcome."}], "a6", "u3"),
        user("deploy the app please", "u4", "a6"),
        assistant([{"type": "text", "text": "Deployed again."}], "a7", "u4"),
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_planted_secrets_never_reach_the_task_set(tmp_path: Path) -> None:
    session = planted_session(tmp_path / "project" / "s-1.jsonl")
    out = tmp_path / "tasks.jsonl"
    summary = harvest(session.parent, None, out, Redactor([PLANTED["by_value"]]))
    body = out.read_text(encoding="utf-8")
    for secret in PLANTED.values():
        assert secret not in body
    assert body.count("[REDACTED]") >= 4
    rows = [json.loads(line) for line in body.splitlines()]
    assert summary.tasks == len(rows) == 4 and summary.sessions == 1
    first = rows[0]["meta"]
    assert first["files_read"] == ["/p/deploy.sh"] and first["files_changed"] == ["/p/deploy.sh"]
    assert first["signals"]["tool_errors"] == 1 and first["signals"]["correction"] is True
    assert first["accepted"] is False
    assert any(
        r.startswith("Avoids what the user had to correct") and "staging" in r for r in first["rubric"]
    )
    assert first["provenance"] == {
        "file": str(session),
        "line": 1,
        "session_id": "s-1",
        "timestamp": "2026-11-20T10:00:00Z",
    }
    assert rows[1]["meta"]["accepted"] is True  # "thanks, looks good" followed it
    # "Deploy the app; the token is ..." and "deploy the app please" are one recurring task
    assert rows[0]["meta"]["cluster"] == rows[3]["meta"]["cluster"] and rows[0]["meta"]["cluster_size"] == 2


def test_pattern_redaction_keeps_what_was_there() -> None:
    text = "curl -H 'Authorization: Bearer abcdefghijklmnop1234' https://bob:hunter22@db.example.org/x"
    text += " API_KEY=abc12345xyz"
    out = redact_patterns(text)
    assert "abcdefghijklmnop1234" not in out and "hunter22" not in out and "abc12345xyz" not in out
    assert (
        "Bearer [REDACTED]" in out
        and "https://bob:[REDACTED]@db.example.org" in out
        and "API_KEY=[REDACTED]" in out
    )


def test_clusters_are_order_free_and_transitive() -> None:
    requests = [
        "Fix the failing test in src/a.py",
        "fix the failing test in src/b.py",
        "Write release notes",
        "Hi",
    ]
    ids = cluster_ids(requests)
    assert ids[0] == ids[1] and len({ids[0], ids[2], ids[3]}) == 3
    assert cluster_ids(list(reversed(requests))) == list(reversed(ids))


@needs_real
def test_harvest_real_sessions(tmp_path: Path) -> None:
    out = tmp_path / "tasks.jsonl"
    proc = subprocess.run(
        [sys.executable, "-m", "skillgrad.cli", "harvest", "--from", str(REAL), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    by_file: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_file.setdefault(Path(row["meta"]["provenance"]["file"]).name, []).append(row)
    assert len(by_file["kiliman_test2.jsonl"]) == 9 and len(by_file["kfischer_b3edadab-main.jsonl"]) == 8
    assert (
        "drmaciver_hello-world-script.jsonl" in by_file and "trackgentic_mp9xupi7.stream.jsonl" not in by_file
    )
    # provenance points at the request's line
    kiliman = by_file["kiliman_test2.jsonl"]
    line = kiliman[3]["meta"]["provenance"]["line"]
    record = json.loads((REAL / "kiliman_test2.jsonl").read_text(encoding="utf-8").splitlines()[line - 1])
    assert record["message"]["content"].startswith("We already have a repo") == kiliman[3][
        "question"
    ].startswith("We already have a repo")
    assert kiliman[2]["meta"]["accepted"] is False and kiliman[2]["meta"]["signals"]["rejections"] == 1
    inits = [r for r in rows if r["question"] == "/init"]
    assert len(inits) == 2 and inits[0]["meta"]["cluster"] == inits[1]["meta"]["cluster"]
    assert f"harvested {len(rows)} tasks" in proc.stdout and "2x  /init" in proc.stdout


def write_tasks(path: Path, clusters: list[str]) -> Path:
    rows = [
        {
            "id": f"t{i}",
            "question": f"task {i}",
            "answers": [],
            "meta": {"cluster": c, "rubric": ["Does it."]},
        }
        for i, c in enumerate(clusters)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def config(tmp_path: Path, data: Path, **bench: Any) -> Any:
    lines = ["benchmark:", "  name: harvested", f"  data: {data}"] + [f"  {k}: {v}" for k, v in bench.items()]
    path = tmp_path / "c.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return load_config(path)


def test_split_keeps_each_cluster_on_one_side(tmp_path: Path) -> None:
    data = write_tasks(tmp_path / "t.jsonl", ["a", "a", "b", "c", "c", "c", "d", "e", "f", "g"])
    cfg = config(tmp_path, data, train_size=6, val_size=3, test_size=0)
    splits = split_by_cluster(read_harvested(data), cfg.benchmark)
    sides = {t.meta["cluster"]: s for s, tasks in splits.items() for t in tasks}
    for split, tasks in splits.items():
        assert all(sides[t.meta["cluster"]] == split for t in tasks)
    assert splits["train"] and splits["val"] and not splits["test"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x", "question": "q", "answers": []}\n')
    with pytest.raises(UserError, match="no meta.cluster"):
        read_harvested(bad)


class ScriptedJudge:
    name, model = "scripted", "judge-1"

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data
        self.seen: list[list[Message]] = []

    def complete(
        self, messages: list[Message], *, schema: Any = None, effort: Any = None, stage: str
    ) -> Reply:
        self.seen.append(messages)
        assert schema is not None and stage == "judge"
        return Reply(json.dumps(self.data), self.data, Usage(10, 5, 1, None))


def test_judge_grades_with_the_rubric_and_the_trace(tmp_path: Path) -> None:
    data = write_tasks(tmp_path / "t.jsonl", ["a", "b"])
    cfg = config(tmp_path, data, train_size=1, val_size=1)
    bench = HarvestedBenchmark(cfg, read_harvested(data), HarvestedOptions())
    task = bench.load("train")[0]
    result = AgentResult("Done it.", trace=[TraceStep("tool_call", "make build", "Bash")])
    with pytest.raises(RuntimeError, match="needs a judge"):
        bench.score(task, result)
    judge = ScriptedJudge({"score": 0.8, "passed": True, "feedback": "fine"})
    bench.use_judge(judge)
    score = bench.score(task, result)
    assert (score.value, score.passed, score.feedback) == (0.8, True, "judge: fine")
    prompt = judge.seen[0][1].content
    assert "- Does it." in prompt and "Done it." in prompt and "[tool_call Bash] make build" in prompt
    bench.use_judge(ScriptedJudge({"score": 0.5, "passed": True, "feedback": "half"}))
    assert not bench.score(task, result).passed  # below pass_score


def fake_run(tmp_path: Path, before: list[bool], after: list[bool]) -> Path:
    run = tmp_path / "run"
    (run / "skills").mkdir(parents=True)
    (run / "skills" / "v0000.md").write_text("Be brief.\n")
    (run / "best_skill.md").write_text("Be brief.\nAlways run the tests.\n")
    summary = {"baseline_val_score": 0.5, "best_val_score": 0.75, "best_version": "v0001", "best_step": 1}
    (run / "summary.json").write_text(json.dumps(summary))
    (run / "config.json").write_text(json.dumps({"skill": {"name": "my-skill"}}))
    (run / "history.jsonl").write_text(
        json.dumps({"step": 1, "action": "accepted", "version": "v0001"}) + "\n"
    )
    for step, passes in ((0, before), (1, after)):
        for i, ok in enumerate(passes):
            folder = run / "steps" / f"{step:04d}" / "rollouts" / "val" / f"q{i}"
            folder.mkdir(parents=True)
            (folder / "score.json").write_text(json.dumps({"value": float(ok), "passed": ok, "feedback": ""}))
            (folder / "task.json").write_text(json.dumps({"id": f"q{i}", "question": f"task {i}"}))
    return run


def test_propose_adopt_undo_bytes_and_regression_check(tmp_path: Path) -> None:
    installed = tmp_path / "proj" / ".claude" / "skills" / "my-skill" / "SKILL.md"
    installed.parent.mkdir(parents=True)
    original = "---\nname: my-skill\ndescription: House rules.\n---\n\nBe brief.\n"
    installed.write_text(original)
    run = fake_run(tmp_path, before=[True, False, False, True], after=[True, True, True, False])
    evidence = propose(run, installed)
    assert evidence["val_gain"] == 0.25 and evidence["trained_from_installed"]
    assert [r["task"] for r in evidence["improved"]] == ["q1", "q2"] and [
        r["task"] for r in evidence["regressed"]
    ] == ["q3"]
    proposed = (run / "proposal" / "SKILL.md").read_text()
    assert (
        proposed
        == "---\nname: my-skill\ndescription: House rules.\n---\n\nBe brief.\nAlways run the tests.\n"
    )
    assert "+Always run the tests." in (run / "proposal" / "skill.diff").read_text()
    with pytest.raises(UserError, match=r"breaks 1 task\(s\) the current skill passes \(q3\)"):
        adopt(run)
    assert installed.read_text() == original  # refused: nothing written
    adopt(run, allow_regressions=True)
    assert installed.read_text() == proposed
    with pytest.raises(UserError, match="changed since the proposal"):
        adopt(run, allow_regressions=True)
    undo(run)
    assert installed.read_text() == original
    with pytest.raises(UserError, match="nothing to undo"):
        undo(run)


def test_adopt_into_a_fresh_place_and_undo_removes_it(tmp_path: Path) -> None:
    run = fake_run(tmp_path, before=[False], after=[True])
    target = tmp_path / "home" / ".claude" / "skills" / "my-skill" / "SKILL.md"
    propose(run, target)
    adopt(run)
    assert skill_file("my-skill", "Be brief.\nAlways run the tests.\n", None) == target.read_text()
    assert target.read_text().startswith("---\nname: my-skill\n")
    undo(run)
    assert not target.exists()


CODEX_SESSIONS = Path(__file__).parent / "fixtures" / "codex" / "sessions"


def test_codex_sessions_harvest_and_trace(tmp_path: Path) -> None:
    """Real rollout files the pinned Codex CLI wrote (tests/fixtures/codex/capture_sessions.py)."""
    from skillgrad.traces.any_session import load_any_session

    out = tmp_path / "codex.jsonl"
    summary = harvest(CODEX_SESSIONS, None, out, Redactor())
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert summary.sessions == 2 and [r["question"] for r in rows] == [
        "Fix the build: run make and tell me what failed.",
        "What does the Makefile's test target run?",
    ]
    first = rows[0]["meta"]
    assert first["signals"]["tool_errors"] == 1 and first["final_answer"].startswith(
        "The build target was missing"
    )
    assert first["provenance"]["session_id"] and first["provenance"]["line"] > 1
    session = load_any_session(CODEX_SESSIONS / "rollout-0.jsonl")
    assert session.finished and [(s.kind, s.tool, s.is_error) for s in session.steps] == [
        ("text", None, False),
        ("tool_call", "exec_command", False),
        ("tool_result", "exec_command", True),
        ("tool_call", "exec_command", False),
        ("tool_result", "exec_command", False),
        ("text", None, False),
    ]
    assert session.steps[1].text == "make build" and "No rule to make target" in session.steps[2].text
