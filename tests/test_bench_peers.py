"""bench/vs_peers.py's helpers: the router (one address, two upstreams, caps, counts), the tables and
sign test, the learning table's headroom share, stored rows and their reuse, the SearchQA context
cut, the budget, a kept row of other settings; and skillgrad's side of the bench end to end
against scripted OpenAI servers behind the router (DSPy's side: tests/test_bench_dspy.py)."""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from openai import OpenAI

from tests.fakes.openai_server import Request, ScriptedOpenAI, Text, json_reply, text

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import peers_bench as pb  # noqa: E402
import peers_server as ps  # noqa: E402
import peers_systems  # noqa: E402
import peers_tables as pt  # noqa: E402
import vs_peers  # noqa: E402

pytestmark = pytest.mark.timeout(120)

GOOD_RULE = "Answer with the number alone, in digits."


def row(system: str, seed: int, before: float, after: float, **extra: Any) -> dict[str, Any]:
    return {
        "benchmark": "bbh_count",
        "seed": seed,
        "system": system,
        "budget": 48,
        "baseline_val": 0.25,
        "best_val": 0.5,
        "test_before": before,
        "test_after": after,
        "target_calls": 48,
        "optimizer_calls": 3,
        "target_tokens": 9000,
        "optimizer_tokens": 4000,
        "wall_s": 200.0,
        "settings": {"benchmark": "bbh_count", "target_cap": 128},
        **extra,
    }


def test_usage_tells_test_calls_from_the_search_and_counts_tokens() -> None:
    calls = [
        ps.Call("target", 100, 5, "## Question\nHow many apples?"),
        ps.Call("target", 80, 3, "How many pears?\n\nReply with the answer only."),
        ps.Call("optimizer", 900, 120, "Analyse these tasks"),
    ]
    counted = ps.usage(calls, ["How many pears?", ""])
    assert counted == {
        "target_calls": 1,
        "optimizer_calls": 1,
        "test_calls": 1,
        "target_tokens": 105,
        "optimizer_tokens": 1020,
        "test_tokens": 83,
    }


def test_usage_tells_a_test_question_from_the_train_question_it_is_part_of() -> None:
    # bbh dyck_languages seed 0: test item 42's question is the start of train item 160's
    stem = "Complete the rest of the sequence, making sure that the parentheses are closed properly."
    test_q, train_q = f"{stem} Input: {{ < <", f"{stem} Input: {{ < < [ ] > ( )"
    calls = [
        ps.Call("target", 50, 4, f"{train_q}\n\nReply with the answer only."),
        ps.Call("target", 40, 3, f"{test_q}\n\nReply with the answer only."),
        ps.Call("target", 30, 2, "What is 2 + 2?"),  # both a test and a train item ask it
    ]
    counted = ps.usage(calls, [test_q, "What is 2 + 2?"], [train_q, "What is 2 + 2?"])
    assert (counted["target_calls"], counted["test_calls"]) == (2, 1)
    assert (counted["target_tokens"], counted["test_tokens"]) == (86, 43)
    assert ps.usage(calls[:1], [test_q])["test_calls"] == 1  # what a substring test alone counted


def test_caps_take_the_smaller_budget_of_either_field() -> None:
    assert ps.capped({"max_completion_tokens": 16384, "model": "t"}, 128) == {"model": "t", "max_tokens": 128}
    assert ps.capped({"max_tokens": 40}, 128)["max_tokens"] == 40
    assert ps.capped({}, 128)["max_tokens"] == 128
    parts = {"messages": [{"role": "user", "content": [{"type": "text", "text": "a"}, {"text": "b"}]}]}
    assert ps.last_user(parts) == "a b"
    assert ps.last_user({"messages": [{"role": "system", "content": "s"}]}) == ""


def test_the_router_serves_both_roles_at_one_address_capped_and_counted() -> None:
    with (
        ScriptedOpenAI(lambda r: text("target says 8", 11, 3)) as target,
        ScriptedOpenAI(lambda r: text("optimizer says add a rule", 50, 7)) as optimizer,
    ):
        ports = {"target": int(target.base_url.split(":")[2].split("/")[0])}
        ports["optimizer"] = int(optimizer.base_url.split(":")[2].split("/")[0])
        router = ps.Router(ports, {"target": 64, "optimizer": 256}, timeout_s=30)
        import threading

        threading.Thread(target=router.serve_forever, daemon=True).start()
        try:
            client = OpenAI(base_url=router.base_url, api_key="sk-bench", max_retries=0)
            reply = client.chat.completions.create(
                model="target",
                messages=[{"role": "user", "content": "How many?"}],
                max_completion_tokens=4096,
            )
            assert reply.choices[0].message.content == "target says 8"
            client.chat.completions.create(
                model="optimizer", messages=[{"role": "user", "content": "Fix it"}]
            )
            with pytest.raises(Exception, match="not served here"):
                client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "x"}])
            assert [m.id for m in client.models.list()] == ["target", "optimizer"]
        finally:
            router.shutdown()
            router.server_close()
        assert target.requests[0]["max_tokens"] == 64 and "max_completion_tokens" not in target.requests[0]
        assert optimizer.requests[0]["max_tokens"] == 256
    assert router.log.calls == [ps.Call("target", 11, 3, "How many?"), ps.Call("optimizer", 50, 7, "Fix it")]


def test_a_request_whose_client_left_is_dropped_not_waited_for() -> None:
    """A client that times out (SkillOpt's SDK default is 600 s) leaves; the router shuts the
    upstream connection at once instead of holding it until the reply, and counts no call."""
    import threading
    import time

    with ScriptedOpenAI(lambda r: Text("late", usage=(5, 1), delay_s=float(r.user))) as upstream:
        router = ps.Router({"target": int(upstream.base_url.split(":")[2].split("/")[0])}, {"target": 64}, 30)
        threading.Thread(target=router.serve_forever, daemon=True).start()
        try:
            hasty = OpenAI(base_url=router.base_url, api_key="sk-bench", max_retries=0, timeout=0.5)
            with pytest.raises(Exception, match="timed out"):
                hasty.chat.completions.create(model="target", messages=[{"role": "user", "content": "4"}])
            deadline = time.monotonic() + 3
            while router.log.abandoned == 0 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert router.log.abandoned == 1 and router.log.calls == []
            patient = OpenAI(base_url=router.base_url, api_key="sk-bench", max_retries=0, timeout=10)
            reply = patient.chat.completions.create(
                model="target", messages=[{"role": "user", "content": "0"}]
            )
            assert reply.choices[0].message.content == "late" and len(router.log.calls) == 1
        finally:
            router.shutdown()
            router.server_close()


def test_sign_test_and_tables() -> None:
    assert pt.sign_test([0.1, 0.2, 0.05]) == (3, 0, pytest.approx(0.25))
    assert pt.sign_test([0.0, 0.0]) == (0, 0, 1.0)
    up, down, p = pt.sign_test([0.1, -0.1, 0.0, 0.2])
    assert (up, down) == (2, 1) and p == pytest.approx(1.0)
    rows = [row("gepa", 0, 0.5, 0.5), row("skillgrad", 1, 0.5, 0.75), row("skillgrad", 0, 0.5, 0.625)]
    lines = pt.seed_table(rows)
    assert lines[2].startswith("| bbh_count | 0 | skillgrad | 0.250 | 0.500 | 0.500 -> 0.625 | 48 | 3 |")
    assert [line.split(" | ")[2] for line in lines[2:]] == ["skillgrad", "gepa", "skillgrad"]
    summary = pt.summary_table(rows)
    assert "| mean gain over its own start |" in summary[0]
    assert summary[2] == "| bbh_count | skillgrad | 2 | +0.188 | 2 / 0 | 0.500 | 3.0 | 200 |"
    assert summary[3] == "| bbh_count | gepa | 1 | +0.000 | 0 / 0 | 1.000 | 3.0 | 200 |"


def test_rows_are_written_whole_and_reused_only_with_the_same_settings(tmp_path: Path) -> None:
    stored = tmp_path / "stored"
    pt.write_row(pt.row_path(stored, "bbh_count", 0, "gepa"), row("gepa", 0, 0.5, 0.5))
    assert not list(stored.rglob("*.part"))
    got = pt.read_row(pt.row_path(stored, "bbh_count", 0, "gepa"))
    assert got is not None and got["test_after"] == 0.5
    assert pt.read_row(pt.row_path(stored, "bbh_count", 1, "gepa")) is None
    same = {"benchmark": "bbh_count", "target_cap": 128}
    assert pt.reuse_problem(got, same, 48) is None
    assert pt.reuse_problem(got, same, 60) == "budget 48 there, 60 here"
    assert (
        pt.reuse_problem(got, {**same, "target_cap": 256}, 48) == "settings.target_cap is 128 there, 256 here"
    )

    args = argparse.Namespace(out=tmp_path / "new", reuse=stored, systems=["skillgrad"])
    vs_peers.reuse_rows(args, "bbh_count", 0, same, 48)
    assert pt.read_row(pt.row_path(args.out, "bbh_count", 0, "gepa")) == got
    assert pt.read_row(pt.row_path(args.out, "bbh_count", 0, "skillgrad")) is None
    with pytest.raises(SystemExit, match="bbh_count seed 0 gepa: settings.target_cap"):
        vs_peers.reuse_rows(argparse.Namespace(**{**vars(args), "out": tmp_path / "n2"}), "bbh_count", 0,
                            {**same, "target_cap": 256}, 48)  # fmt: skip


def test_table_only_prints_the_stored_rows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for seed, after in ((0, 0.625), (1, 0.75)):
        pt.write_row(
            pt.row_path(tmp_path, "bbh_count", seed, "skillgrad"), row("skillgrad", seed, 0.5, after)
        )
    assert vs_peers.main(["--table-only", "--out", str(tmp_path), "--benchmarks", "bbh_count"]) == 0
    printed = capsys.readouterr().out
    assert "| bbh_count | 1 | skillgrad |" in printed and "| bbh_count | skillgrad | 2 | +0.188 |" in printed


def test_bad_arguments_are_one_line_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "t.gguf").write_bytes(b"GGUF")
    base = ["--data-root", str(tmp_path), "--target-model", str(tmp_path / "t.gguf")]
    for argv, message in (
        (
            [*base, "--optimizer-model", str(tmp_path / "nope.gguf")],
            "--optimizer-model .*nope.gguf: no such file",
        ),
        (
            [*base, "--optimizer-model", str(tmp_path / "t.gguf"), "--systems", "skillopt"],
            "needs --skillopt-src",
        ),
        (["--target-model", "x.gguf"], "--data-root is needed to run"),
    ):
        with pytest.raises(SystemExit) as exit_info:
            vs_peers.parse_args(argv)
        assert exit_info.value.code == 2
        assert re.search(message, capsys.readouterr().err)


def test_searchqa_contexts_are_cut_at_a_doc_boundary() -> None:
    context = "[DOC] one two three [DOC] four five six [DOC] seven"
    assert pb.cut_context(context, 1000) == context
    assert pb.cut_context(context, 40) == "[DOC] one two three [DOC] four five six "
    assert pb.cut_context("no docs at all here", 5) == "no do"


def bench_args(tmp_path: Path, **extra: Any) -> argparse.Namespace:
    models = {name: tmp_path / f"{name}.gguf" for name in ("t", "o")}
    for path in models.values():
        path.write_bytes(b"GGUF")
    values = {
        "optimizer_cap": 512,
        "ctx": 4096,
        "context_chars": 1500,
        "hotpot_context_chars": 3000,
        "test_size": 32,
        "data_root": tmp_path,
        "work": tmp_path,
    }
    return argparse.Namespace(target_model=models["t"], optimizer_model=models["o"], **{**values, **extra})


def count_items(tmp_path: Path) -> Path:
    fruit = ["apples", "pears", "plums"]
    items = [{"input": f"I have {n} {fruit[n % 3]}. How many fruits?", "target": str(n)} for n in range(60)]
    path = tmp_path / "bbh" / "object_counting.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"examples": items}), encoding="utf-8")
    return path


def test_the_budget_and_settings_of_a_benchmark(tmp_path: Path) -> None:
    args = bench_args(tmp_path)
    spec = vs_peers.BENCHMARKS["bbh_count"]
    config = tmp_path / "config.yaml"
    config.write_text(vs_peers.config_text(spec, count_items(tmp_path), "http://127.0.0.1:1/v1", args))
    assert vs_peers.search_budget(config, []) == 12 + 2 * (6 + 12)
    wanted = vs_peers.settings(spec, "bbh_count", args)
    assert wanted["target_model"] == "t.gguf (4 bytes)" and wanted["context_chars"] is None
    assert wanted["target_cap"] == spec.target_cap and wanted["test_size"] == 32


def world(request: Request):
    if "You improve a SKILL document" in request.system:
        edit = {"op": "add", "target": "", "content": GOOD_RULE, "rationale": "answers carry the noun"}
        return json_reply({"edits": [edit]}, usage=(300, 40))
    n = request.user.split("I have ")[1].split(" ")[0]
    return text(n if GOOD_RULE in request.system else f"{n} fruits", 20, 2)


def test_skillgrad_side_end_to_end_behind_the_router(tmp_path: Path) -> None:
    """`skillgrad train` and `eval` through the router: the row's calls are the servers' calls,
    the search stays within the budget, the test split is touched only by the two evaluations,
    and a skill already evaluated is not evaluated again."""
    with ScriptedOpenAI(world) as target, ScriptedOpenAI(world) as optimizer:
        ports = {
            r: int(s.base_url.split(":")[2].split("/")[0])
            for r, s in (("target", target), ("optimizer", optimizer))
        }
        router = ps.Router(ports, {"target": 64, "optimizer": 512}, timeout_s=30)
        import threading

        threading.Thread(target=router.serve_forever, daemon=True).start()
        try:
            sr = seed_run(tmp_path, router, 64)
            result = peers_systems.run_skillgrad(sr)
            again = peers_systems.test_pair(sr, result["best_skill"])
        finally:
            router.shutdown()
            router.server_close()
    assert result["baseline_val"] == 0.0 and result["best_val"] == 1.0
    assert (result["test_before"], result["test_after"]) == (0.0, 1.0)
    assert GOOD_RULE in result["best_skill"]
    assert result["optimizer_calls"] == len(optimizer.requests) >= 1
    assert result["target_calls"] + result["test_calls"] == len(target.requests)
    assert 12 + 6 + 12 <= result["target_calls"] <= sr.budget
    assert result["test_calls"] == 2 * 32
    assert again[:2] == (0.0, 1.0) and again[3]["test_calls"] == 0  # nothing evaluated twice
    assert result["target_tokens"] == 22 * result["target_calls"]


def peer_row(
    system: str, seed: int, before: float, after: float, model: str = "q15.gguf (9 bytes)"
) -> dict[str, Any]:
    settings = {"benchmark": "bbh_date", "data": "bbh/date_understanding.json", **pb.SIZES}
    settings |= {"target_model": model, "target_cap": 128, "ctx": 4096, "context_chars": None}
    return {**row(system, seed, before, after), "benchmark": "bbh_date", "settings": settings}


def head_row(seed: int, empty: float, best: float) -> dict[str, Any]:
    settings = peer_row("skillgrad", seed, 0, 0)["settings"]
    refs = {"empty": {"score": empty}, "rule+demos3": {"score": best}}
    return {"model": "q15", "benchmark": "bbh_date", "seed": seed, "settings": settings, "references": refs}


def test_the_learning_table_reports_each_systems_share_of_the_headroom_and_sign_tests() -> None:
    head = [head_row(0, 0.0, 0.5), head_row(1, 0.0, 0.25), head_row(2, 0.125, 0.375)]  # headroom 1/3
    rows = [peer_row("skillgrad", s, b, b + 0.25) for s, b in ((0, 0.0), (1, 0.0), (2, 0.125))]
    rows += [peer_row("gepa", s, b, a) for s, b, a in ((0, 0.0, 0.0), (1, 0.0, 0.125), (2, 0.125, 0.5))]
    # DSPy's own zero-shot program starts below the empty skill (its own answer format)
    rows += [peer_row("dspy", 2, 0.0, 0.5), peer_row("skillgrad", 0, 0.0, 0.5, model="q05.gguf (4 bytes)")]
    lines = pt.learning_table(head, rows)
    by_system = {
        line.split(" | ")[0] + "/" + line.split(" | ")[3]: line for line in lines if "bbh_date" in line
    }
    head_cells = "| q15.gguf | bbh_date | 0.333 (rule+demos3) |"
    assert by_system["| q15.gguf/skillgrad"] == (
        f"{head_cells} skillgrad | 3 | +0.250 | 0.75 | 0.042 -> 0.292 | +0.250 | 48.0 | 3.0 "
        "| 3 / 0 (0.250) | - |"
    )
    # skillgrad against GEPA by the score each reached: higher on seeds 0 and 1, lower on seed 2
    assert by_system["| q15.gguf/gepa"].endswith(
        "| gepa | 3 | +0.167 | 0.50 | 0.042 -> 0.208 | +0.167 | 48.0 | 3.0 | 2 / 0 (0.500) | 2 / 1 (1.000) |"
    )
    # its headroom is that of the seed it ran (0.25), not of seeds whose test items it never saw; its
    # gain is over the empty skill's 0.125 on that seed, not over its own start at 0.000
    assert by_system["| q15.gguf/dspy"] == (
        "| q15.gguf | bbh_date | 0.250 (rule+demos3) | dspy | 1 | +0.375 | 1.50 | 0.000 -> 0.500 | +0.500 "
        "| 48.0 | 3.0 | 1 / 0 (1.000) | 0 / 1 (1.000) |"
    )
    # no headroom row for its model: the gain is over the row's own start
    assert by_system["| q05.gguf/skillgrad"].startswith(
        "| q05.gguf | bbh_date | - | skillgrad | 1 | +0.500 | - |"
    )
    bar = lines[lines.index("") + 1 :]
    assert bar[0] == (
        "| target | system | benchmarks with headroom >= 0.10 | mean test gain | mean share "
        "| seed pairs | skillgrad - system, mean | skillgrad better / worse (p) |"
    )
    # skillgrad against each peer over every seed pair: GEPA's three seeds (+0.25, +0.125, -0.125)
    assert bar[2:5] == [
        "| q15.gguf | skillgrad | 1 | +0.250 | 0.75 | - | - | - |",
        "| q15.gguf | gepa | 1 | +0.167 | 0.50 | 3 | +0.083 | 2 / 1 (1.000) |",
        "| q15.gguf | dspy | 1 | +0.375 | 1.50 | 1 | -0.125 | 0 / 1 (1.000) |",
    ]
    assert pt.share(0.1, 0.0) is None and pt.share(0.1, None) is None and pt.share(0.1, 0.2) == 0.5


def on_benchmark(record: dict[str, Any], benchmark: str) -> dict[str, Any]:
    settings = {**record["settings"], "benchmark": benchmark}
    return {**record, "benchmark": benchmark, "settings": settings}


def test_skillgrad_is_compared_with_each_peer_over_the_seeds_of_every_benchmark_with_headroom() -> None:
    # two benchmarks with headroom (0.5 on both) and one without (its references all score 0.25)
    head = [on_benchmark(head_row(s, 0.0, 0.5), b) for b in ("bbh_a", "bbh_b") for s in (0, 1)]
    head += [on_benchmark(head_row(s, 0.25, 0.25), "bbh_flat") for s in (0, 1)]
    scores = {  # (skillgrad, dspy) per benchmark and seed
        "bbh_a": ((0.5, 0.25), (0.5, 0.5)),
        "bbh_b": ((0.75, 0.5), (0.25, 0.5)),
        "bbh_flat": ((0.0, 1.0), (0.0, 1.0)),
    }
    rows = [
        on_benchmark(peer_row(system, seed, 0.0, pair[i]), b)
        for b, seeds in scores.items()
        for seed, pair in enumerate(seeds)
        for i, system in enumerate(("skillgrad", "dspy"))
    ]
    lines = pt.learning_table(head, rows)
    bar = lines[lines.index("") + 1 :]
    # bbh_flat's pairs (DSPy far ahead) are not among them: no headroom there
    assert bar[2:4] == [
        "| q15.gguf | skillgrad | 2 | +0.500 | 1.00 | - | - | - |",
        "| q15.gguf | dspy | 2 | +0.438 | 0.88 | 4 | +0.062 | 2 / 1 (1.000) |",
    ]


def test_the_change_table_pairs_skillgrads_rows_with_earlier_ones_seed_by_seed() -> None:
    before = [peer_row("skillgrad", s, 0.0, a) for s, a in ((0, 0.25), (1, 0.5), (2, 0.25))]
    before += [peer_row("dspy", 0, 0.0, 0.75), peer_row("skillgrad", 3, 0.0, 0.5, model="q05.gguf (4 bytes)")]
    now = [peer_row("skillgrad", s, 0.0, a) for s, a in ((0, 0.5), (1, 0.5), (2, 0.125), (4, 1.0))]
    now += [peer_row("skillgrad", 3, 0.0, 0.75)]  # another target than the earlier seed 3: no pair
    for seed, skill in ((0, "A"), (1, "B"), (2, "C")):  # seeds 0 and 1 end with the skill they had
        before[seed]["best_skill"] = skill
        now[seed]["best_skill"] = skill if seed < 2 else "D"
    now[0]["test_after"] = 0.3125  # the same skill scored again: the served answers moved
    now[1]["commit"] = "e9fc7ae"  # run again, the same skill and score
    before.append(peer_row("skillgrad", 5, 0.0, 0.5))
    now.append(dict(before[-1]))  # copied over unchanged: not a pair
    lines = pt.change_table(now, before)
    assert lines[2:] == [
        "| bbh_date | 3 | 0.333 | 0.312 | -0.021 | 1 / 1 / 1 (1.000) | 2 (1) |",
        "| all | 3 | 0.333 | 0.312 | -0.021 | 1 / 1 / 1 (1.000) | 2 (1) |",
    ]
    assert pt.change_table(now, []) == lines[:2]


def test_a_kept_row_of_other_settings_stops_the_run(tmp_path: Path) -> None:
    args = bench_args(tmp_path, out=tmp_path / "rows", reuse=None, systems=["skillgrad"], set=[], label="")
    count_items(tmp_path)
    wanted = vs_peers.settings(vs_peers.BENCHMARKS["bbh_count"], "bbh_count", args)
    path = pt.row_path(args.out, "bbh_count", 0, "skillgrad")
    pt.write_row(
        path, {**row("skillgrad", 0, 0.5, 0.5), "settings": {**wanted, "target_model": "q05.gguf (1 bytes)"}}
    )
    served = argparse.Namespace(router=ps.Router({}, {}, timeout_s=1))
    try:
        with pytest.raises(
            SystemExit, match=r"seed0/skillgrad\.json: made with other settings \(settings\.target_model"
        ):
            vs_peers.run_seed(args, "bbh_count", 0, served, {})
        pt.write_row(path, {**row("skillgrad", 0, 0.5, 0.5), "settings": wanted})
        vs_peers.run_seed(args, "bbh_count", 0, served, {})  # the same settings: kept, nothing is run
        assert served.router.log.calls == []
    finally:
        served.router.server_close()


def test_a_seed_folder_in_use_by_another_run_stops_this_one(tmp_path: Path) -> None:
    """Two runs of one benchmark and seed in one --work would share its config.yaml, whose
    address names one run's router: the second stops before it writes anything."""
    args = bench_args(tmp_path, out=tmp_path / "rows", reuse=None, systems=["skillgrad"], set=[], label="")
    count_items(tmp_path)
    served = argparse.Namespace(router=ps.Router({}, {}, timeout_s=1))
    work = args.work / "bbh_count" / "seed0"
    try:
        with vs_peers.held(work):
            with pytest.raises(
                SystemExit, match=r"seed0: another bench/vs_peers\.py run is using this folder"
            ):
                vs_peers.run_seed(args, "bbh_count", 0, served, {})
            assert not (work / "config.yaml").exists()
        pt.write_row(
            pt.row_path(args.out, "bbh_count", 0, "skillgrad"),
            {
                **row("skillgrad", 0, 0.5, 0.5),
                "settings": vs_peers.settings(vs_peers.BENCHMARKS["bbh_count"], "bbh_count", args),
            },
        )
        vs_peers.run_seed(args, "bbh_count", 0, served, {})  # released: this run goes on
        assert (work / "config.yaml").exists()
    finally:
        served.router.server_close()


def seed_run(tmp_path: Path, router: Any, target_cap: int) -> Any:
    """The bbh_count seed 0 of the bench, its config at `router` (what a system's runner takes)."""
    args = bench_args(tmp_path)
    spec = vs_peers.BENCHMARKS["bbh_count"]
    config = tmp_path / "config.yaml"
    config.write_text(vs_peers.config_text(spec, count_items(tmp_path), router.base_url, args))
    test = vs_peers.load_benchmark(vs_peers.load_config(config, ["benchmark.seed=0"])).load("test")
    return peers_systems.SeedRun(
        "bbh_count",
        0,
        config,
        tmp_path / "work",
        router.log,
        router.base_url,
        48,
        target_cap,
        (),
        tuple(test),
    )
