"""The housecli benchmark: tasks that need the package's reference to call the house CLI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from skillgrad.benchmarks.house_tool import ZONES, quote_code
from skillgrad.benchmarks.housecli import HouseCliBenchmark
from skillgrad.config import load_config
from skillgrad.errors import UserError
from skillgrad.package.folder import load_package
from skillgrad.session.build import initial_skill
from skillgrad.values import AgentResult

REPO = Path(__file__).resolve().parents[1]


def bench() -> HouseCliBenchmark:
    return HouseCliBenchmark({"train": 6, "val": 6, "test": 6}, 0)


def test_splits_are_deterministic_and_disjoint() -> None:
    a, b = bench(), bench()
    assert [t.question for t in a.load("train")] == [t.question for t in b.load("train")]
    questions = [t.question for split in ("train", "val", "test") for t in a.load(split)]
    assert len(questions) == len(set(questions)) == 18


def house(workspace: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, str(workspace / "tools" / "house.py"), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=False)


def test_the_cli_answers_only_the_documented_call(tmp_path: Path) -> None:
    task = bench().load("train")[0]
    bench().prepare(task, tmp_path)
    call = task.meta["call"].split()[2:]  # after `python tools/house.py`
    done = house(tmp_path, *call)
    assert done.returncode == 0 and task.answers[0] in done.stdout
    assert house(tmp_path, "--help").returncode == 2  # nothing documented in the tool itself
    kilos = [*call[:-1], "2.5"]
    assert "not a whole number" in house(tmp_path, *kilos).stderr
    assert (
        "unknown zone"
        in house(tmp_path, "quote", "--zone", "Lisbon", "--lane", "ground", "--weight", "1").stderr
    )


def test_score_needs_the_exact_code_and_names_the_right_call() -> None:
    task = bench().load("val")[0]
    assert bench().score(task, AgentResult(task.answers[0])).passed
    wrong = bench().score(task, AgentResult("QXX-000000"))
    assert not wrong.passed and task.meta["call"] in wrong.feedback
    assert not bench().score(task, AgentResult("", is_error=True, error="boom")).passed
    assert quote_code(ZONES["Lisbon"], "ground", 1200) != quote_code(ZONES["Lisbon"], "ground", 1)


def test_shipped_config_loads_the_starter_package() -> None:
    cfg = load_config(REPO / "configs" / "housecli.yaml")
    package = load_package(REPO / "configs" / "skills" / "housecli")
    assert initial_skill(cfg) == package.encode()
    reference = package.files["references/cli.md"]
    assert all(f"| {city} | {zone} |" in reference for city, zone in ZONES.items())
    assert "grams" not in reference  # what training has to add


def test_options_are_refused() -> None:
    from skillgrad.benchmarks.housecli import create

    cfg = load_config(REPO / "configs" / "housecli.yaml")
    cfg.benchmark.options = {"x": 1}
    with pytest.raises(UserError, match="takes no options"):
        create(cfg)


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("skill.max_chars=300", "chars, over skill.max_chars=300; raise the budget"),
        (
            "optimizer.edit_mode=rewrite",
            "is a package folder; optimizer.edit_mode: rewrite works on a single file",
        ),
    ],
)
def test_unusable_initial_packages_are_one_line_errors(setting: str, message: str) -> None:
    cmd = [
        sys.executable,
        "-m",
        "skillgrad.cli",
        "train",
        "--config",
        str(REPO / "configs" / "housecli.yaml"),
    ]
    proc = subprocess.run([*cmd, "--set", setting, "--estimate"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and message in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and not proc.stdout
