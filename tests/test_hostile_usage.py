"""Issue 12, defect 9: usage counts what was paid across crashes. Calls paid (and cached) after
the last checkpoint come back as cache hits on resume; they must still count as paid, so that
`budget.max_*` cannot be overshot by crashing."""

from __future__ import annotations

import json
import signal
from pathlib import Path

from tests.fakes.openai_server import ScriptedOpenAI
from tests.test_resume import World, config, train


def test_paid_calls_survive_sigkills_and_resumes(tmp_path: Path) -> None:
    world = World()
    with ScriptedOpenAI(world) as server:
        cfg, out = config(tmp_path, server, "killed"), tmp_path / "run"
        kills = 0
        for kill_at in (7, 5, 6):  # requests answered since the previous kill
            world.kill_at = len(world.answered) + kill_at
            extra = ("--resume", str(out)) if kills else ()
            code = train(cfg, out, world, *extra)
            if code != -signal.SIGKILL:
                break
            kills += 1
        world.kill_at = None
        if code == -signal.SIGKILL:
            code = train(cfg, out, world, "--resume", str(out))
    assert code == 0 and kills >= 2
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    paid = summary["usage"]["total"]["calls"]
    assert paid == len(world.answered), (paid, len(world.answered))
    by_role = summary["usage"]["by_role"]
    assert by_role["target"]["calls"] + by_role["optimizer"]["calls"] == paid


def test_resume_removes_temp_files_a_sigkill_left(tmp_path: Path) -> None:
    """Issue 12, defect 12: `.<name>.<random>.tmp` files of interrupted atomic writes are cleaned."""
    world = World()
    with ScriptedOpenAI(world) as server:
        cfg, out = config(tmp_path, server, "run-config"), tmp_path / "run"
        assert train(cfg, out, world) == 0
        stale = [out / ".summary.json.k3j2h1.tmp", out / "steps" / "0001" / ".gate.json.x9y8z7.tmp"]
        for path in stale:
            path.write_text("half a writ", encoding="utf-8")
        agents_own = next((out / "steps" / "0001").rglob("answer.txt")).parent / "workspace" / ".notes.tmp"
        agents_own.parent.mkdir(parents=True, exist_ok=True)
        agents_own.write_text("the agent's file", encoding="utf-8")
        assert train(cfg, out, world, "--resume", str(out)) == 0
    assert not any(p.exists() for p in stale)
    assert agents_own.exists()
