"""Issue 41, items 3 and 5: the estimate in words, dollars and minutes (`skillgrad.estimate`,
`--estimate`, `--estimate --json`); a run projected over `budget.max_usd` refused before it
starts; `skillgrad config` naming each role's resolved model; the help of train and eval; a
readable `TrainResult`; a numbered run folder said on stderr to a Python caller who watches
nothing. Against the scripted OpenAI server (which must see no request where nothing is spent)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import skillgrad
from skillgrad.backends import price_tables
from tests.api_world import FactsWorld, facts_server, scripted_config
from tests.fakes.openai_server import ScriptedOpenAI

REPO = Path(__file__).resolve().parents[1]
QUICKSTART = REPO / "configs" / "quickstart.yaml"


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "skillgrad.cli", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=240, cwd=cwd)


@pytest.fixture
def world() -> Iterator[tuple[dict[str, Any], FactsWorld, ScriptedOpenAI]]:
    with facts_server() as made:
        yield made


def priced_config(example: dict[str, Any], server: ScriptedOpenAI, tmp_path: Path, **budget: Any) -> Path:
    """The example's run on the scripted server under model ids with a list price, as YAML."""
    config = scripted_config(example["CONFIG"], server.base_url, tmp_path / "cache")
    config["model"].update(optimizer_model="gpt-4o", target_model="gpt-4o-mini")
    config["benchmark"].update(name="custom", data=str(tasks_file(example, tmp_path)), scorer="contains")
    config["budget"] = budget
    path = tmp_path / "config.yaml"
    path.write_text(json.dumps(config), encoding="utf-8")  # JSON is YAML
    return path


def tasks_file(example: dict[str, Any], tmp_path: Path) -> Path:
    path = tmp_path / "facts.jsonl"
    rows = [
        {"id": t.id, "question": t.question, "answers": list(t.answers)} for t in example["house_tasks"]()
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_the_quickstart_estimate_is_a_summary_and_its_json_the_projection() -> None:
    est = skillgrad.estimate(QUICKSTART)
    assert isinstance(est, skillgrad.Estimate) and str(est) == est.summary()
    lines = est.summary().splitlines()
    assert lines[0].startswith("Estimate for training the skill: 1 epoch(s) of 3 step(s) on 12 train, 12 val")
    assert lines[0].endswith("nothing is spent.") and len(lines) <= 10
    rows = {line.split()[0]: line.split() for line in lines[2:5]}
    assert set(rows) == {"target", "optimizer", "total"}
    packaged = "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert rows["target"][1:3] == ["local", packaged] and rows["optimizer"][1:3] == ["local", packaged]
    assert int(rows["total"][1]) == est.calls == int(rows["target"][3]) + int(rows["optimizer"][3])
    assert rows["total"][-2] == "$0.00" and est.usd == 0.0
    assert "minutes: measured: the packaged SmolLM2-135M on 1 thread (docs/benchmarks.md)" in lines
    assert "dollars: a local model costs nothing" in lines
    # the minutes are the tokens at the measured speed, one call at a time (the model has one slot)
    target = est.as_dict()["by_role"]["target"]
    speed = price_tables.LOCAL_PACKAGED["target"]
    expected = (target["input_tokens"] / speed.prompt_tps + target["output_tokens"] / speed.output_tps) / 60
    assert target["minutes"] == pytest.approx(expected, abs=0.01)
    assert target["speed"]["one_call_at_a_time"] is True and float(rows["target"][-1]) == round(expected, 1)

    page = (REPO / "docs" / "getting-started.md").read_text(encoding="utf-8")
    assert f"```text\n{est.summary()}\n```" in page  # the page shows what the command prints
    shown = cli("train", "--config", str(QUICKSTART), "--estimate")
    assert shown.returncode == 0 and shown.stdout.rstrip("\n") == est.summary(), shown.stderr
    full = cli("train", "--config", str(QUICKSTART), "--estimate", "--json")
    assert full.returncode == 0 and json.loads(full.stdout) == json.loads(json.dumps(est.as_dict()))
    assert {"by_stage", "assumptions", "measured"} <= set(json.loads(full.stdout))
    alone = cli("train", "--config", str(QUICKSTART), "--json")
    assert alone.returncode == 2 and alone.stderr.strip().endswith("skillgrad train --estimate --json")


def test_dollars_come_from_the_price_table_and_a_cap_below_them_refuses_the_run(
    tmp_path: Path, world: Any
) -> None:
    example, _, server = world
    roomy = skillgrad.estimate(priced_config(example, server, tmp_path, max_usd=100))
    by_role = roomy.as_dict()["by_role"]
    for role, model in (("target", "gpt-4o-mini"), ("optimizer", "gpt-4o")):
        usage, (usd_in, usd_out) = by_role[role], price_tables.OPENAI_PER_MTOK[model]
        assert usage["model"] == model and usage["model_from"] == f"model.{role}_model"
        cost = (usage["input_tokens"] * usd_in + usage["output_tokens"] * usd_out) / 1e6
        assert usage["usd"] == pytest.approx(cost, abs=1e-4) and usage["usd"] > 0
        assert usage["speed"]["source"].startswith("assumed")
    assert roomy.usd == pytest.approx(by_role["target"]["usd"] + by_role["optimizer"]["usd"], abs=1e-4)
    summary = roomy.summary()
    assert "gpt-4o-mini $0.15 / $0.6" in summary and "gpt-4o $2.5 / $10" in summary
    assert "is within budget.max_usd=100" in summary and "minutes: assumed" in summary

    cap = roomy.usd / 2  # half the projection
    config = priced_config(example, server, tmp_path, max_usd=cap)
    assert "exceeds budget.max_usd" in skillgrad.estimate(config).summary()
    with pytest.raises(skillgrad.UserError) as refused:
        skillgrad.train(config, out=tmp_path / "run")
    line = str(refused.value)
    assert line.startswith(f"budget.max_usd={cap:g}: the run is projected to cost $") and "\n" not in line
    assert "raise budget.max_usd" in line and "budget.refuse_over_estimate=false" in line
    proc = cli("train", "--config", str(config), "--out", str(tmp_path / "run"))
    assert proc.returncode == 2 and proc.stderr == f"skillgrad: error: {line}\n" and not proc.stdout
    assert not (tmp_path / "run").exists() and not server.requests  # nothing written, nothing paid

    # let the cap stop it instead: the run starts, pays up to the cap and stops at a safe point
    tiny = priced_config(example, server, tmp_path, max_usd=1e-5, refuse_over_estimate=False)
    result = skillgrad.train(tiny, out=tmp_path / "run")
    assert result.stopped == "budget" and server.requests and (tmp_path / "run" / "summary.json").is_file()


def test_an_unpriced_model_is_said_and_not_refused(tmp_path: Path, world: Any) -> None:
    example, _, server = world
    config = scripted_config(example["CONFIG"], server.base_url, tmp_path / "cache")  # fake model ids
    config["benchmark"].update(name="custom", data=str(tasks_file(example, tmp_path)), scorer="contains")
    config["budget"] = {"max_usd": 0.0001}
    est = skillgrad.estimate(config)
    assert est.usd is None and est.as_dict()["by_role"]["target"]["usd"] is None
    summary = est.summary()
    assert (
        "no list price for target: fake-target on openai_chat, optimizer: fake-optimizer on openai_chat"
        in summary
    )
    assert "budget.max_usd=0.0001 caps the priced calls only" in summary
    result = skillgrad.train(config, out=tmp_path / "run")  # nothing to refuse it with
    assert result.steps > 0


def test_config_names_each_roles_resolved_model_after_the_json() -> None:
    proc = cli(
        "config",
        "--config",
        str(QUICKSTART),
        "--backend",
        "openai_chat",
        "--set",
        "model.target_model=gpt-4o",
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["model"]["optimizer_model"] is None  # the JSON stays the config
    assert proc.stderr.splitlines() == [
        "skillgrad: optimizer: openai_chat, model gpt-4o-mini (the backend's default: "
        "model.optimizer_model is null); $0.15 / $0.6 per 1M tokens in / out",
        "skillgrad: target: openai_chat, model gpt-4o (model.target_model); "
        "$2.5 / $10 per 1M tokens in / out",
    ]
    local = cli("config", "--config", str(QUICKSTART), "--target-backend", "claude_code_exec")
    assert local.stderr.splitlines() == [
        "skillgrad: optimizer: local, model SmolLM2-135M-Instruct.Q4_1.gguf (the packaged default: "
        "model.local_model is null); free (runs here)",
        "skillgrad: target: claude_code_exec, model the claude CLI's default (model.target_model is null); "
        "no list price known",
    ]


@pytest.mark.parametrize("command", ["train", "eval"])
def test_train_and_eval_help_say_what_they_do_with_examples(command: str) -> None:
    proc = cli(command, "--help")
    assert proc.returncode == 0
    head, _, examples = proc.stdout.partition("\nexamples:\n")
    assert ("Train a skill" if command == "train" else "Score one skill") in head
    shown = [line.split("#")[0].strip() for line in examples.splitlines() if line.startswith("  skillgrad ")]
    assert len(shown) >= 3 and all(line.startswith(f"skillgrad {command} ") for line in shown)
    for line in shown:  # every example's flags are the command's own
        assert all(
            flag in proc.stdout.split("examples:")[0] for flag in line.split() if flag.startswith("--")
        )


def test_a_train_result_reads_in_a_few_lines_and_a_numbered_folder_is_said(
    tmp_path: Path, world: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    example, _, server = world
    config = scripted_config(example["CONFIG"], server.base_url, tmp_path / "cache")
    kwargs: dict[str, Any] = {"benchmark": example["house_tasks"](), "scorer": example["score"]}
    first = skillgrad.train(config, out=tmp_path / "run", **kwargs)
    assert capsys.readouterr().err == ""  # a fresh folder: nothing to say
    shown = repr(first).splitlines()
    assert len(shown) == 5, shown
    assert shown[0] == (
        f"TrainResult: val {first.baseline_val:.3f} -> {first.best_val:.3f} ({first.val_gain:+.3f}), "
        f"test {first.baseline_test:.3f} -> {first.best_test:.3f} ({first.test_gain:+.3f})"
    )
    assert shown[1].startswith(
        f"  {first.steps} step(s): {first.accepted} accepted, {first.rejected} rejected"
    )
    assert shown[2].startswith(
        f"  paid: {first.usage.total.calls} calls, {first.usage.total.total_tokens} tokens"
    )
    assert shown[3] == f"  best skill: {first.best_version}, {len(first.best_skill.text)} chars"
    assert shown[4] == f"  run folder: {tmp_path / 'run'}"
    evaluated = skillgrad.evaluate(config, first.best_skill, out=tmp_path / "eval", **kwargs)
    assert repr(evaluated).startswith(f"EvalResult: test mean score {evaluated.mean_score:.3f} over ")
    assert len(repr(evaluated).splitlines()) == 2

    second = skillgrad.train(config, out=tmp_path / "run", **kwargs)  # the default printer says it
    assert second.run_dir == tmp_path / "run-2"
    said = capsys.readouterr()
    assert said.err == "" and f"this run writes to {tmp_path / 'run-2'}" in said.out
    third = skillgrad.train(config, out=tmp_path / "run", quiet=True, **kwargs)  # no observer: stderr
    assert third.run_dir == tmp_path / "run-3"
    err = capsys.readouterr().err.splitlines()
    assert err == [f"skillgrad: {tmp_path / 'run'} holds an earlier run (`--resume {tmp_path / 'run'}` "
                   f"continues it); this run writes to {tmp_path / 'run-3'}"]  # fmt: skip
    events: list[skillgrad.Event] = []
    skillgrad.train(config, out=tmp_path / "run", observers=[events.append], **kwargs)
    assert capsys.readouterr().err == "" and "this run writes to" in events[0].fields["text"]
