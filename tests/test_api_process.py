"""The API in a long-lived process: two trainings in two threads give what they give one after the
other; a call leaves logging, signal handlers, the environment and the current folder as it found
them; `resume=True` continues a run whose process was killed, paying nothing twice."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

import skillgrad
from skillgrad import AgentResult, Score, Task
from tests.api_world import REPO, FactsWorld, example_namespace, scripted_config
from tests.fakes.openai_server import Request, Response, ScriptedOpenAI, server_error
from tests.test_resume import artifacts


def outcome(result: skillgrad.TrainResult) -> dict[str, Any]:
    """What a run decided and paid, without its clocks and folder."""
    history = (result.run_dir / "history.jsonl").read_text(encoding="utf-8").splitlines()
    steps = [{k: v for k, v in json.loads(line).items() if k not in ("usage",)} for line in history]
    return {
        "skill": result.best_skill.text,
        "scores": (result.baseline_val, result.best_val, result.baseline_test, result.best_test),
        "counts": (result.steps, result.accepted, result.rejected, result.skipped, result.stopped),
        "paid": result.usage.to_json(),
        "history": steps,
    }


def test_two_trainings_in_threads_match_the_same_two_in_turn(tmp_path: Path) -> None:
    example = example_namespace()
    world = FactsWorld(example["FACTS"])
    tasks = example["house_tasks"]()
    with ScriptedOpenAI(world) as server:

        def run(name: str, seed: int) -> skillgrad.TrainResult:
            config = scripted_config(example["CONFIG"], server.base_url, tmp_path / name / "cache")
            config["benchmark"] = {**config["benchmark"], "seed": seed}
            return skillgrad.train(
                config, benchmark=tasks, scorer=example["score"], out=tmp_path / name / "run"
            )

        alone = [run("alone-a", 0), run("alone-b", 1)]
        together: dict[str, skillgrad.TrainResult] = {}
        threads = [
            threading.Thread(target=lambda n=name, s=seed: together.__setitem__(n, run(n, s)))
            for name, seed in (("both-a", 0), ("both-b", 1))
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
    assert set(together) == {"both-a", "both-b"}
    assert outcome(alone[0]) != outcome(alone[1])  # two different runs, so a mix-up would show
    assert outcome(together["both-a"]) == outcome(alone[0])
    assert outcome(together["both-b"]) == outcome(alone[1])
    for name in ("both-a", "both-b"):  # each folder holds its own run, and only its own
        log = (tmp_path / name / "run" / "train.log").read_text(encoding="utf-8")
        assert f"out={tmp_path / name / 'run'}" in log and log.count("run start") == 1
        assert artifacts(tmp_path / name / "run") == artifacts(
            tmp_path / name.replace("both", "alone") / "run"
        )


class MeddlingBenchmark:
    """Changes what a library may change for the whole process while the run works (a logging
    handler, a signal handler, an environment variable, the current folder), and records that it
    saw them changed."""

    name = "meddling"

    def __init__(self, tasks: list[Task], elsewhere: Path) -> None:
        self.tasks, self.elsewhere = tasks, elsewhere
        self.seen: list[str] = []
        self.handler = logging.StreamHandler()

    def load(self, split: str) -> list[Task]:
        start = {"train": 0, "val": 1, "test": 2}[split]
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGUSR1, lambda *_: None)
        logging.getLogger().addHandler(self.handler)
        logging.getLogger("meddling.lib").addHandler(logging.NullHandler())
        logging.getLogger().setLevel(logging.DEBUG)
        os.environ["SKILLGRAD_TEST_MEDDLED"] = "1"
        os.environ.pop("SKILLGRAD_TEST_KEEP", None)
        os.chdir(self.elsewhere)
        return self.tasks[start::5][:4]

    def score(self, task: Task, result: AgentResult) -> Score:
        self.seen.append(os.getcwd())
        return Score(float(task.answers[0] in result.answer), task.answers[0] in result.answer, "f")


def process_state() -> dict[str, Any]:
    loggers = {
        n: list(x.handlers)
        for n, x in logging.root.manager.loggerDict.items()
        if isinstance(x, logging.Logger)
    }
    return {
        "cwd": os.getcwd(),
        "env": dict(os.environ),
        "root": (list(logging.getLogger().handlers), logging.getLogger().level),
        "loggers": {n: h for n, h in loggers.items() if h},
        "signals": {s: signal.getsignal(s) for s in signal.valid_signals()},
    }


@pytest.mark.parametrize("fails", [False, True])
def test_a_call_leaves_the_process_as_it_found_it(tmp_path: Path, fails: bool, monkeypatch: Any) -> None:
    example = example_namespace()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SKILLGRAD_TEST_KEEP", "kept")
    bench = MeddlingBenchmark(example["house_tasks"](), elsewhere)
    before = process_state()
    with ScriptedOpenAI(FactsWorld(example["FACTS"])) as server:
        config = scripted_config(example["CONFIG"], server.base_url, tmp_path / "cache")
        config["benchmark"] = {"train_size": 4, "val_size": 4, "test_size": 0}
        if fails:  # refused once the benchmark has loaded: restored on the way out of an error too
            config["budget"] = {"max_calls": 1}
        try:
            result = skillgrad.evaluate(config, "Be brief.", split="val", benchmark=bench, out="eval")
        except skillgrad.BudgetExceeded as exc:
            assert fails and exc.run_dir == tmp_path / "eval"
        else:
            assert not fails and result.n == 4
    assert set(bench.seen) <= {str(elsewhere)}  # the changes held during the call
    assert len(bench.seen) < 4 if fails else len(bench.seen) == 4
    assert process_state() == before
    assert (tmp_path / "eval" / "eval.json").is_file()  # `out` meant the folder of the call's start


KILLER = """
import json, sys
sys.path[:0] = [{repo!r}]
import skillgrad
from tests.api_world import example_namespace
example = example_namespace()
config = json.loads(sys.argv[1])
skillgrad.train(config, benchmark=example["house_tasks"](), scorer=example["score"], out=sys.argv[2])
"""


class KillingWorld(FactsWorld):
    """The facts world, which SIGKILLs the training process when request `kill_at` arrives."""

    def __init__(self, facts: Any) -> None:
        super().__init__(facts)
        self.kill_at: int | None = None
        self.pid: int | None = None
        self.answered: list[str] = []

    def __call__(self, request: Request) -> Response:
        with self.lock:
            if self.kill_at is not None and len(self.answered) + 1 == self.kill_at and self.pid:
                os.kill(self.pid, signal.SIGKILL)  # this request is never answered: nothing paid
                self.kill_at = None
                return server_error(500)
            self.answered.append(json.dumps(request["messages"]))
        return super().__call__(request)


def test_resume_continues_a_killed_run(tmp_path: Path) -> None:
    example = example_namespace()
    kwargs: dict[str, Any] = {"benchmark": example["house_tasks"](), "scorer": example["score"]}
    clean_world, world = KillingWorld(example["FACTS"]), KillingWorld(example["FACTS"])

    def one_call_at_a_time(url: str, cache: Path) -> dict[str, Any]:
        # A reply in flight when the process dies is paid and lost: with one call at a time there
        # is none besides the request the kill answers with an error, so "none twice" is exact.
        config = scripted_config(example["CONFIG"], url, cache)
        config["train"] = {**config["train"], "concurrency": 1, "overlap": False}
        return config

    with ScriptedOpenAI(clean_world) as server:
        clean_config = one_call_at_a_time(server.base_url, tmp_path / "clean-cache")
        clean = skillgrad.train(clean_config, out=tmp_path / "clean", **kwargs)
    with ScriptedOpenAI(world) as server:
        config = one_call_at_a_time(server.base_url, tmp_path / "cache")
        world.kill_at = len(clean_world.answered) * 2 // 3  # inside the second half of the run
        script = tmp_path / "train.py"
        script.write_text(KILLER.format(repo=str(REPO)), encoding="utf-8")
        args = [sys.executable, str(script), json.dumps(config), str(tmp_path / "run")]
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        world.pid = proc.pid
        _, err = proc.communicate(timeout=240)
        assert proc.returncode == -signal.SIGKILL, err
        assert not (tmp_path / "run" / "summary.json").exists()

        resumed = skillgrad.train(config, out=tmp_path / "run", resume=True, **kwargs)
    assert len(world.answered) == len(set(world.answered)) == len(clean_world.answered)  # none twice
    assert resumed.run_dir == tmp_path / "run" and resumed.summary["sessions"] == 2
    assert outcome(resumed)["skill"] == outcome(clean)["skill"]
    assert outcome(resumed)["history"] == outcome(clean)["history"]
    assert artifacts(tmp_path / "run") == artifacts(tmp_path / "clean")
