"""bench/headroom.py and the benchmark registry of bench/peers_bench.py: every BBH task named with
its kind and BBH's exact match on the real items (skipped where ../shared/data is absent), HotpotQA
as QA items, the reference skills, the rows written through the router and resumed at the
reference, and the headroom table's math."""

from __future__ import annotations

import argparse
import json
import re
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.openai_server import Request, ScriptedOpenAI, text

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import headroom as hr  # noqa: E402
import peers_bench as pb  # noqa: E402
import peers_server as ps  # noqa: E402

from skillgrad.backends.chat_agent import EXAMPLES_SHOWN_AS  # noqa: E402
from skillgrad.benchmarks.catalog import load_benchmark  # noqa: E402
from skillgrad.loop.shapes import LETTER, NUMBER, OPTION, answer_shape  # noqa: E402
from skillgrad.values import AgentResult  # noqa: E402

TURNS = EXAMPLES_SHOWN_AS["turns"]

pytestmark = pytest.mark.timeout(120)

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
RULE = "Reply with the final number alone, in digits, for example 1; no units, no other words."


def shared() -> Path:
    if not (SHARED / "bbh").is_dir():
        pytest.skip("../shared/data/bbh is not on this machine")
    return SHARED


def kind_of(targets: list[str]) -> str:
    """The kind the registry must name, read off a task's targets (most of them: a few BBH
    multiple-choice items have a text target)."""
    shapes = [answer_shape(t) for t in targets]
    top = max(set(shapes), key=shapes.count)
    if shapes.count(top) < 0.95 * len(shapes):
        return "free"
    if top in (OPTION, LETTER):
        return "choice"
    if top == NUMBER:
        return "number"
    return "label" if top.endswith(" word") else "free"


def test_every_bbh_task_is_in_the_registry_with_the_kind_its_targets_have() -> None:
    files = sorted(p.stem for p in (shared() / "bbh").glob("*.json"))
    assert len(files) == 27 and files == sorted(pb.BBH_KINDS)
    for task in files:
        targets = [e["target"] for e in json.loads((SHARED / "bbh" / f"{task}.json").read_text())["examples"]]
        assert pb.BBH_KINDS[task] == kind_of(targets), task
        spec = pb.BENCHMARKS[pb.bbh_key(task)]
        assert (spec.name, spec.data, spec.kind) == ("bbh", f"bbh/{task}.json", pb.BBH_KINDS[task])
    assert pb.expand(["bbh"]) == [pb.bbh_key(t) for t in pb.BBH_KINDS]
    assert pb.expand(["bbh_object_counting", "bbh_count", "gsm8k"]) == ["bbh_count", "gsm8k"]
    assert len(pb.expand(["all"])) == 30


def bench_args(root: Path, work: Path, **extra: Any) -> argparse.Namespace:
    model = work / "t.gguf"
    model.parent.mkdir(parents=True, exist_ok=True)
    model.write_bytes(b"GGUF")
    values: dict[str, Any] = {
        "data_root": root,
        "work": work,
        "target_model": model,
        "optimizer_model": model,
    }
    values |= {"optimizer_cap": 512, "ctx": 4096, "context_chars": 1500, "hotpot_context_chars": 3000}
    return argparse.Namespace(**{**values, **extra})


def loaded(key: str, args: argparse.Namespace, seed: int = 0) -> Any:
    spec = pb.BENCHMARKS[key]
    return load_benchmark(
        pb.seed_config(spec, pb.data_file(spec, args), pb.NOWHERE, args.work / f"{key}.yaml", seed, args)
    )


@pytest.mark.parametrize(
    ("key", "right", "wrong"),
    [
        ("bbh_date", ["{t}", "{t}.", "{t_lower}"], ["{t_bare}", "{t} 12/25/1937", ""]),
        ("bbh_navigate", ["{t}", "{t_lower}."], ["{t}, because", "maybe"]),
        ("bbh_count", ["{t}", " {t} "], ["{t} instruments", "about {t}"]),
        ("bbh_dyck_languages", ["{t}", "{t_spaced}"], ["{t} )", "closing: {t}"]),
    ],
)
def test_bbh_scores_the_whole_answer_by_exact_match_for_every_kind(
    tmp_path: Path, key: str, right: list[str], wrong: list[str]
) -> None:
    """The registry's scorer on real items: a choice task takes the label alone, a label task the
    word alone, a number task the number alone, a free task the sequence alone (case, outer
    spaces and a final stop forgiven, as BBH's exact match does)."""
    bench = loaded(key, bench_args(shared(), tmp_path))
    task = bench.load("test")[0]
    target = task.answers[0]
    forms = {
        "t": target,
        "t_lower": target.lower(),
        "t_bare": target.strip("()"),
        "t_spaced": "  ".join(target.split()),
    }
    for answer in right:
        assert bench.score(task, AgentResult(answer=answer.format(**forms))).value == 1.0, answer
    for answer in wrong:
        assert bench.score(task, AgentResult(answer=answer.format(**forms))).value == 0.0, answer


def test_hotpotqa_items_are_qa_items_with_their_paragraphs_cut_at_a_boundary(tmp_path: Path) -> None:
    args = bench_args(shared(), tmp_path, hotpot_context_chars=1200)
    bench = loaded("hotpotqa", args)
    tasks = [*bench.load("train"), *bench.load("val"), *bench.load("test")]
    assert len(tasks) == 56 and len({t.id for t in tasks}) == 56
    first = json.loads((SHARED / pb.HOTPOT).read_text().splitlines()[0])
    item = pb.hotpot_item(first)
    assert item["answers"] == [first["answer"]] and item["context"].startswith(
        f"[DOC] {first['context']['title'][0]}: "
    )
    assert item["context"].count("[DOC] ") == 10
    for task in tasks:
        assert task.context is not None and len(task.context) <= 1200 and task.context.startswith("[DOC] ")
    task = tasks[0]
    partial = bench.score(task, AgentResult(answer=f"{task.answers[0]} and more words")).value
    assert 0.0 < partial < 1.0 and bench.score(task, AgentResult(answer=task.answers[0])).value == 1.0


def count_items(root: Path) -> None:
    fruit = ["apples", "pears", "plums"]
    items = [{"input": f"I have {n} {fruit[n % 3]}. How many fruits?", "target": str(n)} for n in range(60)]
    (root / "bbh").mkdir(parents=True, exist_ok=True)
    (root / "bbh" / "object_counting.json").write_text(json.dumps({"examples": items}), encoding="utf-8")
    words = [" ".join(["ab", "cd", "ef", "gh"][: 1 + n % 4]) + f" w{n}" for n in range(60)]
    sorting = [{"input": f"Sort the words: {w}", "target": w} for w in words]
    (root / "bbh" / "word_sorting.json").write_text(json.dumps({"examples": sorting}), encoding="utf-8")


def world(request: Request) -> Any:
    """A target that answers with the number alone when the skill shows it how (a rule or a worked
    example), else with the number and a noun."""
    n = request.user.split("I have ")[1].split(" ")[0] if "I have " in request.user else "x"
    turns = any(m.get("role") == "assistant" for m in request.messages)
    shown = RULE in request.system or "Correct reply:" in request.system or turns
    return text(n if shown else f"{n} fruits", 20, 2)


@pytest.fixture
def router() -> Iterator[tuple[ps.Router, ScriptedOpenAI]]:
    with ScriptedOpenAI(world) as target:
        port = int(target.base_url.split(":")[2].split("/")[0])
        served = ps.Router({"target": port}, {"target": 64}, timeout_s=30)
        threading.Thread(target=served.serve_forever, daemon=True).start()
        try:
            yield served, target
        finally:
            served.shutdown()
            served.server_close()


def headroom_args(tmp_path: Path, *extra: str) -> argparse.Namespace:
    root = tmp_path / "data"
    count_items(root)
    model = tmp_path / "t.gguf"
    model.write_bytes(b"GGUF")
    argv = ["--data-root", str(root), "--target-model", str(model), "--model-label", "t", "--seeds", "0"]
    argv += ["--out", str(tmp_path / "rows"), "--work", str(tmp_path / "work"), *extra]
    return hr.parse_args(argv)


def test_rows_are_the_peers_items_written_per_reference_and_resumed(
    tmp_path: Path, router: tuple[ps.Router, ScriptedOpenAI], capsys: pytest.CaptureFixture[str]
) -> None:
    served, target = router
    args = headroom_args(tmp_path, "--benchmarks", "bbh_count", "--references", "empty", "rule")
    hr.run(args, [hr.plan(args, "bbh_count", 0)], served)
    path = tmp_path / "rows" / "t" / "bbh_count" / "seed0.json"
    row = json.loads(path.read_text())
    peers_test = loaded("bbh_count", bench_args(tmp_path / "data", tmp_path / "peers")).load("test")
    assert row["test_ids"] == [t.id for t in peers_test] and len(peers_test) == 32
    assert row["rule"] == RULE and row["smoke"] is False and row["settings"]["test_size"] == 32
    assert row["settings"] == pb.test_settings(
        pb.settings(pb.BENCHMARKS["bbh_count"], "bbh_count", args_for_peers(args))
    )
    refs = row["references"]
    assert (refs["empty"]["score"], refs["rule"]["score"]) == (0.0, 1.0)
    assert refs["empty"]["target_calls"] == refs["rule"]["target_calls"] == 32 == len(target.requests) / 2
    assert refs["empty"]["target_tokens"] == 32 * 22

    more = headroom_args(
        tmp_path, "--benchmarks", "bbh_count", "--references", "empty", "demos2", "rule+demos1"
    )
    job = hr.plan(more, "bbh_count", 0)
    assert job.todo == ["demos2", "rule+demos1"]
    hr.run(more, [job], served)
    refs = json.loads(path.read_text())["references"]
    assert len(target.requests) == 4 * 32 and refs["demos2"]["score"] == refs["rule+demos1"]["score"] == 1.0
    last = target.requests[-32]  # rule+demos1: the rule in the system prompt, the example as turns
    assert RULE in last.system and "Correct reply:" not in last.system
    assert [m["role"] for m in last.messages] == ["system", "user", "assistant", "user"]
    assert refs["demos2"]["examples_shown_as"] == TURNS and "examples_shown_as" not in refs["empty"]
    assert hr.plan(more, "bbh_count", 0).todo == []

    # a row made when examples were shown as text: its references with examples are scored again
    old = json.loads(path.read_text())
    del old["references"]["demos2"]["examples_shown_as"]
    old["references"]["demos2"]["score"] = 0.5
    path.write_text(json.dumps(old))
    job = hr.plan(more, "bbh_count", 0)
    assert job.todo == ["demos2"]
    hr.run(more, [job], served)
    redone = json.loads(path.read_text())["references"]["demos2"]
    assert (redone["score"], redone["score_as_text"], redone["examples_shown_as"]) == (1.0, 0.5, TURNS)
    shown = hr.shown_table([json.loads(path.read_text())])
    assert shown[2] == f"| t | bbh_count | 0 | demos2 | 0.500 | 1.000 | {TURNS} |"
    assert shown[-1] == (
        "\nlatest - text, over 1 pairs: mean +0.500; better 1, worse 0, equal 0 (sign test p 1.000)"
    )
    assert hr.shown_table([json.loads(path.read_text())], "turns") == []

    # one made when each example turn repeated the closing instruction: scored again, both kept
    old = json.loads(path.read_text())
    old["references"]["demos2"].update(examples_shown_as="turns", score=0.75)
    path.write_text(json.dumps(old))
    job = hr.plan(more, "bbh_count", 0)
    assert job.todo == ["demos2"]
    hr.run(more, [job], served)
    redone = json.loads(path.read_text())["references"]["demos2"]
    assert (redone["score"], redone["score_as_text"], redone["score_as_turns"]) == (1.0, 0.5, 0.75)
    assert redone["examples_shown_as"] == TURNS and len(target.requests) == 6 * 32
    shown = hr.shown_table([json.loads(path.read_text())], "turns")
    assert shown[0].endswith("| as turns, each with the instruction | latest | latest shown as |")
    assert shown[2] == f"| t | bbh_count | 0 | demos2 | 0.750 | 1.000 | {TURNS} |"

    stored = json.loads(path.read_text())
    stored["settings"]["target_cap"] = 64
    path.write_text(json.dumps(stored))
    capsys.readouterr()
    with pytest.raises(SystemExit) as stop:
        hr.plan(more, "bbh_count", 0)
    assert stop.value.code == 2
    said = r".*seed0\.json: made with other settings \(settings\.target_cap is 64 there, 128 here\)"
    assert re.fullmatch(said + r"; pass another --out\n", capsys.readouterr().err)


def args_for_peers(args: argparse.Namespace) -> argparse.Namespace:
    return argparse.Namespace(**{**vars(args), "optimizer_model": args.target_model, "optimizer_cap": 768})


def test_a_reference_with_the_skill_of_another_is_not_scored_again_and_smoke_rows_stay_apart(
    tmp_path: Path, router: tuple[ps.Router, ScriptedOpenAI]
) -> None:
    served, target = router
    args = headroom_args(
        tmp_path, "--benchmarks", "bbh_word_sorting", "--references", "empty", "rule", "--smoke", "3"
    )
    hr.run(args, [hr.plan(args, "bbh_word_sorting", 0)], served)
    row = json.loads((tmp_path / "rows" / "t" / "bbh_word_sorting" / "seed0.json").read_text())
    assert row["rule"] is None and row["smoke"] is True and len(row["test_ids"]) == 3
    assert row["references"]["rule"] == {**row["references"]["empty"], "same_as": "empty"}
    assert len(target.requests) == 3
    import peers_tables as pt

    assert pt.headroom_rows(tmp_path / "rows", ["bbh_word_sorting"]) == []
    assert "| t (smoke) | bbh_word_sorting | 1 |" in "\n".join(hr.headroom_table([row]))


def test_bad_arguments_are_one_line_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = tmp_path / "t.gguf"
    model.write_bytes(b"GGUF")
    base = ["--data-root", str(tmp_path), "--target-model", str(model)]
    docs = str(hr.REPO / "docs" / "headroom")
    for argv, message in (
        ([*base, "--smoke", "2", "--out", docs], "--smoke rows never go under docs/"),
        ([*base, "--smoke", "0"], "--smoke 0: give the number of test items"),
        (["--target-model", str(model)], "--data-root is needed to run"),
        ([*base[:2], "--target-model", "nope.gguf"], "--target-model nope.gguf: no such file"),
        ([*base, "--references", "demos9"], "invalid choice: 'demos9'"),
    ):
        with pytest.raises(SystemExit) as stop:
            hr.parse_args(argv)
        assert stop.value.code == 2
        assert message in capsys.readouterr().err
    assert (
        hr.parse_args([*base, "--smoke", "2"]).out == (hr.REPO / "bench" / "out" / "headroom_smoke").resolve()
    )
    assert hr.parse_args(base).model_label == "t"


def ref(score: float) -> dict[str, Any]:
    return {"score": score, "skill_sha": f"{score}", "target_calls": 32}


def hrow(seed: int, **scores: float) -> dict[str, Any]:
    settings = {"benchmark": "bbh_date", "test_size": 32, "target_model": "q15.gguf (9 bytes)"}
    references = {name.replace("_", "+"): ref(value) for name, value in scores.items()}
    return {
        "model": "q15",
        "benchmark": "bbh_date",
        "seed": seed,
        "settings": settings,
        "references": references,
    }


def test_the_headroom_is_the_best_reference_mean_less_the_empty_skills() -> None:
    import peers_tables as pt

    rows = [
        hrow(0, empty=0.0, rule=0.25, rule_demos3=0.5),
        hrow(1, empty=0.125, rule=0.125, rule_demos3=0.375),
        hrow(2, empty=0.0, rule=0.5, rule_demos3=0.25, demos1=0.75),  # demos1: not every seed has it
    ]
    assert pt.headroom(rows) == (pytest.approx(0.375 - 0.125 / 3), "rule+demos3", pytest.approx(0.125 / 3))
    assert pt.headroom([rows[2]]) == (0.75, "demos1", 0.0)
    assert pt.headroom([{"references": {"rule": ref(0.5)}}]) is None
    lines = hr.headroom_table(rows)
    assert (
        lines[0]
        == "| model | benchmark | seeds | empty | rule | demos1 | rule+demos3 | best | headroom | per seed |"
    )
    assert (
        lines[2]
        == "| q15 | bbh_date | 3 | 0.042 | 0.292 | - | 0.375 | rule+demos3 | +0.333 | 0.50 / 0.25 / 0.75 |"
    )
