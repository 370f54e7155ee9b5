"""Overlap, racing, the paired gate and early stop, end to end: `skillgrad train` as a subprocess
against the scripted OpenAI-compatible server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.fakes.openai_server import Request, ScriptedOpenAI, json_reply, server_error, text

GROUPS = 3
RULES = [f"Rule {g}: items of group {g} are answered with their code." for g in range(GROUPS)]
BAD = "Always answer in French."
ORDER = [RULES[0], RULES[1], BAD, RULES[2]]  # what the analyst proposes, first missing one first
ANALYST = "You improve a SKILL document"


def item(i: int) -> dict:
    return {"id": f"q{i:02d}", "question": f"What is the code of item {i}?", "answers": [f"code-{i}"]}


class World:
    """A target that is right on an item when the skill holds its group's rule (and not BAD);
    an analyst that proposes the first rule of ORDER neither in the skill nor rejected. It can
    SIGKILL the trainer at the first request `kill_when` matches (that request is never paid)."""

    def __init__(self, delay_s: float = 0.0) -> None:
        self.delay_s = delay_s
        self.lock = threading.Lock()
        self.answered: list[str] = []
        self.with_bad: list[int] = []  # items run with the BAD candidate
        self.kill_when = None
        self.killing = threading.Event()
        self.pid: int | None = None
        self.cache: Path | None = None  # the trainer's call cache, watched before a kill

    def _answers_cached(self, timeout_s: float = 20.0) -> None:
        """Wait until every answer already sent is in the trainer's call cache (one entry per
        distinct request): a SIGKILL may strike at any moment, and a reply that arrived a
        millisecond before it is lost by any client, which the test's comparison cannot allow."""
        if self.cache is None:
            return
        with self.lock:
            wanted = len(set(self.answered))
        deadline = time.monotonic() + timeout_s
        while len(list(self.cache.rglob("*.json"))) < wanted and time.monotonic() < deadline:
            time.sleep(0.01)  # polling the disk under a deadline, not a guess at a delay

    def __call__(self, request: Request):
        if not request.messages:  # a body cut short by the SIGKILL of its sender
            return server_error(400)
        key = json.dumps(request.messages)
        with self.lock:
            killing = self.killing.is_set()
        if killing:  # the trainer is about to die: held until then, never answered, never paid
            time.sleep(2.0)
            return server_error(500)
        with self.lock:
            trigger = self.kill_when is not None and self.pid is not None and self.kill_when(request)
            if trigger:
                self.kill_when = None
                self.killing.set()
            else:
                self.answered.append(key)
        if trigger:
            self._answers_cached()
            os.kill(self.pid or 0, signal.SIGKILL)
            return server_error(500)
        time.sleep(self.delay_s)
        if ANALYST in request.system:
            prompt = request.user
            skill = prompt.split("<skill>")[1].split("</skill>")[0]
            rejected = prompt.split("## Rejected edits")[1] if "## Rejected edits" in prompt else ""
            rule = next((r for r in ORDER if r not in skill and r not in rejected), None)
            edits = [{"op": "add", "target": "", "content": rule, "rationale": "misses"}] if rule else []
            return json_reply({"edits": edits}, usage=(300, 40))
        number = int(request.user.split("item ")[1].split("?")[0])
        if BAD in request.system:
            with self.lock:
                self.with_bad.append(number)
            return text("Je ne sais pas.", 20, 4)
        right = RULES[number % GROUPS] in request.system
        return text(f"code-{number}" if right else "no idea", 20, 4)


def write_run_config(folder: Path, server: ScriptedOpenAI) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    data = folder / "items.jsonl"
    data.write_text("".join(json.dumps(item(i)) + "\n" for i in range(30)), encoding="utf-8")
    config = {
        "benchmark": {"name": "qa", "data": "items.jsonl", "train_size": 20, "val_size": 9, "seed": 1},
        "model": {
            "backend": "openai_chat",
            "base_url": server.base_url,
            "api_key": "sk-test-overlap",
            "optimizer_model": "fake-optimizer",
            "target_model": "fake-target",
            "max_retries": 1,
        },
        "train": {"epochs": 1, "batch_size": 4, "minibatch_size": 4, "concurrency": 16},
        # form_fix=rule: the analysts' rules alone (after BAD's rejection the form fix's first
        # examples would take step 4: the items' answers share no form a rule can state)
        "optimizer": {"learning_rate": 1, "min_learning_rate": 1, "form_fix": "rule"},
        "cache": {"dir": str(folder / "cache")},
    }
    path = folder / "config.yaml"
    path.write_text(json.dumps(config), encoding="utf-8")  # JSON is YAML
    return path


def train(cfg: Path, out: Path, world: World | None = None, *sets: str, resume: bool = False) -> int:
    args = ["--resume", str(out)] if resume else ["--config", str(cfg), "--out", str(out)]
    for item_ in sets:
        args += ["--set", item_]
    proc = subprocess.Popen(
        [sys.executable, "-m", "skillgrad.cli", "train", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    if world is not None:
        world.pid = proc.pid
    _, err = proc.communicate(timeout=240)
    assert "Traceback" not in err, err
    return proc.returncode


def read_json(path: Path):
    return json.loads(path.read_text(encoding="utf-8"))


def describe(key: str) -> str:
    system, user = (m["content"] for m in json.loads(key)[:2])
    rules = [
        name
        for name, rule in (("R0", RULES[0]), ("R1", RULES[1]), ("R2", RULES[2]), ("BAD", BAD))
        if rule in (user if ANALYST in system else system)
    ]
    return ("analyst " if ANALYST in system else "target ") + "+".join(rules) + " " + user[-40:]


def val_items(out: Path) -> list[int]:
    """The val items of this run's split."""
    return [int(p.parent.name[1:]) for p in (out / "steps" / "0000" / "rollouts" / "val").glob("*/task.json")]


def val_groups(out: Path) -> list[int]:
    return [number % GROUPS for number in val_items(out)]


def decisions(out: Path) -> list[tuple]:
    rows = [json.loads(line) for line in (out / "history.jsonl").read_text(encoding="utf-8").splitlines()]
    return [(r["step"], r["action"], r["val_score"], r["version"], r["train_score"]) for r in rows]


def skills(out: Path) -> dict[str, str]:
    files = sorted((out / "skills").glob("*.md")) + [out / "best_skill.md"]
    return {p.name: p.read_text(encoding="utf-8") for p in files}


@pytest.mark.parametrize("validation", ["full", "racing"])
def test_overlapped_order_gives_the_sequential_decisions_and_skills(tmp_path: Path, validation: str) -> None:
    runs = {}
    for overlap in (False, True):
        world = World(delay_s=0.2)  # rounds are measured from call times: well above scheduling jitter
        with ScriptedOpenAI(world) as server:
            cfg = write_run_config(tmp_path / f"overlap-{overlap}", server)
            out = tmp_path / f"run-{overlap}"
            sets = [f"train.overlap={str(overlap).lower()}", f"optimizer.validation={validation}"]
            assert train(cfg, out, None, *sets) == 0
        runs[overlap] = (decisions(out), skills(out), read_json(out / "summary.json"), world)
    (seq, seq_skills, seq_summary, seq_world), (ovl, ovl_skills, ovl_summary, ovl_world) = (
        runs[False],
        runs[True],
    )
    assert [row[1] for row in seq] == ["accepted", "accepted", "rejected", "accepted"]
    assert ovl == seq and ovl_skills == seq_skills
    assert all(rule in ovl_skills["best_skill.md"] for rule in RULES)
    # The incumbent reached full marks after step 4: the fifth batch is never run.
    assert seq_summary["stopped"] == ovl_summary["stopped"] == "no_headroom"
    assert "no candidate can pass" in ovl_summary["stop_reason"]
    assert seq_summary["steps"] == ovl_summary["steps"] == 4
    val = set(val_items(tmp_path / "run-True"))
    bad_train = len([n for n in ovl_world.with_bad if n not in val])
    assert [n for n in seq_world.with_bad if n not in val] == []
    rollout_calls = {
        run: summary["calls"]["by_stage"]["target/rollout"]
        for run, summary in (("seq", seq_summary), ("ovl", ovl_summary))
    }
    assert rollout_calls["seq"] == 16
    if validation == "full":
        # Step 4's rollouts ran beside the validation of BAD, with BAD, and were redone; step 5's
        # ran beside the last validation and were not needed (the run stopped): 2 x 4 calls more.
        assert bad_train == 4 and rollout_calls["ovl"] == 16 + 8
    else:
        # Racing: BAD is out after its first wave, before any rollout started with it; the
        # perfect last candidate starts none either (it may end the run): not one call more.
        assert bad_train == 0 and ovl_summary["calls"] == seq_summary["calls"]
    # ... and fewer rounds in a row: baseline beside step 1, rollouts beside validations.
    assert ovl_summary["rounds"] < seq_summary["rounds"], (ovl_summary["rounds"], seq_summary["rounds"])
    assert seq_summary["calls"]["total"] == sum(seq_summary["calls"]["by_role"].values())
    assert seq_summary["calls"]["by_stage"]["target/baseline"] == 9


def test_racing_rejects_a_hopeless_candidate_early_and_full_runs_every_item(tmp_path: Path) -> None:
    results = {}
    for validation in ("racing", "full"):
        with ScriptedOpenAI(World()) as server:
            cfg = write_run_config(tmp_path / validation, server)
            out = tmp_path / f"run-{validation}"
            sets = [f"optimizer.validation={validation}", "optimizer.race_waves=9"]
            assert train(cfg, out, None, *sets) == 0
        results[validation] = (decisions(out), read_json(out / "steps" / "0003" / "gate.json"), out)
    (race, race_gate, race_out), (full, full_gate, _) = results["racing"], results["full"]
    assert [r[1] for r in race] == [r[1] for r in full]  # the same decisions
    # BAD scores 0 on every item. Racing runs the incumbent's (rules 0 and 1) failures first, the
    # items of group 2: failing all of them, BAD can at best tie, so it is out after those alone.
    right = sum(1 for g in val_groups(race_out) if g in (0, 1))
    assert 0 < 9 - right <= 3  # the first wave may hold at most a third of the items
    assert race_gate["raced_out"] is True and race_gate["calls"] == race_gate["items_validated"] == 9 - right
    assert f"raced out after {9 - right} of 9 items" in race_gate["reason"]
    assert race_gate["waves"] == 1 and race_gate["validation"] == "racing"
    assert full_gate["raced_out"] is False and full_gate["calls"] == 9 and full_gate["waves"] == 1
    ran = [
        json.loads(p.read_text(encoding="utf-8"))
        for p in (race_out / "steps" / "0003" / "rollouts" / "val").glob("*/task.json")
    ]
    assert sorted(int(t["id"][1:]) % GROUPS for t in ran) == [2] * (9 - right)


def test_paired_gate_with_repeats_records_its_test(tmp_path: Path) -> None:
    with ScriptedOpenAI(World()) as server:
        cfg = write_run_config(tmp_path / "paired", server)
        out = tmp_path / "run"
        sets = ["optimizer.gate=paired", "optimizer.val_repeats=2", "optimizer.validation=full"]
        assert train(cfg, out, None, *sets) == 0
        requests = server.requests
    gate = read_json(out / "steps" / "0001" / "gate.json")
    assert gate["gate"] == "paired" and gate["repeats"] == 2 and gate["test"].startswith("paired permutation")
    # Rule 0 fixes the n val items of group 0, twice each: p = (1/C(4,2))^n.
    n = val_groups(out).count(0)
    assert gate["p_value"] == pytest.approx((1 / 6) ** n, abs=1e-6) and gate["alpha"] == 0.05
    assert gate["accepted"] is ((1 / 6) ** n <= 0.05) and gate["effect"] == pytest.approx(n / 9)
    # Each val item ran twice with the initial skill, as two distinct calls (a resampling salt
    # keys the call cache), and both runs are on disk.
    val_ids = {
        int(t.split("q")[1])
        for t in (p.parent.name for p in (out / "steps" / "0000" / "rollouts" / "val").glob("*/task.json"))
    }
    empty_skill = [
        r for r in requests if ANALYST not in r.system and "Rule" not in r.system and BAD not in r.system
    ]
    on_val = [r for r in empty_skill if int(r.user.split("item ")[1].split("?")[0]) in val_ids]
    assert len(on_val) == 2 * 9
    assert len(list((out / "steps" / "0000" / "rollouts" / "val-r2").glob("*/score.json"))) == 9


def test_resume_inside_an_overlapped_step_repays_nothing(tmp_path: Path) -> None:
    clean = World()
    with ScriptedOpenAI(clean) as server:
        cfg = write_run_config(tmp_path / "clean", server)
        assert train(cfg, tmp_path / "clean-run", None, "optimizer.validation=full") == 0
    world = World()
    # Kill while step 3 validates BAD and step 4's speculative rollouts run with it.
    world.kill_when = lambda r: ANALYST not in r.system and BAD in r.system
    world.cache = tmp_path / "killed" / "cache"
    with ScriptedOpenAI(world) as server:
        cfg, out = write_run_config(tmp_path / "killed", server), tmp_path / "killed-run"
        assert train(cfg, out, world, "optimizer.validation=full") == -signal.SIGKILL
        world.killing.clear()
        assert train(cfg, out, world, resume=True) == 0
    assert len(world.answered) == len(set(world.answered)), "a paid call was repeated"
    only_clean = [describe(k) for k in set(clean.answered) - set(world.answered)]
    only_resumed = [describe(k) for k in set(world.answered) - set(clean.answered)]
    assert not only_clean and not only_resumed, (only_clean, only_resumed)
    assert decisions(out) == decisions(tmp_path / "clean-run") and skills(out) == skills(
        tmp_path / "clean-run"
    )


def test_budget_is_exact_under_overlap(tmp_path: Path) -> None:
    world = World(delay_s=0.02)
    with ScriptedOpenAI(world) as server:
        cfg, out = write_run_config(tmp_path / "budget", server), tmp_path / "run"
        assert train(cfg, out, world, "budget.max_calls=23", "train.concurrency=16") == 0
    summary = read_json(out / "summary.json")
    assert summary["stopped"] == "budget" and "max_calls" in summary["stop_reason"]
    assert summary["calls"]["total"] == 23 == len(world.answered)
