"""Strategies handed to `skillgrad.train` as objects (docs/api.md, "Strategies as objects"): a gate
and an agent written here train on the scripted OpenAI server's analyst; the gate is consulted with
the real validation scores and its decisions are the run's, the agent's answers are what is
scored, its runs are cached only under a cache identity, and a resume must hand in the same
objects. A wrong object or name is a one-line UserError naming the argument."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

import skillgrad
from skillgrad import AgentResult, GateDecision, Task, Usage
from skillgrad.loop.search.greedy import GreedySearch
from tests.api_world import REPO, FactsWorld, facts_server, scripted_config
from tests.fakes.openai_server import ScriptedOpenAI

STRATEGIES_EXAMPLE = REPO / "examples" / "custom_strategies.py"


@pytest.fixture
def world() -> Iterator[tuple[dict[str, Any], FactsWorld, ScriptedOpenAI]]:
    with facts_server() as made:
        yield made


class SkillReader:
    """An agent of the caller's: it answers a house-fact question with its value exactly when the
    skill states the fact, and records every run it makes."""

    name = "skill-reader"
    model = "rules-v1"

    def __init__(self, facts: dict[str, tuple[str, str, tuple[str, ...]]]) -> None:
        self.facts = facts
        self.lock = threading.Lock()
        self.runs: list[tuple[str, str, bool]] = []  # (task id, answer, workspace was a folder)

    def run(self, task: Task, skill: str, workspace: Path) -> AgentResult:
        value, statement, _ = self.facts[task.meta["fact"]]
        answer = f"It is {value}." if statement in skill else "I do not know that."
        with self.lock:
            self.runs.append((task.id, answer, workspace.is_dir()))
        return AgentResult(answer=answer, usage=Usage(input_tokens=len(skill), output_tokens=4, calls=1))


class CachedReader(SkillReader):
    cache_identity = "skill-reader rules-v1"


class StubbornGate:
    """A gate of the caller's: it refuses the first candidate it is shown whatever its scores,
    then keeps one whose mean rises; it records what it was shown and what it said."""

    def __init__(self) -> None:
        self.calls: list[tuple[dict[str, list[float]], dict[str, list[float]], bool]] = []

    def decide(
        self, candidate: Mapping[str, Sequence[float]], incumbent: Mapping[str, Sequence[float]]
    ) -> GateDecision:
        mine = sum(s for v in candidate.values() for s in v) / max(1, len(candidate))
        theirs = sum(s for v in incumbent.values() for s in v) / max(1, len(incumbent))
        accepted = bool(self.calls) and mine > theirs
        shown = ({k: list(v) for k, v in candidate.items()}, {k: list(v) for k, v in incumbent.items()})
        self.calls.append((*shown, accepted))
        return GateDecision(accepted, f"stubborn: {mine:.3f} vs {theirs:.3f}", "stubborn mean", mine - theirs)


def val_scores(run: Path, step: int) -> dict[str, list[float]]:
    """A step's validation outcomes as its rollouts wrote them (task id -> its one score)."""
    scores = {}
    for folder in (run / "steps" / f"{step:04d}" / "rollouts" / "val").iterdir():
        if folder.is_dir():
            task = json.loads((folder / "task.json").read_text(encoding="utf-8"))
            scores[task["id"]] = [json.loads((folder / "score.json").read_text(encoding="utf-8"))["value"]]
    return scores


def history(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "history.jsonl").read_text(encoding="utf-8").splitlines()]


def test_a_gate_and_an_agent_written_here_train_the_skill(tmp_path: Path, world: Any) -> None:
    example, facts, server = world
    config = scripted_config(example["CONFIG"], server.base_url, tmp_path / "cache")
    config["optimizer"] = {**config["optimizer"], "validation": "full"}
    config["train"] = {**config["train"], "epochs": 2, "overlap": False}  # no run redone: each is on disk
    gate, agent = StubbornGate(), SkillReader(example["FACTS"])
    run = tmp_path / "run"
    result = skillgrad.train(
        config, benchmark=example["house_tasks"](), scorer=example["score"], out=run, gate=gate, agent=agent
    )

    # the agent did every task (no target request reached the server), each in a folder of its own
    assert "target" not in facts.asked and agent.runs and all(ws for _, _, ws in agent.runs)
    answers = [p.read_text(encoding="utf-8") for p in run.glob("**/rollouts/*/*/answer.txt")]
    answers += [p.read_text(encoding="utf-8") for p in run.glob("test/*/*/answer.txt")]
    assert sorted(answers) == sorted(a for _, a, _ in agent.runs)  # what it answered is what was scored
    assert result.usage.by_role["target"].calls == len(agent.runs)
    summary = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    assert (
        summary["target_backend"] == f"python:{__name__}.SkillReader"
        and summary["target_model"] == "rules-v1"
    )

    # the gate saw each validated step's real outcomes, and its decisions are the run's
    validated = [h for h in history(run) if h["action"] in ("accepted", "rejected")]
    assert len(gate.calls) == len(validated) >= 2
    assert gate.calls[0][1] == val_scores(run, 0)  # the incumbent: the baseline's validation
    for (candidate, _, accepted), step in zip(gate.calls, validated, strict=True):
        assert candidate == val_scores(run, step["step"])
        assert step["action"] == ("accepted" if accepted else "rejected")
        record = json.loads((run / "steps" / f"{step['step']:04d}" / "gate.json").read_text(encoding="utf-8"))
        assert record["reason"].startswith("stubborn: ") and record["gate"].endswith(".StubbornGate")
    first = validated[0]
    assert first["action"] == "rejected" and first["val_score"] > first["current_score"]  # strict keeps it
    assert result.accepted >= 1 and result.best_val > result.baseline_val == 0.0
    assert json.loads((run / "objects.json").read_text(encoding="utf-8")) == {
        "gate": f"python:{__name__}.StubbornGate",
        "agent": f"python:{__name__}.SkillReader",
    }

    # the run folder names the objects: a resume must hand in the same, the CLI cannot
    proc = subprocess.run(
        [sys.executable, "-m", "skillgrad.cli", "train", "--resume", str(run)],
        capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert (
        f"it trained with agent=python:{__name__}.SkillReader" in proc.stderr and "resume=True" in proc.stderr
    )
    with pytest.raises(skillgrad.UserError, match=r"trained with gate=python:.*StubbornGate, not python:"):
        skillgrad.train(config, benchmark=example["house_tasks"](), scorer=example["score"], out=run,
                        gate=OtherGate(), agent=agent, resume=True)  # fmt: skip
    notes: list[str] = []
    again = skillgrad.train(config, benchmark=example["house_tasks"](), scorer=example["score"], out=run,
                            gate=StubbornGate(), agent=agent, resume=True,
                            observers=[lambda e: notes.append(str(e.fields.get("text")))])  # fmt: skip
    assert again == result and any("names each class, not its settings" in n for n in notes)


class OtherGate:
    def decide(
        self, candidate: Mapping[str, Sequence[float]], incumbent: Mapping[str, Sequence[float]]
    ) -> GateDecision:
        return GateDecision(False, "no", "other", 0.0)


def test_an_agent_object_is_cached_only_under_its_cache_identity(tmp_path: Path, world: Any) -> None:
    example, facts, server = world
    config = scripted_config(example["CONFIG"], server.base_url, tmp_path / "cache")
    tasks, score = example["house_tasks"](), example["score"]
    plain, cached = SkillReader(example["FACTS"]), CachedReader(example["FACTS"])
    first = skillgrad.train(config, benchmark=tasks, scorer=score, out=tmp_path / "a", agent=plain)
    optimizer_calls = facts.asked.count("optimizer")
    skillgrad.train(config, benchmark=tasks, scorer=score, out=tmp_path / "b", agent=plain)
    assert len(plain.runs) == 2 * first.usage.by_role["target"].calls > 0  # every run paid again
    assert facts.asked.count("optimizer") == optimizer_calls  # the analyst's calls were replayed

    skillgrad.train(config, benchmark=tasks, scorer=score, out=tmp_path / "c", agent=cached)
    runs = len(cached.runs)
    again = skillgrad.train(config, benchmark=tasks, scorer=score, out=tmp_path / "d", agent=cached)
    assert runs > 0 and len(cached.runs) == runs  # the second run was answered by the cache
    assert again.usage.by_role["target"].calls == 0 and again.usage.saved.calls >= runs
    assert again.best_val == first.best_val

    # evaluate() takes the agent too: the trained skill scores with it what the run's test said
    before = len(plain.runs)
    best = first.best_skill
    evaluation = skillgrad.evaluate(
        config, best, benchmark=tasks, scorer=score, out=tmp_path / "e", agent=plain
    )
    assert len(plain.runs) == before + evaluation.n and evaluation.mean_score == first.best_test
    assert sorted(t.answer for t in evaluation.tasks) == sorted(a for _, a, _ in plain.runs[before:])
    assert evaluation.report["target_backend"] == f"python:{__name__}.SkillReader"


class Recorded(GreedySearch):
    """A search of the caller's: the greedy search, recording every step it began."""

    began: list[int] = []

    def begin(self, state: Any, step: int, epoch: int) -> None:
        Recorded.began.append(step)
        super().begin(state, step, epoch)


def test_a_search_class_and_a_parent_rule_are_used(tmp_path: Path, world: Any) -> None:
    example, _, server = world
    config = scripted_config(example["CONFIG"], server.base_url, tmp_path / "cache")
    Recorded.began = []
    result = skillgrad.train(config, benchmark=example["house_tasks"](), scorer=example["score"],
                             out=tmp_path / "s", search=Recorded)  # fmt: skip
    steps = [h["step"] for h in history(tmp_path / "s")]
    assert steps and Recorded.began[: len(steps)] == steps  # each step began with it
    assert len(Recorded.began) == len(steps) + (result.stopped != "completed")  # and one stopped early

    drawn: list[list[int]] = []

    def newest(members: Sequence[skillgrad.Scored], rng: Any, /) -> skillgrad.Scored:
        drawn.append([m.version for m in members])
        return max(members, key=lambda m: m.version)

    result = skillgrad.train(config, benchmark=example["house_tasks"](), scorer=example["score"],
                             out=tmp_path / "f", search="frontier", parent=newest)  # fmt: skip
    summary = json.loads((tmp_path / "f" / "summary.json").read_text(encoding="utf-8"))
    assert drawn and summary["search"]["parent"].endswith(".newest")
    assert json.loads((tmp_path / "f" / "config.json").read_text())["optimizer"]["search"] == "frontier"


def test_a_gate_that_raises_stops_the_run_naming_it(tmp_path: Path, world: Any) -> None:
    example, _, server = world
    config = scripted_config(example["CONFIG"], server.base_url, tmp_path / "cache")

    class Broken:
        def decide(self, candidate: Any, incumbent: Any) -> Any:
            return {"accepted": True}

    with pytest.raises(skillgrad.TrainingFailed, match=r"gate python:.*Broken: decide returned dict, not a"):
        skillgrad.train(config, benchmark=example["house_tasks"](), scorer=example["score"],
                        out=tmp_path / "run", gate=Broken())  # fmt: skip
    summary = json.loads((tmp_path / "run" / "summary.json").read_text(encoding="utf-8"))
    assert summary["stopped"] == "error" and "Broken" in summary["error"]


LACKS_MODEL = r"\(it lacks model, name, run\)$"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"gate": object()},
            r"^gate=: object is not an object with decide\(candidate, .* \(it lacks decide\)$",
        ),
        ({"gate": "lenient"}, r"^gate='lenient': allowed values: strict, paired, or an object with decide"),
        ({"agent": object()}, r"^agent=: object is not an object with name, model and run.*" + LACKS_MODEL),
        ({"agent": "nope"}, r"^agent='nope': allowed values: .*openai_chat"),
        ({"search": 3}, r"^search=: int is not a class or function that builds a skillgrad\.Search"),
        (
            {"search": OtherGate},
            r"^search=: type is not .* \(it lacks accept, begin, gate, merge_lineages, outcome",
        ),
        ({"parent": max}, r"^parent=: the greedy search draws no parent; pass search='frontier'"),
        ({"search": "frontier", "parent": "oldest"}, r"^parent='oldest': allowed values: pareto, lexicase"),
        ({"gate": OtherGate(), "search": "frontier"}, None),  # allowed: checked by the next case's config
    ],
)
def test_a_wrong_strategy_is_one_line_naming_the_argument(
    tmp_path: Path, kwargs: dict[str, Any], message: str | None
) -> None:
    tasks = [Task(f"t{i}", "q?", answers=("x",)) for i in range(8)]
    config = {
        "benchmark": {"train_size": 2, "val_size": 2, "test_size": 0},
        "model": {"backend": "openai_chat"},
    }
    if message is None:  # an object with optimizer.target description: it would train nothing
        config["optimizer"] = {"target": "description"}
        message = r"^gate=: an object trains the body alone, not optimizer.target 'description'"
        kwargs = {"gate": OtherGate()}
    with pytest.raises(skillgrad.UserError, match=message) as raised:
        skillgrad.train(config, benchmark=tasks, scorer="exact", out=tmp_path / "run", **kwargs)
    assert "\n" not in str(raised.value) and not (tmp_path / "run").exists()


def test_a_search_factory_that_builds_no_search_is_refused_naming_what_it_lacks(tmp_path: Path) -> None:
    def builds_nothing(ctx: skillgrad.SearchContext) -> Any:
        return object()

    tasks = [Task(f"t{i}", "q?", answers=("x",)) for i in range(8)]
    model = {
        "backend": "openai_chat",
        "api_key": "sk-test-FAKE-0123456789",
        "base_url": "http://127.0.0.1:9/v1",
    }
    config = {"benchmark": {"train_size": 2, "val_size": 2, "test_size": 0}, "model": model}
    pattern = (
        r"^search=python:.*builds_nothing: what it built \(object\) lacks accept, begin, .*skillgrad\.Search"
    )
    with pytest.raises(skillgrad.UserError, match=pattern) as raised:
        skillgrad.train(config, benchmark=tasks, scorer="exact", out=tmp_path / "run", search=builds_nothing)
    assert raised.value.run_dir == tmp_path / "run" and not (tmp_path / "run" / "summary.json").exists()


def test_the_strategies_example_trains_with_its_gate_and_agent(tmp_path: Path) -> None:
    example: dict[str, Any] = {"__name__": "docs_strategies_example"}
    exec(compile(STRATEGIES_EXAMPLE.read_text(encoding="utf-8"), str(STRATEGIES_EXAMPLE), "exec"), example)
    facts = FactsWorld(example["FACTS"])  # its analyst writes the fact the feedback states
    with ScriptedOpenAI(facts) as server:
        config = scripted_config(example["CONFIG"], server.base_url, tmp_path / "cache")
        result = example["main"](config, str(tmp_path / "run"))
    assert "target" not in facts.asked  # the example's agent did every task
    assert result.baseline_val == 0.0 < result.best_val and result.accepted >= 1
    gates = [json.loads(p.read_text(encoding="utf-8")) for p in (tmp_path / "run").glob("steps/*/gate.json")]
    decided = [g for g in gates if g["test"] is not None]
    assert decided and all(
        g["test"] == "no regression" and "broken (needs 1 fixed" in g["reason"] for g in decided
    )
    assert any(g["accepted"] and g["reason"].endswith("none broken)") for g in decided)
