"""Throttling bursts, timeouts, hostile task ids, and a large concurrent eval."""

from __future__ import annotations

import json
import random
import threading
from pathlib import Path

from tests.fakes.openai_server import Request, ScriptedOpenAI, Text, rate_limited, server_error, text
from tests.test_train_e2e import GOOD_RULE, skillgrad, world, write_config


def test_bursts_of_429_500_and_timeouts_do_not_stop_the_run(tmp_path: Path) -> None:
    rng, lock, seen = random.Random(7), threading.Lock(), {"faults": 0}
    good = world(GOOD_RULE)

    def flaky(request: Request):
        with lock:
            roll = rng.random()
            # At most 2 faults in a row per request keeps every call within its 3 retries.
            fault = roll < 0.45 and seen["faults"] < 2
            seen["faults"] = seen["faults"] + 1 if fault else 0
        if fault:
            if roll < 0.15:
                return rate_limited()
            if roll < 0.30:
                return server_error(503)
            return Text("too late", delay_s=1.5)  # the client times out at 0.5 s and retries
        return good(request)

    with ScriptedOpenAI(flaky) as server:
        cfg, out = write_config(tmp_path, server), tmp_path / "run"
        proc = skillgrad("train", "--config", str(cfg), "--out", str(out), "--set", "model.timeout_s=0.5")
        assert proc.returncode == 0, proc.stderr
        assert len(server.requests) > 20  # faults happened and were retried
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["accepted"] == 1 and summary["best_val_score"] == 1.0


def test_hostile_task_ids_stay_inside_the_run_folder(tmp_path: Path) -> None:
    hostile = ["../../escape", "/etc/passwd-x", "a\u0000b", "..", "nested/../../up", "CON"]
    data = tmp_path / "capitals.jsonl"
    with ScriptedOpenAI(world(GOOD_RULE)) as server:
        cfg = write_config(tmp_path, server)
        rows = [
            {"id": h, "question": "What is the capital of France?", "answers": ["Paris"]} for h in hostile
        ]
        data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        out = tmp_path / "deep" / "run"
        cfg.write_text(
            cfg.read_text()
            .replace("val_size: 4", "val_size: 6")
            .replace("train_size: 4", "train_size: 0")
            .replace("test_size: 2", "test_size: 0")
        )
        skill = tmp_path / "s.md"
        skill.write_text(GOOD_RULE, encoding="utf-8")
        proc = skillgrad(
            "eval", "--config", str(cfg), "--skill", str(skill), "--split", "val", "--out", str(out)
        )
        assert proc.returncode == 0, proc.stderr
    assert not (tmp_path / "escape").exists() and not (tmp_path / "deep" / "escape").exists()
    folders = [p for p in (out / "rollouts" / "val").iterdir()]
    assert len(folders) == len(hostile) == len({p.name for p in folders})
    for folder in folders:
        assert folder.resolve().parent == (out / "rollouts" / "val").resolve()
        assert "\x00" not in folder.name and not folder.name.startswith(".")
    ids = sorted(json.loads((f / "task.json").read_text())["meta"].get("source_id", "") for f in folders)
    assert ids == sorted(hostile)


def test_two_thousand_task_eval_at_concurrency_32(tmp_path: Path) -> None:
    n = 2000
    data = tmp_path / "capitals.jsonl"

    def answer(request: Request):
        return text("Paris" if "France" in request.user else "Rome")

    with ScriptedOpenAI(answer) as server:
        cfg = write_config(tmp_path, server)
        rows = [
            {
                "id": f"t{i:05d}",
                "question": f"What is the capital of {'France' if i % 2 else 'Italy'}? ({i})",
                "answers": ["Paris" if i % 2 else "Rome"],
            }
            for i in range(n)
        ]
        data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        text_cfg = (
            cfg.read_text().replace("val_size: 4", f"val_size: {n}").replace("train_size: 4", "train_size: 0")
        )
        cfg.write_text(
            text_cfg.replace("test_size: 2", "test_size: 0").replace("concurrency: 2", "concurrency: 32")
        )
        skill = tmp_path / "s.md"
        skill.write_text("Answer with the city only.", encoding="utf-8")
        out = tmp_path / "eval"
        proc = skillgrad(
            "eval", "--config", str(cfg), "--skill", str(skill), "--split", "val", "--out", str(out)
        )
        assert proc.returncode == 0, proc.stderr
        assert len(server.requests) == n
    report = json.loads((out / "eval.json").read_text(encoding="utf-8"))
    assert report["n"] == n and report["mean_score"] == 1.0
    scored = sorted(p.parent.name for p in (out / "rollouts" / "val").glob("*/score.json"))
    assert scored == [f"t{i:05d}" for i in range(n)]
