"""bench/latency.py's helpers: the scripted world recognises both systems' requests and answers
them with one behaviour; the SkillOpt side checks its checkout and lays out its inputs."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from skillgrad.backends.chat_agent import task_prompt
from skillgrad.backends.interface import AgentResult
from skillgrad.benchmarks.contract import Score, Task
from skillgrad.loop.analyst_prompt import AnalystInputs, analyst_messages
from skillgrad.loop.rollout import Rollout
from skillgrad.skilldoc import Edit
from skillgrad.templates import render
from skillgrad.traces.steps import TraceCaps

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import first_request  # noqa: E402
import latency_tables  # noqa: E402
import latency_world as lw  # noqa: E402
import skillopt_side  # noqa: E402

pytestmark = pytest.mark.timeout(30)

TRAIN = Task("t1", "This chess piece moves in an L", context="[DOC] knights move ...", answers=("knight",))
VAL = Task("v1", "The Big Apple", context="[DOC] New York City ...", answers=("New York",))


def world() -> lw.Scripted:
    items = {
        lw.question_key(TRAIN.question): lw.Item("knight", "train"),
        lw.question_key(VAL.question): lw.Item("New York", "val"),
    }
    return lw.Scripted(0.0, items)


def skillgrad_target(skill: str, task: Task) -> tuple[str, str]:
    system = render("skillgrad.backends", "chat_target_system", skill=skill or "(empty)")
    return system, task_prompt(task)


def skillopt_target(skill: str, task: Task) -> tuple[str, str]:
    # The shape of SkillOpt 0.2.0's SearchQA rollout request (envs/searchqa/rollout.py).
    system = f"You are an expert question answering agent.\n\n## Skill\n{skill}\n\n## Task Format\n..."
    return system, f"## Context\n{task.context}\n\n## Question\n{task.question}"


def rules_that_make_right(task: Task) -> list[str]:
    """The fewest good rules with which the scripted target is right on `task`."""
    need = max(0, -(-(lw.bucket(lw.question_key(task.question)) + 1 - lw.BASE_DECILES) // lw.PER_RULE))
    return lw.GOOD[:need]


@pytest.mark.parametrize("shape", [skillgrad_target, skillopt_target])
def test_target_requests_are_counted_by_split_and_answered_by_the_rules_held(shape) -> None:
    w = world()
    for task, kind in ((TRAIN, "rollout"), (VAL, "val")):
        rules = rules_that_make_right(task)
        right = shape("\n".join(rules), task)
        assert w.classify(*right) == kind
        reply = w.reply(kind, *right)
        assert task.answers[0] in reply
        assert reply.startswith("<answer>") == (shape is skillopt_target)
        if rules:  # one rule fewer: wrong
            assert task.answers[0] not in w.reply(kind, *shape("\n".join(rules[:-1]), task))
        harmed = shape("\n".join([*rules, lw.HARMFUL]), task)  # the harmful rule costs 30 points
        still_right = (
            lw.bucket(lw.question_key(task.question)) < lw.BASE_DECILES + lw.PER_RULE * len(rules) - lw.HARM
        )
        assert (task.answers[0] in w.reply(kind, *harmed)) == still_right


def test_an_unknown_item_or_request_is_counted_as_unknown() -> None:
    w = world()
    other = Task("x", "Not one of the split's questions")
    assert w.classify(*skillgrad_target("", other)) == "unknown"
    assert w.classify("You summarise.", "Summarise this.") == "unknown"
    assert w.reply("unknown", "You summarise.", "Summarise this.") == ""


def test_skillgrad_analyst_proposes_the_next_rules_not_in_skill_nor_rejected() -> None:
    rollout = Rollout(TRAIN, AgentResult(answer="bishop"), Score(0.0, False, "expected knight"))
    inputs = AnalystInputs(
        skill=lw.GOOD[0],
        rollouts=[rollout],
        rejected=[Edit("add", "", lw.GOOD[1])],
        max_edits=4,
        include_traces=False,
        caps=TraceCaps(),
    )
    system, user = (m.content for m in analyst_messages(inputs))
    w = world()
    assert w.classify(system, user) == "analyst"
    edits = json.loads(w.reply("analyst", system, user))["edits"]
    assert [e["content"] for e in edits] == [lw.HARMFUL, lw.GOOD[2]]
    assert {e["op"] for e in edits} == {"add"}


def test_skillopt_analyst_merge_and_rank_replies() -> None:
    w = world()
    user = (
        f"## Current Skill\n{lw.GOOD[0]}\n\n## Edit Budget\nProduce at most L=4 edits.\n\n"
        "## Previous Steps in This Epoch\n  Rejected edits (score 0.8 → 0.7):\n"
        f'    1. [append] "{lw.GOOD[1]}"\n\n'
        "## Failed Trajectories (1 total)\n### Trajectory 1 (id=t1)\n..."
    )
    assert w.classify("You are an expert failure-analysis agent.", user) == "analyst"
    reply = json.loads(w.reply("analyst", "You are an expert failure-analysis agent.", user))
    assert [e["content"] for e in reply["patch"]["edits"]] == [lw.HARMFUL, lw.GOOD[2]]
    assert reply["batch_size"] == 1

    patches = json.dumps(
        [{"edits": [{"op": "append", "content": r}]} for r in (lw.GOOD[3], lw.GOOD[2], lw.GOOD[3])]
    )
    merge = f"## Current Skill\n{lw.GOOD[0]}\n\n## Patches to merge (3 total, merge level 1)\n{patches}"
    assert w.classify("You are a skill-edit coordinator.", merge) == "merge"
    merged = json.loads(w.reply("merge", "", merge))["edits"]
    assert [(e["content"], e["support_count"]) for e in merged] == [(lw.GOOD[3], 2), (lw.GOOD[2], 1)]

    pool = "\n".join(f"[{i}] op=append content={r!r}" for i, r in enumerate(lw.GOOD[:5]))
    rank = f"## Edit Pool (5 edits, budget=3)\n{pool}\n\nSelect the 3 most important edits. "
    rank += "Return their 0-based indices in priority order."
    assert w.classify("You are an expert skill-optimization optimizer.", rank) == "rank"
    assert json.loads(w.reply("rank", "", rank))["selected_indices"] == [0, 1, 2]


def test_skillopt_checkout_must_match_the_installed_sources(tmp_path: Path) -> None:
    site, checkout = tmp_path / "site", tmp_path / "checkout"
    for root in (site, checkout):
        (root / "skillopt" / "prompts").mkdir(parents=True)
        (root / "scripts").mkdir()
        (root / "skillopt" / "trainer.py").write_text("x = 1\n")
        (root / "scripts" / "train.py").write_text("main = 1\n")
    (checkout / "skillopt" / "prompts" / "ranking.md").write_text("Rank.")
    (checkout / "skillopt" / "envs" / "searchqa" / "skills").mkdir(parents=True)
    (checkout / "skillopt" / "envs" / "searchqa" / "skills" / "initial.md").write_text("# Skill")
    (site / "skillopt" / "prompts" / "ranking.md").write_text("Installed already.")
    assert skillopt_side.mismatched_sources(site, checkout) == []
    assert skillopt_side.add_templates(site, checkout) == 1
    assert (site / "skillopt" / "prompts" / "ranking.md").read_text() == "Installed already."
    assert (site / "skillopt" / "envs" / "searchqa" / "skills" / "initial.md").read_text() == "# Skill"
    (checkout / "scripts" / "train.py").write_text("main = 2\n")
    assert skillopt_side.mismatched_sources(site, checkout) == ["scripts/train.py"]


def test_skillopt_split_and_config(tmp_path: Path) -> None:
    rows = {"train": [{"id": "a", "question": "q", "answers": ["x"]}], "val": []}
    split = skillopt_side.write_split(tmp_path / "split", rows)
    assert json.loads((split / "train" / "items.json").read_text())[0]["id"] == "a"
    assert json.loads((split / "test" / "items.json").read_text()) == []
    so = skillopt_side.SkillOpt(tmp_path / "venv", tmp_path / "site", "registry", 0, tmp_path / "src")
    cfg = json.loads(skillopt_side.config(so, tmp_path, split, 4321, 3).read_text())
    assert cfg["model"]["azure_openai_endpoint"] == "http://127.0.0.1:4321/v1"
    assert cfg["train"]["seed"] == 3 and cfg["gradient"]["minibatch_size"] == 4
    assert cfg["evaluation"]["eval_test"] is False


def test_targets_compare_skillgrad_with_skillopt() -> None:
    so = {"calls": 200, "rounds": 40, "val_score": 1.0, "wall": 20.0, "latency": 0.5}
    sg = {"calls": 100, "rounds": 14, "val_score": 1.0, "wall": 7.7, "latency": 0.5}
    assert latency_tables.targets(sg, so) == {"calls": True, "rounds": True, "val": True, "wall": True}
    worse = {**sg, "calls": 101, "rounds": 15, "val_score": 0.9, "wall": 8.3}
    assert latency_tables.targets(worse, so) == {"calls": False, "rounds": False, "val": False, "wall": False}


def test_server_counts_are_checked_against_each_systems_own() -> None:
    server = {"rollout": 8, "val": 16, "analyst": 3, "merge": 1, "rank": 0, "unknown": 0}
    skillopt_run = {**server, "own_calls": {"rollout": 24, "analyst": 3, "merge": 1}}
    skillgrad_run = {**server, "merge": 0, "own_calls": {"target/rollout": 8, "target/baseline": 16}}
    skillgrad_run["own_calls"]["optimizer/reflect"] = 3
    figures = [
        {"latency": 0.5, "seed": 0, "system": "skillopt", "variant": "0.2.0", "reps": [skillopt_run]},
        {"latency": 0.5, "seed": 0, "system": "skillgrad", "variant": "default", "reps": [skillgrad_run]},
    ]
    assert latency_tables.agreement(figures).startswith("Server counts agree")
    skillgrad_run["own_calls"]["optimizer/reflect"] = 2
    assert "skillgrad default" in latency_tables.agreement(figures)
    skillgrad_run["own_calls"]["optimizer/reflect"] = 3
    skillopt_run["unknown"] = 1
    assert "WARNING" in latency_tables.agreement(figures)


def test_the_wall_ratio_net_of_the_sdk_floor() -> None:
    run = {"wall": 6.0, "latency": 0.5, "rounds": 10, "floor": 0.5}
    assert latency_tables.per_round(run) == pytest.approx(1.2)
    assert latency_tables.net_of_floor(run) == pytest.approx(1.1)


def test_the_sdk_floor_is_a_real_sdk_request_and_a_silent_command_is_refused() -> None:
    server = first_request.FirstRequest()
    try:
        # sdk_floor raises SystemExit unless the bare script's request reached the server
        assert 0 < server.sdk_floor(sys.executable, {"PATH": "/usr/bin:/bin"}) < 60
        with pytest.raises(SystemExit, match="made no request"):
            server.time([sys.executable, "-c", "pass"], {"PATH": "/usr/bin:/bin"})
    finally:
        server.close()
