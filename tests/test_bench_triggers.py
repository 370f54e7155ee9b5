"""bench/triggers.py lays out what it says: five skills, 60 queries, each run's trigger set (its
own requests and three of each other skill's), the other four as distractors, a config that
skillgrad reads and splits without a model."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pytest

from skillgrad.activation.world import plan_activation
from skillgrad.config import load_config

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import triggers  # noqa: E402

pytestmark = pytest.mark.timeout(30)


def test_the_bench_has_five_skills_and_sixty_queries() -> None:
    queries = [q for spec in triggers.SKILLS.values() for q in spec["queries"]]
    assert len(triggers.SKILLS) == 5 and len(queries) == len(set(queries)) == 60
    assert all(spec["initial"] != spec["good"] for spec in triggers.SKILLS.values())


def test_one_run_reads_as_a_description_run(tmp_path: Path) -> None:
    folder = triggers.write_inputs("sql-queries", tmp_path / "inputs")
    rows = [json.loads(line) for line in (folder / "triggers.jsonl").read_text().splitlines()]
    assert sum(r["should_trigger"] for r in rows) == 12 and len(rows) == 24
    assert sorted(p.name for p in (folder / "distractors").iterdir()) == [
        "email-drafting",
        "git-commits",
        "recipe-scaling",
        "unit-convert",
    ]
    args = argparse.Namespace(repeats=3, temperature=0.7, epochs=2, out=tmp_path, cache=tmp_path / "cache")
    lines = triggers.config_lines(folder, "sql-queries", "packaged", "/m/qwen15.gguf", 1, args)
    config = tmp_path / "config.yaml"
    config.write_text("\n".join(lines) + "\n", encoding="utf-8")
    cfg = load_config(config)
    assert cfg.optimizer.target == "description" and cfg.model.target_model is None
    plan = plan_activation(cfg, None)
    assert plan is not None and [len(plan.splits[s]) for s in ("train", "val", "test")] == [8, 8, 8]
    assert [d.name for d in plan.distractors] == [
        "email-drafting",
        "git-commits",
        "recipe-scaling",
        "unit-convert",
    ]


def test_proposed_lengths_reads_every_reflection(tmp_path: Path) -> None:
    record = tmp_path / "steps" / "0001" / "reflections" / "mb_00.json"
    record.parent.mkdir(parents=True)
    record.write_text(json.dumps({"reply": json.dumps({"rationale": "r", "description": "x" * 42})}))
    (record.parent / "mb_01.json").write_text(json.dumps({"error": "no JSON"}))
    assert triggers.proposed_lengths(tmp_path) == [42]
