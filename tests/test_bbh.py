"""The `bbh` benchmark: BBH task files and JSONL items, seeded splits, exact match with
"expected X; got Y" feedback, one-line errors for bad files; and one `skillgrad eval` over it
against the scripted OpenAI server."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from skillgrad.benchmarks.bbh import normalize, score_target
from skillgrad.benchmarks.catalog import benchmark_names, load_benchmark
from skillgrad.config import Config
from skillgrad.errors import UserError
from skillgrad.values import AgentResult
from tests.fakes.openai_server import Request, ScriptedOpenAI, Text

pytestmark = pytest.mark.timeout(60)

DATE_ITEMS = [
    {
        "input": f"Today is 0{i}/01/2020. What is the date tomorrow in MM/DD/YYYY?\nOptions:\n"
        f"(A) 0{i}/02/2020\n(B) 0{i}/03/2020",
        "target": "(A)",
    }
    for i in range(1, 9)
]


def cfg(tmp_path: Path, data: str, **benchmark: Any) -> Config:
    c = Config.model_validate({"benchmark": {"name": "bbh", "data": data, **benchmark}})
    c.base_dir = tmp_path
    return c


def task_file(tmp_path: Path, items: list[dict[str, Any]], name: str = "date_understanding.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"canary": "BENCHMARK DATA", "examples": items}), encoding="utf-8")
    return path


def test_bbh_is_a_builtin_and_reads_a_bbh_task_file_split_by_seed(tmp_path: Path) -> None:
    assert "bbh" in benchmark_names()
    task_file(tmp_path, DATE_ITEMS)
    sizes = {"train_size": 3, "val_size": 2, "test_size": 3}
    bench = load_benchmark(cfg(tmp_path, "date_understanding.json", seed=0, **sizes))
    parts = {s: bench.load(s) for s in ("train", "val", "test")}
    ids = [t.id for part in parts.values() for t in part]
    assert len(ids) == len(set(ids)) == 8
    assert all(i.startswith("date_understanding-") for i in ids)
    task = parts["train"][0]
    assert task.answers == ("(A)",) and task.context is None and "Options:" in task.question
    other = load_benchmark(cfg(tmp_path, "date_understanding.json", seed=1, **sizes))
    assert [t.id for t in other.load("train")] != [t.id for t in parts["train"]]


def test_bbh_reads_jsonl_items_with_their_own_ids(tmp_path: Path) -> None:
    rows = [{"id": "c1", "input": "I have a flute and two pianos. How many instruments?", "target": 3}]
    rows.append({"input": "I have a cat. How many animals?", "target": "1"})
    (tmp_path / "counting.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    bench = load_benchmark(cfg(tmp_path, "counting.jsonl", train_size=1, val_size=1, test_size=0))
    tasks = {t.id: t for split in ("train", "val") for t in bench.load(split)}
    assert set(tasks) == {"c1", "counting-2"}
    assert tasks["c1"].answers == ("3",)


@pytest.mark.parametrize(
    ("answer", "target", "passed"),
    [
        ("(B)", "(B)", True),
        (" (b). ", "(B)", True),
        ("B", "(B)", False),
        ("(B) 12/25/1937", "(B)", False),
        ("True", "True", True),
        ("true", "True", True),
        ("8", "8", True),
        ("8 instruments", "8", False),
        ("eight", "8", False),
        ("", "8", False),
        ("apple banana cherry", "apple banana cherry", True),
        ("apple  banana\ncherry", "apple banana cherry", True),
    ],
)
def test_exact_match_forgives_only_spaces_a_full_stop_and_case(
    answer: str, target: str, passed: bool
) -> None:
    score = score_target(answer, target)
    assert score.passed is passed and score.value == float(passed)


def test_feedback_says_only_expected_and_got(tmp_path: Path) -> None:
    score = score_target("B", "(B)")
    assert score.feedback == "expected '(B)'; got 'B'"
    long = score_target("x " * 200, "(B)")
    assert long.feedback.endswith("...'") and len(long.feedback) < 220
    task_file(tmp_path, DATE_ITEMS)
    bench = load_benchmark(cfg(tmp_path, "date_understanding.json", train_size=1, val_size=1, test_size=0))
    task = bench.load("train")[0]
    failed = bench.score(task, AgentResult(answer="", is_error=True, error="timed out"))
    assert not failed.passed and "timed out" in failed.feedback
    assert bench.score(task, AgentResult(answer="(a)")).passed
    assert normalize("  (A).  ") == "(a)"


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("t.json", "{not json", r"t\.json: not valid JSON"),
        ("t.json", json.dumps({"input": "x"}), r'expected a BBH task file \{"examples"'),
        ("t.json", json.dumps({"examples": [{"input": "q"}]}), r"examples\[0\]: field 'target' must be"),
        ("t.json", json.dumps({"examples": ["q"]}), r"examples\[0\]: expected an object"),
        ("t.json", json.dumps({"examples": []}), r"t\.json: no items"),
        ("t.jsonl", '{"input": "", "target": "1"}\n', r"t\.jsonl:1: field 'input' must be"),
    ],
)
def test_bad_files_are_one_line_errors_naming_the_file(
    tmp_path: Path, name: str, content: str, message: str
) -> None:
    (tmp_path / name).write_text(content, encoding="utf-8")
    with pytest.raises(UserError, match=message):
        load_benchmark(cfg(tmp_path, name, train_size=1, val_size=1, test_size=0))


def test_missing_data_says_how_to_set_it(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="needs data: set benchmark.data"):
        load_benchmark(Config.model_validate({"benchmark": {"name": "bbh"}}))
    with pytest.raises(UserError, match="nope.json: data file not found"):
        load_benchmark(cfg(tmp_path, "nope.json"))


def test_skillgrad_eval_on_bbh_scores_the_served_answers(tmp_path: Path) -> None:
    """The CLI on a BBH task file, with a scripted OpenAI server: right form passes, `A` fails."""
    task_file(tmp_path, DATE_ITEMS)

    def reply(request: Request) -> Text:
        return Text("(A)" if "01/01/2020" in request.user or "02/01/2020" in request.user else "A")

    with ScriptedOpenAI(reply) as server:
        config = {
            "benchmark": {
                "name": "bbh",
                "data": "date_understanding.json",
                "train_size": 2,
                "val_size": 2,
                "test_size": 4,
                "seed": 0,
            },
            "model": {
                "backend": "openai_chat",
                "base_url": server.base_url,
                "api_key": "sk-test",
                "target_model": "t",
                "optimizer_model": "o",
                "max_retries": 0,
            },
            "cache": {"enabled": False},
        }
        (tmp_path / "config.yaml").write_text(json.dumps(config), encoding="utf-8")
        (tmp_path / "skill.md").write_text("Answer with the option label, e.g. (A).\n", encoding="utf-8")
        cmd = [sys.executable, "-m", "skillgrad.cli", "eval", "--config", str(tmp_path / "config.yaml")]
        cmd += ["--skill", str(tmp_path / "skill.md"), "--split", "test", "--out", str(tmp_path / "ev")]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=50, check=False)
        assert done.returncode == 0, done.stderr
        seen = [r.user for r in server.requests]
    test = load_benchmark(
        cfg(tmp_path, "date_understanding.json", train_size=2, val_size=2, test_size=4)
    ).load("test")
    right = sum(1 for t in test if "01/01/2020" in t.question or "02/01/2020" in t.question)
    result = json.loads((tmp_path / "ev" / "eval.json").read_text())
    assert result["n"] == 4 and result["mean_score"] == pytest.approx(right / 4)
    assert len(seen) == 4 and all(any(t.question in s for t in test) for s in seen)  # test items only
