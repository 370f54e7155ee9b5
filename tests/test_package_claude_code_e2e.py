"""A skill package trained end to end with the REAL Claude Code CLI as target (scripted API):
the housecli benchmark and its starter package (configs/skills/housecli). The scripted agent
loads its skill, reads task.md and the package's references/cli.md, and calls the house CLI as
the reference says; the analyst fixes the reference. Killed at the analyst's call and resumed:
nothing finished is paid again; the report shows the change per file."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from tests import e2e_config
from tests.e2e_config import one_epoch_lines
from tests.fakes.anthropic_server import FakeAnthropic, FakeReply, FakeRequest, text, tool_use

REPO = Path(__file__).resolve().parents[1]
STARTER = REPO / "configs" / "skills" / "housecli"
SKILL_NAME = "housecli"
FAKE_KEY = "sk-ant-FAKE-pkg-0123456789abcdef"
OLD_LINE = "- `--weight W`: the parcel weight."
NEW_LINE = "- `--weight W`: the parcel weight in whole grams, e.g. 2.5 kg -> 2500."


def is_optimizer(req: FakeRequest) -> bool:
    return "You improve a SKILL document" in req.system_text()


def house_call(task: str, reference: str) -> str:
    """What an agent does with what the reference says: the zone from its table, the weight in
    grams only when the reference says so (else the number of kilograms, as the task states)."""
    kilos, city, lane = re.search(r"a ([\d.]+) kg parcel to (\w+) on the (\w+) lane", task).groups()  # type: ignore[union-attr]
    zone = re.search(rf"\| {city} \| ([A-Z]{{2}}-\d) \|", reference)
    weight_line = next(
        (line for line in reference.splitlines() if "--weight" in line and line.startswith("-")), ""
    )
    weight = str(round(float(kilos) * 1000)) if "grams" in weight_line else kilos
    zone_code = zone.group(1) if zone else city
    return f"{sys.executable} tools/house.py quote --zone {zone_code} --lane {lane} --weight {weight}"


def target_turn(req: FakeRequest) -> FakeReply:
    results = req.tool_results()
    if not results:
        return tool_use("Skill", {"skill": SKILL_NAME}, say="Loading my skill.")
    if len(results) == 1:
        return tool_use("Bash", {"command": "cat task.md", "description": "read the task"})
    if len(results) == 2:
        ref = f".claude/skills/{SKILL_NAME}/references/cli.md"
        return tool_use("Bash", {"command": f"cat {ref}", "description": "read the CLI reference"})
    if len(results) == 3:
        command = house_call(results[1]["text"], results[2]["text"])
        return tool_use("Bash", {"command": command, "description": "get the quote"})
    found = re.search(r"quote (Q\S+)", results[-1]["text"])
    return text(found.group(1) if found else "no quote", input_tokens=60, output_tokens=5)


def edit_reply() -> FakeReply:
    edit = {
        "op": "replace",
        "file": "references/cli.md",
        "target": OLD_LINE,
        "content": NEW_LINE,
        "rationale": "the expected calls pass grams",
    }
    return text(json.dumps({"edits": [edit]}), input_tokens=400, output_tokens=60)


class World:
    """The scripted API; it SIGKILLs the trainer on the first analyst call when armed."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.pid: int | None = None
        self.kill_on_reflect = False
        self.first_turns: list[str] = []  # one per rollout the CLI started (its first request)
        self.reflections = 0
        self.handled: list[FakeRequest] = []

    def __call__(self, req: FakeRequest) -> FakeReply:
        if is_optimizer(req):
            with self.lock:
                if self.kill_on_reflect and self.pid:
                    self.kill_on_reflect = False
                    os.kill(self.pid, signal.SIGKILL)
                    return FakeReply(status=500)
                self.reflections += 1
                self.handled.append(req)
            return edit_reply()
        if "Bash" in req.tool_names():
            with self.lock:
                self.handled.append(req)
                if not req.tool_results():  # a rollout starts: note its workspace
                    found = re.search(r"(steps/\d{4}/rollouts/[^/\s]+/[^/\s]+)/workspace", req.user_text())
                    self.first_turns.append(found.group(1) if found else "?")
            return target_turn(req)
        return text("aux")


def write_config(tmp_path: Path, api: FakeAnthropic) -> Path:
    shutil.copytree(STARTER, tmp_path / "skill")
    lines = [
        "benchmark:", "  name: housecli", "  train_size: 2", "  val_size: 2", "  test_size: 0", "  seed: 3",
        "skill:", "  init: skill", f"  name: {SKILL_NAME}", "  max_chars: 4000",
        "model:", f"  base_url: {api.base_url}", f"  api_key: {FAKE_KEY}",
        "  optimizer_backend: anthropic_chat", "  target_backend: claude_code_exec",
        "  optimizer_model: claude-sonnet-4-5", "  target_model: claude-sonnet-4-5",
        "  claude_code_timeout_s: 120", "  timeout_s: 60", "  max_retries: 0",
        *one_epoch_lines(2, tmp_path / "cache"),
    ]  # fmt: skip
    return e2e_config.write_config(tmp_path, lines)


def train(world: World, *args: str) -> subprocess.CompletedProcess[str]:
    # config.json keeps no secret: a resumed run takes its key from the environment
    env = {**os.environ, "ANTHROPIC_API_KEY": FAKE_KEY}
    proc = subprocess.Popen(
        [sys.executable, "-m", "skillgrad.cli", "train", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    world.pid = proc.pid
    out, err = proc.communicate(timeout=280)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.slow
def test_package_trains_with_claude_code_resumes_after_a_kill_and_reports_per_file(tmp_path: Path) -> None:
    world = World()
    with FakeAnthropic(world) as api:
        cfg, out = write_config(tmp_path, api), tmp_path / "run"
        world.kill_on_reflect = True
        killed = train(world, "--config", str(cfg), "--out", str(out))
        assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
        before = len(world.first_turns)
        assert before == 4  # 2 baseline + 2 train rollouts finished before the analyst's call
        resumed = train(world, "--resume", str(out))
        assert resumed.returncode == 0, resumed.stderr[-3000:]
        assert not api.handler_errors
    # nothing repaid: the resumed run only validated the candidate (2 rollouts) and reflected once
    assert len(world.first_turns) == before + 2 and world.reflections == 1
    assert len(set(world.first_turns)) == 6  # no rollout ran twice
    assert sorted(world.first_turns)[0].startswith("steps/0000/rollouts/val/")
    summary = read_json(out / "summary.json")
    assert summary["baseline_val_score"] == 0.0 and summary["best_val_score"] == 1.0
    assert summary["best_version"] == "v0001" and summary["task_text_copies"] == 0
    # versions are folders; the edit landed in the reference file, SKILL.md is untouched
    v0, v1 = out / "skills" / "v0000", out / "skills" / "v0001"
    assert (v0 / "references" / "cli.md").read_text(encoding="utf-8") == (
        STARTER / "references" / "cli.md"
    ).read_text(encoding="utf-8")
    assert NEW_LINE in (v1 / "references" / "cli.md").read_text(encoding="utf-8")
    assert (v1 / "SKILL.md").read_text(encoding="utf-8") == (STARTER / "SKILL.md").read_text(encoding="utf-8")
    assert (out / "best_skill" / "references" / "cli.md").read_text(encoding="utf-8") == (
        v1 / "references" / "cli.md"
    ).read_text(encoding="utf-8")
    assert not (out / "best_skill.md").exists() and not (out / "skills" / "v0000.md").exists()
    report = read_json(out / "steps" / "0001" / "edit_report.json")
    assert report[0]["status"] == "applied" and report[0]["edit"]["file"] == "references/cli.md"
    # every rollout's workspace had the whole package installed
    workspaces = [p for p in out.rglob("workspace") if p.is_dir()]
    assert len(workspaces) == 6
    for workspace in workspaces:
        installed = workspace / ".claude" / "skills" / SKILL_NAME
        assert (installed / "SKILL.md").read_text(encoding="utf-8").startswith(f"---\nname: {SKILL_NAME}\n")
        reference = (installed / "references" / "cli.md").read_text(encoding="utf-8")
        rel = workspace.relative_to(out).parts  # steps/NNNN/rollouts/<split>/<task>/workspace
        assert (rel[1], rel[3]) in {("0000", "val"), ("0001", "train"), ("0001", "val")}
        assert (rel[1] == "0001" and rel[3] == "val") == (NEW_LINE in reference)
    # the analyst saw the file list and the reference the failing tasks read, in full
    analyst = next(r for r in world.handled if is_optimizer(r))
    assert (
        "| references/cli.md |" in analyst.user_text()
        and '<file path="references/cli.md">' in analyst.user_text()
    )
    assert "within 4000 chars" in analyst.user_text()
    assert (
        '| SKILL.md | 411 chars | "# House shipping quotes" |' in analyst.user_text()
    )  # past the front matter
    # the report shows the change per file, and the size of each version
    proc = subprocess.run(
        [sys.executable, "-m", "skillgrad.cli", "report", str(out)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "step 1: v0000 → v0001 · references/cli.md" in html and "parcel weight in whole grams" in html
    assert (
        '<b>replace</b> <span class="muted">references/cli.md</span>' in html
    )  # the step's edit names its file
    assert "SKILL.md" not in html.split("step 1: v0000 → v0001", 1)[1].split("</summary>", 1)[0]
    sizes = re.findall(r"<tr><td>(v\d{4})</td><td>([\d,]+)</td><td>(\d+)</td>", html)
    assert [v for v, _, _ in sizes] == ["v0000", "v0001"] and all(n == "2" for _, _, n in sizes)
    grown = int(sizes[1][1].replace(",", "")) - int(sizes[0][1].replace(",", ""))
    assert grown == len(NEW_LINE) - len(OLD_LINE)
    for path in out.rglob("*"):
        if path.is_file() and path.suffix in (".json", ".jsonl", ".md", ".txt", ".html"):
            assert FAKE_KEY not in path.read_text(encoding="utf-8")
