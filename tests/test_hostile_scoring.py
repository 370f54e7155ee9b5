"""Issue 12, defects 2 and 10: no fake pass. A wrong solution that exits early, hooks atexit,
returns an object equal to everything, rewrites the junit file or patches the test framework scores
0; a solution that is a symlink to a correct file outside the workspace scores 0 live and on replay."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from skillgrad.backends.interface import AgentResult
from skillgrad.benchmarks.catalog import load_benchmark
from skillgrad.benchmarks.contract import AgenticBenchmark, Task
from skillgrad.cache import CachedAgent, CallCache
from skillgrad.config import Config
from tests.two_fer import SOLUTION, make_exercise

HE_PROMPT = 'def add(a: int, b: int) -> int:\n    """Return a + b."""\n'
HE_TEST = "def check(candidate):\n    assert candidate(2, 3) == 5\n    assert candidate(-1, 1) == 0\n"


def make_cfg(tmp_path: Path, **benchmark: Any) -> Config:
    cfg = Config.model_validate({"benchmark": benchmark})
    cfg.base_dir = tmp_path
    return cfg


@pytest.fixture
def humaneval(tmp_path: Path) -> tuple[Any, Task]:
    row = {"task_id": "HumanEval/0", "prompt": HE_PROMPT, "test": HE_TEST, "entry_point": "add"}
    (tmp_path / "he.jsonl").write_text(json.dumps(row) + "\n", encoding="utf-8")
    cfg = make_cfg(tmp_path, name="humaneval", data="he.jsonl", train_size=0, val_size=1,
                   options={"timeout_s": 10, "memory_mb": 512})  # fmt: skip
    bench = load_benchmark(cfg)
    (task,) = bench.load("val")
    return bench, task


WRONG = "def add(a, b):\n    return None\n"
HE_CHEATS = {
    "sys.exit(0) after the def": WRONG + "import sys\nsys.exit(0)\n",
    "os._exit(0) after the def": WRONG + "import os\nos._exit(0)\n",
    "atexit hook": WRONG + "import atexit, os\natexit.register(lambda: os._exit(0))\n",
    "exit inside the call": "def add(a, b):\n    import os\n    os._exit(0)\n",
    "object equal to everything": (
        "class Anything:\n    def __eq__(self, other):\n        return True\n"
        "def add(a, b):\n    return Anything()\n"
    ),
    "int subclass equal to everything": (
        "class Anything(int):\n    def __eq__(self, other):\n        return True\n"
        "def add(a, b):\n    return Anything(0)\n"
    ),
    "patched AssertionError": (
        "import builtins\nbuiltins.AssertionError = type('X', (Exception,), {})\n" + WRONG
    ),
    "forged report": (
        "import os\nfd = int(os.environ.get('SKILLGRAD_REPORT_FD', '3'))\n"
        'os.write(fd, b\'{"passed": true, "kind": "passed", "detail": "x"}\')\n'
        "print('{\"passed\": true}')\n" + WRONG
    ),
}


@pytest.mark.parametrize("cheat", sorted(HE_CHEATS))
def test_humaneval_cheats_score_zero(humaneval: tuple[Any, Task], cheat: str) -> None:
    bench, task = humaneval
    score = bench.score(task, AgentResult(answer=f"```python\n{HE_CHEATS[cheat]}```"))
    assert score.value == 0 and not score.passed, score.feedback


def test_humaneval_honest_solution_still_passes(humaneval: tuple[Any, Task]) -> None:
    bench, task = humaneval
    honest = "```python\ndef add(a, b):\n    print('noise on stdout')\n    return a + b\n```"
    score = bench.score(task, AgentResult(answer=honest))
    assert score.passed and score.value == 1.0, score.feedback


# ----------------------------------------------------------------------------------- coding tasks

WRONG_TWO_FER = "def two_fer(name='you'):\n    return 'nope'\n"
PASSING_JUNIT = (
    '<?xml version="1.0"?><testsuites><testsuite name="pytest" tests="2">'
    '<testcase classname="t" name="test_no_name"/><testcase classname="t" name="test_name"/>'
    "</testsuite></testsuites>"
)
CODING_CHEATS = {
    "junit rewritten from atexit": (
        "import atexit, glob, os\n"
        "def _fake():\n"
        "    for path in glob.glob('*.xml') + glob.glob('.*.xml') + ['.junit.xml']:\n"
        f"        open(path, 'w').write({PASSING_JUNIT!r})\n"
        "atexit.register(_fake)\n" + WRONG_TWO_FER
    ),
    "assertEqual patched on import": (
        "import unittest\nunittest.TestCase.assertEqual = lambda self, *a, **k: None\n" + WRONG_TWO_FER
    ),
    "sys.exit(0) on import": "import sys\nsys.exit(0)\n",
    "os._exit(0) on import": "import os\nos._exit(0)\n",
    "os._exit(0) in the test": "def two_fer(name='you'):\n    import os\n    os._exit(0)\n",
    "forged report": (
        "import json, os\nfd = int(os.environ.get('SKILLGRAD_REPORT_FD', '3'))\n"
        "tests = {f't::{n}': {'outcome': 'passed', 'message': ''} for n in ('test_no_name', 'test_name')}\n"
        "os.write(fd, json.dumps({'nonce': '', 'exitstatus': 0, 'tests': tests, 'tampered': []}).encode())\n"
        "os._exit(0)\n"
    ),
}


@pytest.fixture
def coding(tmp_path: Path) -> tuple[AgenticBenchmark, Task, Path]:
    make_exercise(tmp_path)
    cfg = make_cfg(tmp_path, name="coding_tasks", data="practice", train_size=0, val_size=1,
                   options={"timeout_s": 30})  # fmt: skip
    bench = load_benchmark(cfg)
    assert isinstance(bench, AgenticBenchmark)
    (task,) = bench.load("val")
    ws = tmp_path / "ws"
    bench.prepare(task, ws)
    return bench, task, ws


@pytest.mark.parametrize("cheat", sorted(CODING_CHEATS))
def test_coding_task_cheats_score_zero(coding: tuple[AgenticBenchmark, Task, Path], cheat: str) -> None:
    bench, task, ws = coding
    (ws / "two_fer.py").write_text(CODING_CHEATS[cheat])
    score = bench.score(task, AgentResult(answer="", workspace=ws))
    assert score.value == 0 and not score.passed, score.feedback
    (ws / "two_fer.py").write_text(SOLUTION)  # the same workspace with an honest solution passes
    assert bench.score(task, AgentResult(answer="", workspace=ws)).passed


class _Writes:
    """An agent that leaves a symlink to a correct solution outside its workspace."""

    name = "fake"
    model = "fake"

    def __init__(self, outside: Path) -> None:
        self.outside = outside

    def run(self, task: Task, skill: str, workspace: Path) -> AgentResult:
        (workspace / "two_fer.py").unlink()
        (workspace / "two_fer.py").symlink_to(self.outside)
        return AgentResult(answer="done", workspace=workspace)


def test_symlinked_solution_scores_zero_live_and_on_replay(
    coding: tuple[AgenticBenchmark, Task, Path], tmp_path: Path
) -> None:
    bench, task, _ws = coding
    outside = tmp_path / "correct.py"
    outside.write_text(SOLUTION)
    agent = CachedAgent(_Writes(outside), CallCache(tmp_path / "cache"))
    scores = []
    for run in ("live", "replay"):
        ws = tmp_path / run
        bench.prepare(task, ws)
        result = agent.run(task, "skill", ws)
        scores.append(bench.score(task, result))
    assert agent.stats.hits == 1
    assert [s.value for s in scores] == [0.0, 0.0], [s.feedback for s in scores]
    assert "symlink" in scores[0].feedback
    shutil.rmtree(tmp_path / "live")


# ------------------------------------------------------------------------ defect 4: sizes first


class _Sparse:
    """An agent that leaves a 3 GB sparse file (`truncate -s 3G`) in its workspace."""

    name = "fake"
    model = "fake"

    def run(self, task: Task, skill: str, workspace: Path) -> AgentResult:
        with (workspace / "huge.bin").open("wb") as handle:
            handle.truncate(3 * 1024**3)
        return AgentResult(answer="done", workspace=workspace)


def test_sparse_file_is_never_read_by_cache_scrub_or_scorer(
    coding: tuple[AgenticBenchmark, Task, Path], tmp_path: Path
) -> None:
    import resource
    import time

    from skillgrad.redact import Redactor
    from skillgrad.snapshot import scrub_tree

    bench, task, ws = coding
    agent = CachedAgent(
        _Sparse(), CallCache(tmp_path / "cache"), redact_file=Redactor(["x" * 12]).redact_bytes
    )
    before_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.monotonic()
    result = agent.run(task, "skill", ws)
    assert agent.stats.uncacheable == 1  # too large to snapshot, judged from its size alone
    (ws / "two_fer.py").unlink()
    with (ws / "two_fer.py").open("wb") as handle:  # a sparse "solution" is refused by size
        handle.truncate(3 * 1024**3)
    score = bench.score(task, result)
    assert score.value == 0 and "larger than" in score.feedback
    scrub_tree(ws, Redactor(["x" * 12]).redact_bytes, 8 * 1024 * 1024)
    assert (ws / "huge.bin").stat().st_size < 200  # emptied with a note, not scanned
    assert time.monotonic() - start < 10
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before_rss) / 1024
    assert grown_mb < 200
