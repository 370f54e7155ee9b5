"""A raced-out candidate has no validation score (issue 37): it ran on the incumbent's weakest items
only, so history.jsonl, the step_end event and gate.json record what it is (the items it ran on of
all, its score on those, the most its full validation could score) and the report draws that
bound, not a point at a partial mean that reads like a full score."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import skillgrad
from skillgrad import AgentResult, Score, Task
from skillgrad.report import write_report
from skillgrad.report.context import run_context
from skillgrad.report.data import load_run
from tests.fakes.openai_server import Request, Response, ScriptedOpenAI, json_reply, text

BAD = "Always answer in French."
SPLITS = {"train": ["t0", "t1"], "val": [f"v{i}" for i in range(9)], "test": []}


class Items:
    name = "codes"

    def load(self, split: str) -> list[Task]:
        return [Task(i, f"What is the code of item {i}?", answers=(f"code-{i}",)) for i in SPLITS[split]]

    def score(self, task: Task, result: AgentResult) -> Score:
        ok = task.answers[0] in result.answer
        return Score(float(ok), ok, "right" if ok else f"expected {task.answers[0]}")


def world(request: Request) -> Response:
    """The initial skill is right on v3..v8; BAD is wrong on everything."""
    if "You improve a SKILL document" in request.system:
        return json_reply(
            {"edits": [{"op": "add", "target": "", "content": BAD, "rationale": "?"}]}, (300, 40)
        )
    item = request.user.split("item ")[1].split("?")[0]
    right = BAD not in request.system and item not in ("v0", "v1", "v2", "t0", "t1")
    return text(f"code-{item}" if right else "non", 20, 4)


def test_a_raced_out_candidate_is_recorded_and_drawn_as_its_bound(tmp_path: Path) -> None:
    events: list[skillgrad.Event] = []
    config = {
        "benchmark": {"train_size": 2, "val_size": 9, "test_size": 0},
        "model": {
            "backend": "openai_chat",
            "api_key": "sk-test-raced-0123456789",
            "optimizer_model": "fake-optimizer",
            "target_model": "fake-target",
        },
        "train": {"epochs": 1, "batch_size": 2, "minibatch_size": 2},
        "optimizer": {"learning_rate": 1, "min_learning_rate": 1, "race_waves": 9},
        "cache": {"dir": str(tmp_path / "cache")},
    }
    with ScriptedOpenAI(world) as server:
        config["model"]["base_url"] = server.base_url
        skillgrad.train(config, benchmark=Items(), out=tmp_path / "run", observers=[events.append])
    run = tmp_path / "run"
    # BAD fails the incumbent's three failures first: it can at best tie, and is out after them
    raced = {"items": 3, "of": 9, "score": 0.0, "bound": round(6 / 9, 6)}
    row = json.loads((run / "history.jsonl").read_text().splitlines()[0])
    assert row["action"] == "rejected" and row["val_score"] is None and row["raced_out"] == raced
    gate = json.loads((run / "steps" / "0001" / "gate.json").read_text())
    assert gate["raced_out"] and gate["candidate_score"] is None and gate["items_validated"] == 3
    assert gate["partial_score"] == 0.0 and gate["candidate_bound"] == raced["bound"]
    end = next(e.fields for e in events if e.kind == "step_end")
    assert end["val_score"] is None and end["raced_out"] == raced

    chart = run_context(load_run(run))["chart"]
    point = next(p for p in chart.series[0].points if p.step == 1)
    assert point.action == "raced" and point.score is None
    assert point.y == pytest.approx(chart.top + chart.plot_h * (1 - 6 / 9), abs=1e-3)  # its bound, not 0.0
    assert "raced out after 3 of 9 items (0.000 on those): its val score is at most 0.667" in point.label
    html = write_report([run]).read_text(encoding="utf-8")
    assert 'class="pt pt-raced"' in html and "≤ 0.667" in html and "(3/9 items)" in html
