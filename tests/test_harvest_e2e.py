"""Learn from your own sessions, end to end: made-up `~/.claude/projects` sessions with planted
secrets -> `skillgrad harvest` -> `skillgrad train --benchmark harvested` (the REAL Claude Code CLI
as target, optimizer and judge, against the scripted Anthropic API) -> `propose` -> `adopt`
(refused for a regression, then allowed) -> `adopt --undo`, with the installed skill's bytes checked
at every step."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from skillgrad.benchmarks.harvested import read_harvested, split_by_cluster
from skillgrad.config import load_config
from tests.fakes.anthropic_server import FakeAnthropic, FakeReply, FakeRequest, text, tool_use

RULE = "Start every release note with RELEASE: and the version."
SKILL = "house"
SECRET = "ghp_PLANTEDe2e0123456789abcdefghijABCD"
REQUESTS = [
    "Write the release note for version 1.4 of the parser",
    "Write the release note for version 2.0 of the exporter",
    "Write the release note for the 3.1 scheduler release",
    "Draft a release note for version 4.2 of the importer",
    "Release note please for the 5.0 cache rewrite",
    "Write the legacy changelog entry for version 0.9",
    "Write a release note for version 6.1 of the web ui",
    "Write the release note for 7.3 of the cli",
]


def session_records(requests: list[str], session: str) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    parent = None
    for i, request in enumerate(requests):
        uid, aid = f"{session}-u{i}", f"{session}-a{i}"
        content = f"{request} (token {SECRET})" if i == 0 else request
        records.append(
            {
                "type": "user",
                "uuid": uid,
                "parentUuid": parent,
                "sessionId": session,
                "timestamp": "2026-11-25T09:00:00Z",
                "message": {"role": "user", "content": content},
            }
        )
        records.append(
            {
                "type": "assistant",
                "uuid": aid,
                "parentUuid": uid,
                "sessionId": session,
                "message": {"role": "assistant", "content": [{"type": "text", "text": "Here it is."}]},
            }
        )
        parent = aid
    return records  # fmt: skip


def write_sessions(folder: Path) -> None:
    folder.mkdir(parents=True)
    for name, part in (("s-one", REQUESTS[:4]), ("s-two", REQUESTS[4:])):
        lines = [json.dumps(r) for r in session_records(part, name)]
        (folder / f"{name}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


def attempt(req: FakeRequest) -> str:
    match = re.search(r"Final answer:\n(.*?)\n\nSteps:", req.user_text(), re.S)
    return match.group(1).strip() if match else ""


def handler(req: FakeRequest) -> FakeReply:
    system = req.system_text()
    if "You improve a SKILL document" in system:
        if "Read" in req.tool_names() and not req.tool_results():  # the reflection workspace (issue 28)
            return tool_use("Read", {"file_path": "tasks/01/task.md"})  # the harvested task in full
        edit = {"op": "add", "target": "", "content": RULE, "rationale": "release notes lack the prefix"}
        return tool_use("StructuredOutput", {"edits": [edit]})
    if "You grade how well an AI coding agent" in system:
        answer, legacy = attempt(req), "legacy changelog" in req.user_text()
        good = answer.startswith("RELEASE:") != legacy  # the legacy entry must NOT carry the prefix
        verdict = {"score": 1.0 if good else 0.0, "passed": good, "feedback": "ok" if good else "wrong form"}
        return tool_use("StructuredOutput", verdict)
    if "Bash" in req.tool_names():
        results = req.tool_results()
        if not results:
            return tool_use("Skill", {"skill": SKILL})
        if len(results) == 1:
            return tool_use("Bash", {"command": "cat task.md"})
        note = "the parser is faster"
        return text(f"RELEASE: {note}" if RULE in json.dumps(req.body) else note)
    return text("aux")


def pick_seed(tasks_file: Path, cfg_path: Path) -> int:
    """A seed whose val split holds the legacy task and two others, and whose train split can fail."""
    tasks = read_harvested(tasks_file)
    cfg = load_config(cfg_path)
    for seed in range(200):
        splits = split_by_cluster(tasks, cfg.benchmark.model_copy(update={"seed": seed}))
        val = [t.question for t in splits["val"]]
        legacy_in_val = any("legacy" in q for q in val)
        if legacy_in_val and len(val) >= 3 and not any("legacy" in t.question for t in splits["train"]):
            return seed
    raise AssertionError("no seed splits the tasks as the test needs")


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "skillgrad.cli", *args], capture_output=True, text=True, timeout=400, cwd=cwd
    )


@pytest.mark.slow
def test_harvest_train_propose_adopt_undo(tmp_path: Path) -> None:
    sessions = tmp_path / "claude" / "projects" / "-proj"
    write_sessions(sessions)
    project = tmp_path / "proj"
    installed = project / ".claude" / "skills" / SKILL / "SKILL.md"
    installed.parent.mkdir(parents=True)
    original = b"---\nname: house\ndescription: House conventions.\n---\n\nKeep notes short.\n"
    installed.write_bytes(original)

    tasks_file = tmp_path / "tasks.jsonl"
    harvested = run_cli("harvest", "--from", str(sessions), "--out", str(tasks_file), cwd=project)
    assert harvested.returncode == 0, harvested.stderr
    assert "harvested 8 tasks" in harvested.stdout and "from 2 sessions" in harvested.stdout
    assert SECRET not in tasks_file.read_text(encoding="utf-8")

    with FakeAnthropic(handler) as api:
        cfg = tmp_path / "config.yaml"
        lines = [
            "benchmark:", "  name: harvested", f"  data: {tasks_file}", "  train_size: 4", "  val_size: 4",
            "skill:", f"  name: {SKILL}", f"  init: {installed}",
            "model:", f"  base_url: {api.base_url}", "  api_key: sk-ant-FAKE-harvest-000",
            "  optimizer_model: claude-sonnet-4-5", "  target_model: claude-sonnet-4-5",
            "  claude_code_timeout_s: 120", "  timeout_s: 120",
            "train:", "  epochs: 1", "  batch_size: 4", "  minibatch_size: 4", "  concurrency: 4",
            "optimizer:", "  learning_rate: 1", "  min_learning_rate: 1",
            "cache:", f"  dir: {tmp_path / 'cache'}",
        ]  # fmt: skip
        cfg.write_text("\n".join(lines) + "\n", encoding="utf-8")
        seed = pick_seed(tasks_file, cfg)
        out = tmp_path / "run"
        trained = run_cli(
            "train", "--config", str(cfg), "--out", str(out), "--backend", "claude_code_exec",
            "--set", f"benchmark.seed={seed}", cwd=project,
        )  # fmt: skip
    assert trained.returncode == 0, trained.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["accepted"] == 1 and summary["best_val_score"] > summary["baseline_val_score"]
    assert '"judge"' in json.dumps(summary["usage"])  # the judge's calls are counted
    # the analyst read the harvested task in its workspace: rubric, provenance and the judge's verdict
    record = json.loads((out / "steps/0001/reflections/mb_00.json").read_text(encoding="utf-8"))
    assert record["reflection"] == "workspace" and record["opened"][0]["path"] == "tasks/01/task.md"
    task_md = (out / "steps/0001/reflections/mb_00/tasks/01/task.md").read_text(encoding="utf-8")
    assert '"rubric"' in task_md and '"provenance"' in task_md and "## Grader feedback\n\njudge: " in task_md
    assert "rubric" in record["tool_calls"][0]["output"]
    files = [p for p in (out / "steps").rglob("*") if p.is_file()]
    assert files and not [p for p in files if SECRET in p.read_text(errors="replace")]
    assert installed.read_bytes() == original  # training never touches the installed skill

    proposed = run_cli("propose", str(out), cwd=project)
    assert proposed.returncode == 0, proposed.stderr
    evidence = json.loads((out / "proposal" / "proposal.json").read_text(encoding="utf-8"))
    assert evidence["installed_path"] == str(installed.resolve()) or evidence["installed_path"].endswith(
        ".claude/skills/house/SKILL.md"
    )
    assert evidence["trained_from_installed"] and evidence["val_gain"] > 0
    assert [r["question"] for r in evidence["regressed"]] == [q for q in REQUESTS if "legacy" in q]
    assert f"+{RULE}" in (out / "proposal" / "skill.diff").read_text(encoding="utf-8")
    assert installed.read_bytes() == original  # a proposal is never applied silently

    refused = run_cli("adopt", str(out), cwd=project)
    assert refused.returncode == 2 and "--allow-regressions" in refused.stderr
    assert installed.read_bytes() == original

    adopted = run_cli("adopt", str(out), "--allow-regressions", cwd=project)
    assert adopted.returncode == 0, adopted.stderr
    assert installed.read_bytes() == (out / "proposal" / "SKILL.md").read_bytes()
    assert RULE in installed.read_text(encoding="utf-8") and installed.read_text().startswith(
        "---\nname: house"
    )

    undone = run_cli("adopt", "--undo", str(out), cwd=project)
    assert undone.returncode == 0, undone.stderr
    assert installed.read_bytes() == original
    for path in out.rglob("*"):
        if path.is_file() and path.suffix in (".json", ".jsonl", ".md", ".txt", ".diff"):
            assert SECRET not in path.read_text(encoding="utf-8")
