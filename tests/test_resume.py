"""Fault injection: SIGKILL the trainer at seeded points, resume, and compare with a clean run."""

from __future__ import annotations

import fcntl
import json
import os
import random
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.fakes.openai_server import Request, ScriptedOpenAI, json_reply, server_error, text
from tests.test_train_e2e import (
    BAD_RULE,
    FAKE_KEY,
    GOOD_RULE,
    is_optimizer,
    skillgrad,
    target_answer,
    write_config,
)

VOLATILE = {
    "usage",
    "calls",
    "rounds",
    "wall_s",
    "sessions",
    "time",
    "ledger",
}  # paid in THIS process; clocks


def optimizer_reply(request: Request):
    rule = BAD_RULE if GOOD_RULE in request.user else GOOD_RULE
    return json_reply(
        {"edits": [{"op": "add", "target": "", "content": rule, "rationale": "r"}]}, usage=(200, 30)
    )


class World:
    """The scripted API; it can SIGKILL the trainer while a chosen request is in flight."""

    def __init__(self) -> None:
        self.answered: list[str] = []
        self.kill_at: int | None = None
        self.pid: int | None = None
        self.lock = threading.Lock()

    def __call__(self, request: Request):
        with self.lock:
            if self.kill_at is not None and len(self.answered) + 1 == self.kill_at and self.pid:
                os.kill(self.pid, signal.SIGKILL)  # the request is never answered: nothing paid
                self.kill_at = None
                return server_error(500)
            self.answered.append(json.dumps({"model": request["model"], "messages": request["messages"]}))
        return optimizer_reply(request) if is_optimizer(request) else text(target_answer(request), 20, 8)


def config(tmp_path: Path, server: ScriptedOpenAI, name: str) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    return write_config(folder, server, epochs=2, batch_size=2, minibatch_size=2, concurrency=1)


def train(cfg: Path, out: Path, world: World, *extra: str) -> int:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "skillgrad.cli",
            "train",
            *extra,
            *(["--config", str(cfg), "--out", str(out)] if not extra else []),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    world.pid = proc.pid
    _, err = proc.communicate(timeout=240)
    assert "Traceback" not in err, err
    return proc.returncode


def normalise(node):
    if isinstance(node, dict):
        return {k: normalise(v) for k, v in node.items() if k not in VOLATILE}
    if isinstance(node, list):
        return [normalise(v) for v in node]
    return node


def artifacts(out: Path) -> dict[str, object]:
    result: dict[str, object] = {}
    for path in sorted(out.rglob("*")):
        rel = path.relative_to(out).as_posix()
        if not path.is_file() or rel in {"train.log", ".lock", "config.json"}:
            continue
        content = path.read_text(encoding="utf-8")
        if path.suffix == ".json":
            result[rel] = normalise(json.loads(content))
        elif path.suffix == ".jsonl":
            result[rel] = [normalise(json.loads(line)) for line in content.splitlines()]
        else:
            result[rel] = content
    return result


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sigkill_anywhere_then_resume_matches_clean_run(tmp_path: Path, seed: int) -> None:
    clean_world, world = World(), World()
    with ScriptedOpenAI(clean_world) as server:
        assert train(config(tmp_path, server, "clean"), tmp_path / "clean-run", clean_world) == 0
    total = len(clean_world.answered)
    kills = sorted(random.Random(seed).sample(range(1, total), 2))
    with ScriptedOpenAI(world) as server:
        cfg, out = config(tmp_path, server, "killed"), tmp_path / "killed-run"
        world.kill_at = kills[0]
        assert train(cfg, out, world) == -signal.SIGKILL
        world.kill_at = (
            kills[1] - kills[0] + len(world.answered) if kills[1] > len(world.answered) + 1 else None
        )
        code = train(cfg, out, world, "--resume", str(out))
        if code == -signal.SIGKILL:
            code = train(cfg, out, world, "--resume", str(out))
        assert code == 0
    assert len(world.answered) == len(set(world.answered)), "a paid call was repeated"
    assert len(world.answered) == total
    assert artifacts(out) == artifacts(tmp_path / "clean-run")


def test_resume_refuses_a_different_config_and_a_second_trainer(tmp_path: Path) -> None:
    world = World()
    with ScriptedOpenAI(world) as server:
        cfg, out = config(tmp_path, server, "a"), tmp_path / "run"
        assert train(cfg, out, world) == 0
        proc = skillgrad("train", "--resume", str(out), "--set", "train.epochs=5")
        assert proc.returncode == 2 and "train.epochs" in proc.stderr and "different config" in proc.stderr
        (out / ".lock").write_text("{}")
        with open(out / ".lock") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            proc = skillgrad("train", "--resume", str(out))
        assert proc.returncode == 2 and "another skillgrad trainer" in proc.stderr
        before = (artifacts(out), len(world.answered))
        # The budget may change on resume; resuming a finished run redoes nothing and pays nothing.
        proc = skillgrad("train", "--resume", str(out), "--set", "budget.max_calls=1000")
        assert proc.returncode == 0, proc.stderr
        assert (artifacts(out), len(world.answered)) == before


def test_resume_freezes_what_changes_results_and_lets_the_cache_move(tmp_path: Path) -> None:
    """A new cache salt would resample every call and no cache would repay them: both refused in
    one line; the cache's location may change (its misses are paid, the requests are the same)."""
    world = World()
    with ScriptedOpenAI(world) as server:
        cfg, out = config(tmp_path, server, "a"), tmp_path / "run"
        assert train(cfg, out, world) == 0
        before = (artifacts(out), len(world.answered))
        salted = skillgrad("train", "--resume", str(out), "--set", "cache.salt=again")
        assert salted.returncode == 2 and salted.stderr.count("\n") == 1, salted.stderr
        assert "cache.salt ('' -> 'again')" in salted.stderr and "different config" in salted.stderr
        uncached = skillgrad("train", "--resume", str(out), "--no-cache")
        assert uncached.returncode == 2 and "cache.enabled (True -> False) (--no-cache" in uncached.stderr
        moved = skillgrad("train", "--resume", str(out), "--set", f"cache.dir={tmp_path / 'moved'}")
        assert moved.returncode == 0, moved.stderr
        assert (artifacts(out), len(world.answered)) == before
        # A run started without the cache keeps that in its config.json: it resumes without it.
        plain = tmp_path / "plain"
        assert train(cfg, plain, world, "--config", str(cfg), "--out", str(plain), "--no-cache") == 0
        assert json.loads((plain / "config.json").read_text(encoding="utf-8"))["cache"]["enabled"] is False
        cached = skillgrad("train", "--resume", str(plain), "--set", "cache.enabled=true")
        assert cached.returncode == 2 and "cache.enabled (False -> True)" in cached.stderr
        assert skillgrad("train", "--resume", str(plain)).returncode == 0


@pytest.mark.parametrize("concurrency", [1, 3])
def test_budget_cap_stops_at_the_cap_and_keeps_the_best(tmp_path: Path, concurrency: int) -> None:
    world = World()
    with ScriptedOpenAI(world) as server:
        cfg, out = config(tmp_path, server, "a"), tmp_path / "run"
        caps = ["--set", "budget.max_calls=10", "--set", f"train.concurrency={concurrency}"]
        proc = skillgrad("train", "--config", str(cfg), "--out", str(out), *caps)
        assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["stopped"] == "budget"
    assert summary["usage"]["total"]["calls"] == 10 == len(world.answered)
    assert (out / "best_skill.md").exists()


def test_estimate_spends_nothing(tmp_path: Path) -> None:
    world = World()
    with ScriptedOpenAI(world) as server:
        cfg = config(tmp_path, server, "a")
        proc = skillgrad("train", "--config", str(cfg), "--estimate", "--json")
        assert not server.requests
    assert proc.returncode == 0, proc.stderr
    projection = json.loads(proc.stdout)
    # 4 train tasks, batch 2, 2 epochs: 4 steps; 4 val... see write_config sizes (train 4, val 4, test 2)
    assert projection["steps"] == 4
    assert projection["by_stage"]["baseline"]["calls"] == 4
    assert projection["by_stage"]["reflect"]["calls"] == 4
    # rollouts 8 + 3 redone after rejections (half of the 3 steps that have a next one, batch 2);
    # racing validates 3/4 of the 4 val items per step on average; test 2 x 2; and the retries
    retries = sum(stage["retries"] for stage in projection["by_stage"].values())
    assert projection["total"]["calls"] - retries == 4 + (8 + 3) + 12 + 4 + 4


def test_no_secret_reaches_the_run_folder(tmp_path: Path) -> None:
    env_secret = "sk-ant-test-FAKE-environment-987654321"

    def leaky(request: Request):
        # The "agent" echoes credentials back, as a confused model might.
        if is_optimizer(request):
            return optimizer_reply(request)
        return text(f"{target_answer(request)} {FAKE_KEY} {env_secret}")

    with ScriptedOpenAI(leaky) as server:
        cfg, out = config(tmp_path, server, "a"), tmp_path / "run"
        env = {**os.environ, "ANTHROPIC_API_KEY": env_secret}
        proc = subprocess.run(
            [sys.executable, "-m", "skillgrad.cli", "train", "--config", str(cfg), "--out", str(out)],
            capture_output=True,
            text=True,
            env=env,
            timeout=240,
        )
        assert proc.returncode == 0, proc.stderr
    blob = "".join(p.read_text(encoding="utf-8") for p in out.rglob("*") if p.is_file())
    assert FAKE_KEY not in blob and env_secret not in blob
    cached = "".join(p.read_text(encoding="utf-8") for p in (tmp_path / "a" / "cache").rglob("*.json"))
    assert cached and FAKE_KEY not in cached and env_secret not in cached  # the cache outlives the run
    assert "[REDACTED]" in blob
    assert FAKE_KEY not in proc.stdout + proc.stderr
