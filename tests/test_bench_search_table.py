"""bench/search_table.py: vs_gepa runs side by side, per-seed gains, the sign test of the first run
against each other column, and seeds a run has not finished left out and named."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import search_table  # noqa: E402


def write_run(out: Path, tests: dict[int, float], gepa: dict[int, float], calls: int) -> None:
    for seed, test in tests.items():
        folder = out / f"seed{seed}"
        folder.mkdir(parents=True)
        row = {
            "seed": seed,
            "test_initial": 0.25,
            "skillgrad": {"test": test, "target_calls": 48, "optimizer_calls": calls},
            "gepa": {"test": gepa[seed], "target_calls": 50, "optimizer_calls": 4},
        }
        (folder / "result.json").write_text(json.dumps(row), encoding="utf-8")


def test_gains_side_by_side_with_the_sign_test_and_unfinished_seeds_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gepa = {0: 0.25, 1: 0.5, 2: 0.25, 3: 0.25}
    write_run(tmp_path / "f", {0: 0.5, 1: 0.75, 2: 0.5, 3: 0.25}, gepa, calls=3)
    write_run(
        tmp_path / "g", {0: 0.25, 1: 0.75, 2: 0.25}, {s: 0.0 for s in gepa}, calls=5
    )  # seed 3 unfinished
    assert search_table.main([f"frontier={tmp_path / 'f'}", f"greedy={tmp_path / 'g'}"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "| seed | frontier | greedy | GEPA 0.1.4 |"
    assert lines[2:5] == [
        "| 0 | +0.250 | +0.000 | +0.000 |",  # GEPA's column is the first run's, not the second's
        "| 1 | +0.500 | +0.500 | +0.250 |",
        "| 2 | +0.250 | +0.000 | +0.000 |",
    ]
    assert lines[5] == "| mean | +0.333 | +0.167 | +0.083 |"
    # frontier - greedy: up, tie, up; frontier - GEPA: up 3 times (p = 2 x 1/8)
    assert lines[6] == "| frontier vs it: seeds up / down (sign test) | | 2 / 0 (p 0.500) | 3 / 0 (p 0.250) |"
    assert lines[7:9] == [
        "| mean target calls | 48.0 | 48.0 | 50.0 |",
        "| mean optimizer calls | 3.0 | 5.0 | 4.0 |",
    ]
    assert lines[-1] == 'left out (not finished by every run): {"frontier": [3], "GEPA 0.1.4": [3]}'


def test_a_name_without_a_folder_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for wrong in (str(tmp_path), f"frontier={tmp_path / 'missing'}"):
        with pytest.raises(SystemExit) as exited:
            search_table.main([wrong])
        err = capsys.readouterr().err.strip().splitlines()[-1]
        assert exited.value.code == 2 and err.endswith(
            f"{wrong!r}: pass NAME=DIR, DIR a bench/vs_gepa.py --out folder"
        )
