"""Issue 12, defect 3: a lone surrogate (the JSON escape "\\ud800") in a model reply, a data file or
an optimizer edit neither crashes a run nor defeats the cache. Real CLI, scripted OpenAI server."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from skillgrad.text import clean_json, clean_text
from tests import e2e_config
from tests.e2e_config import one_epoch_lines, qa_lines, write_jsonl
from tests.fakes.openai_server import Request, ScriptedOpenAI, json_reply, text

LONE = "\ud800"
RULE = f"Reply with the city only {LONE}."


def handler(request: Request):  # type: ignore[no-untyped-def]
    if "You improve a SKILL document" in request.system:
        edit = {"op": "add", "target": "", "content": RULE, "rationale": f"odd {LONE} text"}
        return json_reply({"edits": [edit]}, usage=(100, 20))
    return text(f"Paris {LONE} maybe", 20, 5)


def write_config(tmp_path: Path, server: ScriptedOpenAI) -> Path:
    rows = [
        {
            "id": f"q{i}{LONE if i == 0 else ''}",
            "question": f"Capital of France{LONE}? ({i})",
            "answers": ["Paris"],
        }
        for i in range(4)
    ]
    data = write_jsonl(tmp_path / "items.jsonl", rows)  # ASCII escapes
    assert "\\ud800" in data.read_text(encoding="utf-8")
    lines = [
        *qa_lines(data, 2, seed=None),
        "model:", "  backend: openai_chat", f"  base_url: {server.base_url}", "  api_key: sk-surrogate-0",
        "  optimizer_model: fake-optimizer", "  target_model: fake-target",
        *one_epoch_lines(2, tmp_path / "cache"),
    ]  # fmt: skip
    return e2e_config.write_config(tmp_path, lines)


def train(config: Path, out: Path) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "skillgrad.cli", "train", "--config", str(config), "--out", str(out)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=240)


def test_lone_surrogates_in_replies_data_and_edits_complete_a_train_run(tmp_path: Path) -> None:
    with ScriptedOpenAI(handler) as server:
        config = write_config(tmp_path, server)
        first = train(config, tmp_path / "run1")
        paid = len(server.requests)
        second = train(config, tmp_path / "run2")  # same cache: every call was stored, none re-paid
        repaid = len(server.requests) - paid
    assert first.returncode == 0, first.stderr[-2000:]
    assert "Traceback" not in first.stderr + second.stderr
    assert second.returncode == 0, second.stderr[-2000:]
    assert paid > 0 and repaid == 0
    out = tmp_path / "run1"
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["steps"] == 1
    answers = [p.read_text(encoding="utf-8") for p in out.rglob("answer.txt")]
    assert answers and all(a.strip() == "Paris \ufffd maybe" for a in answers)
    assert "\ufffd" in (out / "steps" / "0001" / "candidate_skill.md").read_text(encoding="utf-8")
    for path in out.rglob("*"):
        if path.is_file():
            body = path.read_bytes().decode("utf-8")  # strict: every file is valid UTF-8
            if path.suffix == ".json":
                json.loads(body)


def test_clean_text_keeps_valid_text_and_pairs() -> None:
    assert clean_text("plain é 😀") == "plain é 😀"
    assert clean_text("a\ud800b\udfffc") == "a\ufffdb\ufffdc"
    assert clean_text("\ud83d\ude00") == "😀"  # a valid pair, as two code units, is joined
    assert clean_json({"k\ud800": ["v\udc00", 1, None]}) == {"k\ufffd": ["v\ufffd", 1, None]}


def test_a_full_disk_is_one_line_and_leaves_nothing_corrupt(tmp_path: Path) -> None:
    """Issue 12, defect 12: a write that fails (here: past RLIMIT_FSIZE, like a full disk) ends the
    run with one line and an error summary when it fits, no traceback, every file whole."""
    import resource
    import signal

    def limited() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000))

    with ScriptedOpenAI(lambda request: text("long answer " * 3000, 20, 5)) as server:
        config = write_config(tmp_path, server)
        out = tmp_path / "run"
        cmd = [sys.executable, "-m", "skillgrad.cli", "train", "--config", str(config), "--out", str(out)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=240, preexec_fn=limited)
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    first = proc.stderr.strip().splitlines()[0]
    assert first.startswith("skillgrad: training failed:") and "File too large" in first
    assert "answer.txt" in first
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["stopped"] == "error"
    for path in out.rglob("*"):
        if path.is_file() and path.suffix == ".json":
            json.loads(path.read_text(encoding="utf-8"))


def test_an_empty_answer_in_the_data_is_refused(tmp_path: Path) -> None:
    """Issue 12, defect 12: `answers: [""]` would score an empty reply as correct."""
    import pytest

    from skillgrad.benchmarks.catalog import load_benchmark
    from skillgrad.config import Config
    from skillgrad.errors import UserError

    data = tmp_path / "items.jsonl"
    data.write_text(
        json.dumps({"id": "a", "question": "Q?", "answers": ["ok", " "]}) + "\n", encoding="utf-8"
    )
    cfg = Config.model_validate(
        {"benchmark": {"name": "qa", "data": str(data), "train_size": 0, "val_size": 1}}
    )
    with pytest.raises(UserError, match=r"items.jsonl:1: field 'answers' holds an empty answer"):
        load_benchmark(cfg).load("val")


def test_text_after_a_nested_protected_region_stays_protected() -> None:
    """Issue 12, defect 12: a region nested in another ends with the OUTER close."""
    from skillgrad.skilldoc import Edit, SkillDoc

    text = (
        "intro\n<!-- protected -->\nouter A\n<!-- protected -->\ninner B\n<!-- /protected -->\n"
        "outer C keep\n<!-- /protected -->\nfree D\n"
    )
    doc = SkillDoc(text)
    _, outcomes = doc.apply(
        [
            Edit("replace", "outer C keep", "changed", "r"),
            Edit("replace", "free D", "free E", "r"),
        ],
        8000,
    )
    assert [o.status for o in outcomes] == ["skipped", "applied"]
    assert doc.protected_spans() == [(text.index("<!-- protected -->"), text.index("free D") - 1)]


def test_a_plain_folder_for_mlflow_is_refused_up_front_with_the_fix(tmp_path: Path) -> None:
    """Issue 12, defect 12: MLflow 3 refuses a folder store unless MLFLOW_ALLOW_FILE_STORE=true;
    the run says so before it starts instead of failing later."""
    import os

    with ScriptedOpenAI(handler) as server:
        config = write_config(tmp_path, server)
        extra = ["--set", "tracking.mlflow=true", "--set", f"tracking.mlflow_uri={tmp_path / 'mlruns'}"]
        env = {k: v for k, v in os.environ.items() if k != "MLFLOW_ALLOW_FILE_STORE"}
        cmd = [sys.executable, "-m", "skillgrad.cli", "train", "--config", str(config)]
        proc = subprocess.run([*cmd, "--out", str(tmp_path / "run"), *extra], capture_output=True,
                              text=True, timeout=240, env=env)  # fmt: skip
        assert not server.requests  # nothing was paid
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "MLFLOW_ALLOW_FILE_STORE=true" in proc.stderr and "sqlite:///" in proc.stderr
    assert not (tmp_path / "run").exists()
