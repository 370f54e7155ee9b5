"""Calls and rounds are first-class figures: the report shows what summary.json says."""

from __future__ import annotations

import json
from pathlib import Path

from skillgrad.loop.rounds import longest_chain
from skillgrad.report.context import facts
from skillgrad.report.data import load_run


def test_longest_chain_counts_calls_that_had_to_wait() -> None:
    assert longest_chain([]) == 0
    assert longest_chain([(0, 1), (0, 1), (0, 1)]) == 1  # side by side: one round
    assert longest_chain([(0, 1), (1, 2), (2, 3)]) == 3  # each waited for the one before
    # Two waves with a call spanning both; a late call that overlaps the second wave.
    assert longest_chain([(0, 1), (0, 2), (1, 2), (1.5, 2.5), (2, 3)]) == 3


def test_report_shows_calls_rounds_and_why_the_run_stopped(tmp_path: Path) -> None:
    summary = {
        "baseline_val_score": 0.5,
        "best_val_score": 1.0,
        "steps": 3,
        "accepted": 2,
        "rejected": 1,
        "stopped": "no_headroom",
        "stop_reason": "the skill scores 1.0000 on val: no candidate can pass the gate any more",
        "calls": {"total": 60, "by_role": {"target": 56, "optimizer": 4}, "by_stage": {}},
        "rounds": 12,
        "usage": {"total": {"calls": 60, "input_tokens": 10, "output_tokens": 5}},
    }
    (tmp_path / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    rows = dict(facts(load_run(tmp_path)))
    assert rows["calls · rounds"] == "60 calls in 12 sequential rounds, 5.0 calls per round"
    assert rows["stopped"].startswith("no_headroom: the skill scores 1.0000")
