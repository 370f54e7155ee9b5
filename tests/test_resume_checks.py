"""Issue 32, defects 2 and 5: `train --resume` checks everything it reads before anything runs.

A run stopped by its budget is resumable. Each file a resume reads (state.json and its ledger,
history.jsonl, paid.jsonl, a rollout set's index, the skill versions the state names) is damaged
in one way; the resume then says in one line which file, what is wrong and what to do (exit 2),
makes no call and leaves every byte of the run folder as it was. The undamaged copy resumes.
A resumed Claude Code run whose key was only in its config file says which variable or --config
to pass, before any task runs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.fakes.openai_server import ScriptedOpenAI
from tests.test_resume import World, config

pytestmark = pytest.mark.timeout(300)

Damage = Callable[[Path], None]


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "skillgrad.cli", *args], capture_output=True, text=True, timeout=200, env=env
    )


@pytest.fixture(scope="module")
def stopped_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, World, ScriptedOpenAI]]:
    """A run the call budget stopped after its first accepted step; the server stays up."""
    world, root = World(), tmp_path_factory.mktemp("stopped")
    with ScriptedOpenAI(world) as server:
        cfg, out = config(root, server, "a"), root / "run"
        proc = _cli("train", "--config", str(cfg), "--out", str(out), "--set", "budget.max_calls=14")
        assert proc.returncode == 0, proc.stderr
        summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
        assert summary["stopped"] == "budget" and summary["accepted"] >= 1
        yield out, world, server


def _files(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def _json_edit(rel: str, change: Callable[[dict], object]) -> Damage:
    def damage(out: Path) -> None:
        path = out / rel
        data = json.loads(path.read_text(encoding="utf-8"))
        data = change(data) or data
        path.write_text(json.dumps(data), encoding="utf-8")

    return damage


def _write(rel: str, text: str) -> Damage:
    return lambda out: (out / rel).write_text(text, encoding="utf-8")


def _state(**values: object) -> Damage:
    return _json_edit("state.json", lambda d: d.update(values))


def _ledger(change: Callable[[dict], object]) -> Damage:
    return _json_edit("state.json", lambda d: change(d["ledger"]))


def _insert_line(rel: str, line: str) -> Damage:
    def damage(out: Path) -> None:
        lines = (out / rel).read_text(encoding="utf-8").splitlines(keepends=True)
        (out / rel).write_text("".join([lines[0], line + "\n", *lines[1:]]), encoding="utf-8")

    return damage


def _remove_best_skill(out: Path) -> None:
    best = json.loads((out / "state.json").read_text(encoding="utf-8"))["best_version"]
    (out / "skills" / f"v{best:04d}.md").unlink()


DAMAGE: dict[str, tuple[Damage, str, str]] = {
    # name: (damage, the file the line names, what it says)
    "state empty": (_write("state.json", ""), "state.json", "not valid UTF-8 JSON"),
    "state not JSON": (_write("state.json", "{ step: 1"), "state.json", "not valid UTF-8 JSON"),
    "state a list": (_write("state.json", "[]"), "state.json", "expected a JSON object"),
    "state without keys": (_write("state.json", '{"ledger": {}}'), "state.json", "not a checkpoint"),
    "state wrong type": (_state(step="three"), "state.json", "step: Input should be a valid integer"),
    "state unknown key": (_state(surprise=1), "state.json", "surprise: unknown key"),
    "state negative count": (_state(rejected=-1), "state.json", "rejected: Input should be greater"),
    "state score out of range": (_state(current_score=7), "state.json", "current_score"),
    "state step never run": (_state(step=10**12), "state.json", "step 1000000000000 is not in history"),
    "state bad edit": (_state(rejected_edits=[{"op": "explode"}]), "state.json", "rejected_edits.0.op"),
    "state skill version missing": (_remove_best_skill, "state.json", "v0001(.md), which is missing"),
    "state missing": (lambda out: (out / "state.json").unlink(), "state.json", "history.jsonl records"),
    "ledger wrong type": (
        _ledger(lambda d: d["total"].update(calls="many")),
        "state.json",
        "ledger.total.calls",
    ),
    "ledger mark past journal": (
        _ledger(lambda d: d.update(journal_mark=10**6)),
        "state.json",
        "journal_mark",
    ),
    "journal garbage line": (_insert_line("paid.jsonl", "#$%"), "paid.jsonl", "line 2 is not a JSON object"),
    "journal wrong shape": (
        _insert_line("paid.jsonl", '{"role": "target", "stage": null, "usage": {"calls": -1}}'),
        "paid.jsonl",
        "line 2: usage.calls",
    ),
    "history row without step": (
        _insert_line("history.jsonl", '{"action": "accepted"}'),
        "history.jsonl",
        "step",
    ),
    "task index not JSON": (
        _write("steps/0001/rollouts/train.tasks.json", '["q0"'),
        "train.tasks.json",
        "Invalid JSON",
    ),
    "task index escapes": (
        _write("steps/0001/rollouts/val.tasks.json", '["q2", ".."]'),
        "val.tasks.json",
        "not a task folder",
    ),
}


def _refused_resume(source: Path, out: Path, damage: Damage, world: World) -> str:
    """Resume a damaged copy of `source` in `out`: the one line it was refused with, after checking
    that it is one line with exit code 2, that no call was made and that not a byte changed."""
    shutil.copytree(source, out)
    damage(out)
    before, asked = _files(out), len(world.answered)
    proc = _cli("train", "--resume", str(out), "--set", "budget.max_calls=1000")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
    line = proc.stderr.strip()
    assert "start a new run with" in line, line
    assert len(world.answered) == asked  # no call was made
    assert _files(out) == before  # not a byte changed, nothing added (no lock file left behind)
    return line


@pytest.mark.parametrize("name", sorted(DAMAGE))
def test_a_damaged_file_is_named_in_one_line_and_nothing_changes(
    tmp_path: Path, stopped_run: tuple[Path, World, ScriptedOpenAI], name: str
) -> None:
    source, world, _ = stopped_run
    damage, named, says = DAMAGE[name]
    line = _refused_resume(source, tmp_path / "run", damage, world)
    assert named in line and says in line, line


def test_the_undamaged_run_resumes(tmp_path: Path, stopped_run: tuple[Path, World, ScriptedOpenAI]) -> None:
    source, world, _ = stopped_run
    out = tmp_path / "run"
    shutil.copytree(source, out)
    asked = len(world.answered)
    proc = _cli("train", "--resume", str(out), "--set", "budget.max_calls=1000")
    assert proc.returncode == 0, proc.stderr
    assert len(world.answered) > asked
    assert json.loads((out / "summary.json").read_text(encoding="utf-8"))["stopped"] != "budget"


# -- a frontier run's pool (optimizer.search: frontier) is part of state.json ------------------


@pytest.fixture(scope="module")
def stopped_frontier_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Path, World, ScriptedOpenAI]]:
    """A frontier run the call budget stopped after its first accepted step (a pool of two)."""
    world, root = World(), tmp_path_factory.mktemp("frontier")
    with ScriptedOpenAI(world) as server:
        cfg, out = config(root, server, "a"), root / "run"
        proc = _cli("train", "--config", str(cfg), "--out", str(out),
                    "--set", "budget.max_calls=14", "--set", "optimizer.search=frontier")  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        state = json.loads((out / "state.json").read_text(encoding="utf-8"))
        assert len(state["pool"]["members"]) >= 2 and state["best_version"] >= 1
        yield out, world, server


def _pool(change: Callable[[dict], object]) -> Damage:
    return _json_edit("state.json", lambda d: change(d["pool"]))


def _member(index: int, **values: object) -> Damage:
    return _pool(lambda pool: pool["members"][index].update(values))


POOL_DAMAGE: dict[str, tuple[Damage, str]] = {
    "pool not an object": (_state(pool="frontier"), "pool: Input should be a valid dictionary"),
    "pool empty": (_pool(lambda pool: pool.update(members=[])), "pool.members: List should have at least 1"),
    "member unknown key": (_member(0, surprise=1), "pool.members.0.surprise: unknown key"),
    "member score not a number": (_member(1, results={"x": ["high"]}), "pool.members.1.results"),
    "member parent not earlier": (_member(1, parents=[9]), "parent v9 is not an earlier member"),
    "member edit not an edit": (_member(1, edits=[{"op": "explode"}]), "unknown edit op"),
    "member past the version": (_member(-1, version=99), "pool member v99 is past the current version"),
    "best not a member": (
        _pool(lambda pool: pool.update(members=pool["members"][:1])),
        "is not a member of the pool",
    ),
}


@pytest.mark.parametrize("name", sorted(POOL_DAMAGE))
def test_a_damaged_pool_is_named_in_one_line_and_nothing_changes(
    tmp_path: Path, stopped_frontier_run: tuple[Path, World, ScriptedOpenAI], name: str
) -> None:
    source, world, _ = stopped_frontier_run
    damage, says = POOL_DAMAGE[name]
    line = _refused_resume(source, tmp_path / "run", damage, world)
    assert f"{tmp_path / 'run' / 'state.json'}: " in line and says in line, line


def test_the_undamaged_frontier_run_resumes_with_its_pool(
    tmp_path: Path, stopped_frontier_run: tuple[Path, World, ScriptedOpenAI]
) -> None:
    source, world, _ = stopped_frontier_run
    out = tmp_path / "run"
    shutil.copytree(source, out)
    members = len(json.loads((out / "state.json").read_text(encoding="utf-8"))["pool"]["members"])
    asked = len(world.answered)
    proc = _cli("train", "--resume", str(out), "--set", "budget.max_calls=1000")
    assert proc.returncode == 0, proc.stderr
    assert len(world.answered) > asked
    state = json.loads((out / "state.json").read_text(encoding="utf-8"))
    assert len(state["pool"]["members"]) >= members  # the pool went on from where it was
    assert json.loads((out / "summary.json").read_text(encoding="utf-8"))["search"]["strategy"] == "frontier"


# -- defect 5: a Claude Code run resumed without the key its config file gave ------------------


@pytest.mark.slow
def test_a_resumed_claude_code_run_without_its_key_says_what_to_pass(tmp_path: Path) -> None:
    from tests import test_claude_code_train_e2e as claude
    from tests.fakes.anthropic_server import FakeAnthropic

    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN")}
    with FakeAnthropic(claude.handler) as api:
        cfg, out = claude.write_config(tmp_path, api), tmp_path / "run"
        first = _cli("train", "--config", str(cfg), "--out", str(out), "--backend", "claude_code_exec",
                     "--set", "budget.max_calls=1", env=env)  # fmt: skip
        assert first.returncode == 0, first.stderr[-3000:]
        assert json.loads((out / "summary.json").read_text(encoding="utf-8"))["stopped"] == "budget"
        before, asked = _files(out), len(api.message_requests)
        proc = _cli("train", "--resume", str(out), env=env)
        assert len(api.message_requests) == asked  # no task ran
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
        assert "ANTHROPIC_API_KEY" in proc.stderr and f"--resume {out} --config FILE" in proc.stderr
        assert claude.FAKE_KEY not in proc.stderr and _files(out) == before
        # With the variable, or the config file passed again, the resume goes on (the same budget
        # stops it again at once, before any call).
        for extra, more_env in (
            ([], {"ANTHROPIC_API_KEY": claude.FAKE_KEY}),
            (["--config", str(cfg), "--backend", "claude_code_exec"], {}),
        ):
            again = _cli(
                "train", "--resume", str(out), *extra, "--set", "budget.max_calls=1", env={**env, **more_env}
            )
            assert again.returncode == 0, again.stderr[-3000:]
            assert "budget" in json.loads((out / "summary.json").read_text(encoding="utf-8"))["stopped"]
