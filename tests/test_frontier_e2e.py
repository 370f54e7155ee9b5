"""The frontier search end to end: `skillgrad train` as a subprocess against the scripted OpenAI
server, where the greedy search stalls and the frontier reaches the best skill; a SIGKILL at
seeded points and a resume give the same pool and result as a clean run.

The scripted world: half of the val (and train) items are "A" items, the other half "B".
Without rules the target answers B items right and A items wrong. RULE_A fixes the A items but,
alone, costs the B items (the rule it does not cover); RULE_A with RULE_B answers everything. The
analyst proposes RULE_A to a skill without it, RULE_B to a skill with RULE_A only. So RULE_A
first ties its parent on the mean: the greedy gate rejects it (and refuses it for the epoch, the
candidate is identical the next epoch), while the pool keeps it for the items it wins, and a
child of it reaches 1.0.

Both run the paired gate with 3 repeats: the pool takes a trade-off only on a test of every item
(issue 37), and RULE_A's two items swept for two lost is p = 0.014 there; the strict gate has no
level to spend on one (with it a child must raise the mean, as in the greedy search).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from skillgrad.config import config_from_data
from skillgrad.session.build import checked_benchmark
from tests.e2e_config import capitals_data
from tests.fakes.openai_server import Request, ScriptedOpenAI, json_reply, server_error, text
from tests.test_resume import artifacts

COUNTRIES = {
    "France": "Paris",
    "Japan": "Tokyo",
    "Italy": "Rome",
    "Spain": "Madrid",
    "Kenya": "Nairobi",
    "Peru": "Lima",
    "Egypt": "Cairo",
    "Chile": "Santiago",
    "Norway": "Oslo",
    "Ghana": "Accra",
    "Cuba": "Havana",
    "Nepal": "Kathmandu",
    "Mali": "Bamako",
    "Laos": "Vientiane",
    "Iran": "Tehran",
    "Oman": "Muscat",
    "Fiji": "Suva",
    "Chad": "N'Djamena",
}
RULE_A = "Give the city's name alone."
RULE_B = "Keep answering the other questions with the city only, as before."
RULE_C = "Spell the city as the locals do in English."
SIZES = {"train_size": 6, "val_size": 6, "test_size": 3, "seed": 5}
KEY = "sk-test-FAKE-frontier-0123456789"


def groups(data: Path) -> dict[str, str]:
    """Country -> its group: each split's tasks in thirds, A, B and C."""
    cfg = config_from_data({"benchmark": {"name": "qa", "data": str(data), **SIZES}}, "test")
    bench = checked_benchmark(cfg, ("train", "val", "test"))
    out: dict[str, str] = {}
    for split in ("train", "val", "test"):
        tasks = bench.load(split)  # type: ignore[arg-type]
        for i, task in enumerate(tasks):
            out[task.question.split("capital of ")[1].rstrip("?")] = "ABC"[i * 3 // len(tasks)]
    return out


def country(prompt: str) -> str:
    return prompt.split("capital of ")[1].split("?")[0]


class World:
    """Target and analyst as scripted above; it can SIGKILL the trainer at a chosen request."""

    def __init__(self, group: dict[str, str]) -> None:
        self.group = group
        self.answered: list[str] = []
        self.kill_at: int | None = None
        self.pid: int | None = None
        self.lock = threading.Lock()

    def __call__(self, request: Request):
        with self.lock:
            if self.kill_at is not None and len(self.answered) + 1 == self.kill_at and self.pid:
                os.kill(self.pid, signal.SIGKILL)
                self.kill_at = None
                return server_error(500)
            self.answered.append(json.dumps(request["messages"]))
        if "You improve a SKILL document" in request.system:
            return self.analyst(request)
        return text(self.target(request), 20, 5)

    def right(self, skill: str, name: str) -> bool:
        group = self.group[name]
        if group == "A":
            return RULE_A in skill
        if group == "C":
            return RULE_C in skill
        return RULE_A not in skill or RULE_B in skill

    def analyst(self, request: Request):
        """The rule the first failed task of the minibatch needs (if the skill lacks it)."""
        skill = request.user.split("</skill>")[0]  # the current skill, not the tasks or rejected edits
        failed = [country(t) for t in request.user.split("FAILED")[1:]]
        needs = {"A": RULE_A, "B": RULE_B, "C": RULE_C}
        rules = [needs[self.group[name]] for name in failed if needs[self.group[name]] not in skill]
        edits = [{"op": "add", "target": "end", "content": rule, "rationale": "r"} for rule in rules[:1]]
        return json_reply({"edits": edits}, usage=(300, 40))

    def target(self, request: Request) -> str:
        name = country(request.user)
        return COUNTRIES[name] if self.right(request.system, name) else "I do not know."


def write_config(folder: Path, server: ScriptedOpenAI, data: Path, *extra: str, seed: int = 2) -> Path:
    lines = [
        "benchmark:",
        "  name: qa",
        f"  data: {data}",
        *[f"  {k}: {v}" for k, v in SIZES.items()],
        "model:",
        "  backend: openai_chat",
        f"  base_url: {server.base_url}",
        f"  api_key: {KEY}",
        "  optimizer_model: fake-optimizer",
        "  target_model: fake-target",
        "train:",
        "  epochs: 3",
        "  batch_size: 2",
        "  minibatch_size: 2",
        "  concurrency: 1",
        f"  seed: {seed}",
        "optimizer:",
        "  learning_rate: 1",
        "  min_learning_rate: 1",
        *extra,
        "cache:",
        f"  dir: {folder / 'cache'}",
    ]
    path = folder / "config.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def train(cfg: Path, out: Path, world: World, *extra: str) -> int:
    args = ["--resume", str(out)] if "--resume" in extra else ["--config", str(cfg), "--out", str(out)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "skillgrad.cli", "train", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    world.pid = proc.pid
    _, err = proc.communicate(timeout=240)
    assert "Traceback" not in err, err
    return proc.returncode


def read(path: Path):
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return capitals_data(tmp_path, COUNTRIES)


PAIRED = ["  gate: paired", "  val_repeats: 3"]
FRONTIER = [*PAIRED, "  search: frontier", "  parent: lexicase"]
SEARCH_STAGES = ("baseline", "rollout", "validate")


def test_greedy_stalls_where_the_frontier_reaches_the_best_skill(tmp_path: Path, data: Path) -> None:
    world = World(groups(data))
    runs = {}
    with ScriptedOpenAI(world) as server:
        for name, extra in (("greedy", PAIRED), ("frontier", FRONTIER)):
            folder = tmp_path / name
            folder.mkdir()
            assert train(write_config(folder, server, data, *extra), folder / "run", world) == 0
            runs[name] = folder / "run"
        report = subprocess.run(
            [sys.executable, "-m", "skillgrad.cli", "report", str(runs["frontier"])],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert report.returncode == 0, report.stderr
    greedy, frontier = read(runs["greedy"] / "summary.json"), read(runs["frontier"] / "summary.json")
    # greedy: RULE_A costs the B items what it wins on the A items, is rejected, never comes back
    assert greedy["baseline_val_score"] == pytest.approx(1 / 3)
    assert greedy["best_val_score"] < 1.0 and greedy["rejected"] >= 1 and "search" not in greedy
    assert RULE_A not in (runs["greedy"] / "best_skill.md").read_text(encoding="utf-8")
    # frontier: RULE_A enters on the items it wins; a descendant of it scores 1.0, on test too
    assert frontier["best_val_score"] == 1.0 and frontier["test"]["best"] == 1.0
    members = {m["version"]: m for m in read(runs["frontier"] / "state.json")["pool"]["members"]}
    rule_a = next(m for m in members.values() if RULE_A in [e["content"] for e in m["edits"]])
    gate = read(runs["frontier"] / "steps" / f"{rule_a['step']:04d}" / "gate.json")
    assert gate["accepted"] and gate["effect"] <= 0 and "enters the pool" in gate["reason"]
    best, lineage = int(frontier["best_version"][1:]), set()
    todo = [best]
    while todo:
        lineage.add(todo[-1])
        todo.extend(members[todo.pop()]["parents"])
    assert rule_a["version"] in lineage and frontier["search"]["frontier"] == [frontier["best_version"]]
    best_text = (runs["frontier"] / "best_skill.md").read_text(encoding="utf-8")
    assert all(rule in best_text for rule in (RULE_A, RULE_B, RULE_C))
    # with no more target calls for the search (the final test aside)
    searched = {
        name: sum(
            read(run / "summary.json")["calls"]["by_stage"].get(f"target/{s}", 0) for s in SEARCH_STAGES
        )
        for name, run in runs.items()
    }
    assert searched["frontier"] <= searched["greedy"]
    # the report draws the candidate tree and the item-by-candidate win table
    html = (runs["frontier"] / "report.html").read_text(encoding="utf-8")
    assert 'id="search"' in html and "candidate tree" in html.lower()
    for version in members:
        assert f"v{version:04d}" in html
    assert "win table" in html.lower()


@pytest.mark.parametrize("seed", [0, 1])
def test_sigkill_then_resume_gives_the_same_pool_and_result(tmp_path: Path, data: Path, seed: int) -> None:
    group = groups(data)
    clean_world, world = World(group), World(group)
    extra = [*FRONTIER, "  merge_every: 2"]
    with ScriptedOpenAI(clean_world) as server:
        (tmp_path / "clean").mkdir()
        cfg = write_config(tmp_path / "clean", server, data, *extra, seed=5)
        assert train(cfg, tmp_path / "clean" / "run", clean_world) == 0
    merges = read(tmp_path / "clean" / "run" / "state.json")["pool"]["merges"]
    assert [t["outcome"] for t in merges] == ["accepted"]  # the run a kill interrupts merges lineages
    total = len(clean_world.answered)
    kills = sorted(random.Random(seed).sample(range(1, total), 2))
    with ScriptedOpenAI(world) as server:
        (tmp_path / "killed").mkdir()
        cfg, out = (
            write_config(tmp_path / "killed", server, data, *extra, seed=5),
            tmp_path / "killed" / "run",
        )
        world.kill_at = kills[0]
        assert train(cfg, out, world) == -signal.SIGKILL
        world.kill_at = (
            kills[1] - kills[0] + len(world.answered) if kills[1] > len(world.answered) + 1 else None
        )
        code = train(cfg, out, world, "--resume")
        if code == -signal.SIGKILL:
            code = train(cfg, out, world, "--resume")
        assert code == 0
    # the repeats of a val item are the same request: the resumed run asked what the clean one did
    assert sorted(world.answered) == sorted(clean_world.answered), "a paid call was repeated"
    clean = tmp_path / "clean" / "run"
    assert read(out / "state.json")["pool"] == read(clean / "state.json")["pool"]
    assert artifacts(out) == artifacts(clean)
