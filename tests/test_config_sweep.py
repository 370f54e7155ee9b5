"""Issue 32, defect 3: no config value makes skillgrad spin before its first call.

Every numeric config key (found by walking the typed config, so a new key is swept too) is set to
0, -1, 10^9 and 1.5 (a float where an int may be expected). Each value is either refused with one
line naming the key, or accepted: then `skillgrad train` reaches its first model call, which the
scripted server refuses (401), and the run stops in its one line. A value that makes the trainer
build something as large as itself (the whole step plan of 10^9 epochs) never gets there.
"""

from __future__ import annotations

import contextlib
import io
import json
import threading
import types
from pathlib import Path
from typing import Any, get_args

import pytest
from pydantic import BaseModel

from skillgrad.cli import main
from skillgrad.config import Config
from skillgrad.loop.plan import make_plan
from skillgrad.values import Task
from tests.fakes.openai_server import ScriptedOpenAI, unauthorized

pytestmark = pytest.mark.timeout(120)

VALUES = (0, -1, 10**9, 1.5)
FIRST_CALL_S = 60.0  # a run that has not made its first call by then is spinning


def _numeric(annotation: Any) -> bool:
    kinds = get_args(annotation) if isinstance(annotation, types.UnionType) else (annotation,)
    return any(kind in (int, float) for kind in kinds)


def numeric_keys() -> list[str]:
    keys = []
    for section, field in Config.model_fields.items():
        model = field.annotation
        if isinstance(model, type) and issubclass(model, BaseModel):
            keys += [f"{section}.{name}" for name, f in model.model_fields.items() if _numeric(f.annotation)]
    return keys


def test_the_sweep_finds_the_numeric_keys() -> None:
    keys = numeric_keys()
    assert {"train.epochs", "train.concurrency", "model.timeout_s", "budget.max_usd", "ray.workers"} <= set(
        keys
    )
    assert "train.overlap" not in keys and "model.temperature" in keys and len(keys) > 40


@pytest.fixture(scope="module")
def refusing_server():
    with ScriptedOpenAI(lambda request: unauthorized()) as server:
        yield server


def _config(folder: Path, base_url: str) -> Path:
    data = folder / "items.jsonl"
    rows = [{"id": f"q{i}", "question": f"Question {i}?", "answers": ["a"]} for i in range(8)]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    settings = {
        "benchmark": {"name": "qa", "data": str(data), "train_size": 3, "val_size": 2, "test_size": 0},
        "model": {"backend": "openai_chat", "base_url": base_url, "api_key": "sk-test-FAKE-sweep-0"},
        "train": {"epochs": 1, "batch_size": 3, "minibatch_size": 3, "concurrency": 2},
        "cache": {"enabled": False},
    }
    path = folder / "config.yaml"
    path.write_text(json.dumps(settings), encoding="utf-8")  # JSON is YAML
    return path


def _train_in_thread(args: list[str]) -> tuple[bool, int | None, str]:
    """(finished in time, exit code, stderr) of `skillgrad train ARGS` run in this process."""
    result: dict[str, Any] = {}
    err, out = io.StringIO(), io.StringIO()

    def run() -> None:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            result["code"] = main(["train", *args])

    thread = threading.Thread(target=run, daemon=True)  # a spinning one cannot hold up the exit
    thread.start()
    thread.join(FIRST_CALL_S)
    return not thread.is_alive(), result.get("code"), err.getvalue()


@pytest.mark.parametrize("value", VALUES, ids=str)
@pytest.mark.parametrize("key", numeric_keys())
def test_every_numeric_value_is_refused_in_one_line_or_reaches_the_first_call(
    tmp_path: Path, refusing_server: ScriptedOpenAI, key: str, value: float
) -> None:
    cfg = _config(tmp_path, refusing_server.base_url)
    asked_before = len(refusing_server.requests)
    finished, code, stderr = _train_in_thread(
        ["--config", str(cfg), "--out", str(tmp_path / "run"), "--set", f"{key}={value}"]
    )
    assert finished, f"{key}={value}: no first call after {FIRST_CALL_S}s"
    assert "Traceback" not in stderr and code == 2, (code, stderr)
    lines = stderr.strip().splitlines()
    if len(refusing_server.requests) == asked_before:  # refused before any call: one line, naming the key
        assert len(lines) == 1 and key.split(".")[-1] in lines[0], stderr
    else:  # accepted: the first call was made (and refused, which stops the run)
        assert "authentication failed" in lines[0], stderr


def test_the_plan_of_a_billion_epochs_is_made_as_its_steps_are_asked_for() -> None:
    from skillgrad.config import TrainConfig

    tasks = [Task(f"t{i}", f"q{i}") for i in range(10)]
    plan = make_plan(tasks, TrainConfig(epochs=10**9, batch_size=4))
    assert len(plan) == 3 * 10**9
    assert [(s, e, len(b)) for s, e, b in plan[:4]] == [(1, 1, 4), (2, 1, 4), (3, 1, 2), (4, 2, 4)]
    last = plan[-1]
    assert last[:2] == (3 * 10**9, 10**9) and len(last[2]) == 2
    assert plan.first_after(3 * 10**9) == len(plan) and plan.first_after(2) == 2
    one = make_plan(tasks, TrainConfig(epochs=2, batch_size=4, seed=7))
    assert [b for _, _, b in one] == [b for _, _, b in list(one)[:3]] + [b for _, _, b in one[3:]]


def test_the_tasks_left_in_a_billion_epochs_are_read_as_far_as_they_differ() -> None:
    from skillgrad.config import TrainConfig
    from skillgrad.loop.stopping import remaining_tasks

    tasks = [Task(f"t{i}", f"q{i}") for i in range(10)]
    plan = make_plan(tasks, TrainConfig(epochs=10**9, batch_size=4))
    assert remaining_tasks(plan[2:]) == {t.id for t in tasks}  # step 3 on: every task comes again
    last = plan[-1]
    assert remaining_tasks(plan[-1:]) == {t.id for t in last[2]}


@pytest.mark.parametrize("search", ["greedy", "frontier"])
def test_a_billion_epochs_train_until_the_budget_stops_them(tmp_path: Path, search: str) -> None:
    """After the baseline, each step's stop check reads what remains of the plan: bounded for
    either search (the budget, not the epochs, ends the run)."""
    from tests.fakes.openai_server import ScriptedOpenAI as Server
    from tests.test_resume import World, config

    with Server(World()) as server:
        cfg = config(tmp_path, server, "a")
        finished, code, stderr = _train_in_thread(
            ["--config", str(cfg), "--out", str(tmp_path / "run"), "--set", "train.epochs=1000000000",
             "--set", f"optimizer.search={search}", "--set", "budget.max_calls=14"]
        )  # fmt: skip
    assert finished and code == 0, stderr
    summary = json.loads((tmp_path / "run" / "summary.json").read_text(encoding="utf-8"))
    assert summary["stopped"] == "budget" and summary["steps"] >= 1
