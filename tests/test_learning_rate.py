"""The textual learning rate is a ceiling: no schedule applies more edits in a step than
`optimizer.learning_rate`, whatever `optimizer.min_learning_rate` says (issue 37, item 8)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skillgrad.config import config_from_data
from skillgrad.config.sections import OptimizerConfig
from skillgrad.errors import UserError
from skillgrad.loop.selection import SCHEDULES
from tests.fakes.openai_server import Request, ScriptedOpenAI, json_reply, text
from tests.test_train_e2e import history, is_optimizer, read_json, skillgrad, target_answer, write_config


def test_a_low_rate_alone_brings_the_default_floor_down() -> None:
    assert OptimizerConfig(learning_rate=1).min_learning_rate == 1
    assert OptimizerConfig(learning_rate=3).min_learning_rate == 2
    assert OptimizerConfig().min_learning_rate == 2
    cfg = config_from_data({}, "config.yaml", ["optimizer.learning_rate=1"])
    assert (cfg.optimizer.learning_rate, cfg.optimizer.min_learning_rate) == (1, 1)
    # What config.json keeps reads back the same (a resumed run compares it key by key).
    again = config_from_data(cfg.to_json(), "config.json")
    assert again.optimizer.min_learning_rate == 1


@pytest.mark.parametrize(
    ("data", "overrides", "source"),
    [
        ({"optimizer": {"learning_rate": 1, "min_learning_rate": 2}}, [], "config.yaml"),
        ({"optimizer": {"min_learning_rate": 5}}, [], "config.yaml"),
        ({}, ["optimizer.min_learning_rate=6"], "--set optimizer.min_learning_rate=6"),
    ],
)
def test_a_floor_above_the_rate_is_a_one_line_error(data: dict, overrides: list[str], source: str) -> None:
    with pytest.raises(UserError) as raised:
        config_from_data(data, "config.yaml", overrides)
    message = str(raised.value)
    assert "\n" not in message and message.startswith(f"{source}: optimizer.min_learning_rate:")
    assert (
        "must be at most optimizer.learning_rate" in message and "lower it or raise learning_rate" in message
    )


@pytest.mark.parametrize("name", sorted(SCHEDULES))
@pytest.mark.parametrize(("high", "low"), [(1, 2), (2, 5), (3, 3), (4, 2)])
def test_no_schedule_exceeds_the_rate(name: str, high: int, low: int) -> None:
    schedule = SCHEDULES[name]
    rates = [schedule(step, 9, high, low) for step in range(1, 10)]
    assert max(rates) <= high and min(rates) >= min(low, high)
    assert rates[0] == high


def test_the_cli_refuses_a_floor_above_the_rate(tmp_path: Path) -> None:
    proc = skillgrad("config", "--set", "optimizer.learning_rate=1", "--set", "optimizer.min_learning_rate=2")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1 and "optimizer.min_learning_rate" in proc.stderr


RULES = ["Reply with the city name only.", "Never add a sentence.", "Drop any hedging words."]


def test_learning_rate_one_applies_one_edit_a_step(tmp_path: Path) -> None:
    """The analyst proposes three edits each step; `learning_rate: 1` alone (the floor left at
    its default) applies one a step, at every point of the cosine schedule."""

    def handler(request: Request):
        if is_optimizer(request):
            edits = [{"op": "add", "target": "end", "content": r, "rationale": "extra words"} for r in RULES]
            return json_reply({"edits": edits}, usage=(300, 40))
        return text(target_answer(request), 20, 8)

    with ScriptedOpenAI(handler) as server:
        cfg = write_config(tmp_path, server, batch_size=2, minibatch_size=2, epochs=2)
        lines = [ln for ln in cfg.read_text(encoding="utf-8").splitlines() if "min_learning_rate" not in ln]
        cfg.write_text("\n".join(lines).replace("learning_rate: 2", "learning_rate: 1") + "\n")
        out = tmp_path / "run"
        # form_fix=rule: worked examples, outside the learning rate, stay out of the count
        proc = skillgrad("train", "--config", str(cfg), "--out", str(out), "--set", "optimizer.form_fix=rule")
        assert proc.returncode == 0, proc.stderr
    assert read_json(out / "config.json")["optimizer"]["min_learning_rate"] == 1
    steps = history(out)
    assert len(steps) >= 2
    for record in steps:
        assert record["learning_rate"] == 1
        assert sum(1 for e in record["edits"] if e["status"] == "applied") <= 1
    for merged in sorted((out / "steps").glob("*/merged_patch.json")):
        assert len(json.loads(merged.read_text(encoding="utf-8"))["selected"]) <= 1
