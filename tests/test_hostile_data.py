"""Issue 12, defect 3: a lone surrogate (the JSON escape "\\ud800") in a model reply, a data file or
an optimizer edit neither crashes a run nor defeats the cache. Real CLI, scripted OpenAI server."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from skillgrad.text import clean_json, clean_text
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
    data = tmp_path / "items.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")  # ASCII escapes
    assert "\\ud800" in data.read_text(encoding="utf-8")
    lines = [
        "benchmark:", "  name: qa", f"  data: {data}", "  train_size: 2", "  val_size: 2", "  test_size: 0",
        "model:", "  backend: openai_chat", f"  base_url: {server.base_url}", "  api_key: sk-surrogate-0",
        "  optimizer_model: fake-optimizer", "  target_model: fake-target",
        "train:", "  epochs: 1", "  batch_size: 2", "  minibatch_size: 2", "  concurrency: 2",
        "optimizer:", "  learning_rate: 2", "  min_learning_rate: 1",
        "cache:", f"  dir: {tmp_path / 'cache'}",
    ]  # fmt: skip
    path = tmp_path / "config.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


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
