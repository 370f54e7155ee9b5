"""Issue 32, defect 7: an observer that fails is reported once (which one, why) and the run goes on.

In process: an observer that raises on every event is named once, the others get every event and
the note. End to end: `skillgrad train` with MLflow tracking whose server goes away after the run
started (it answered the start-up check): one warning line, the run completes, train.log says so.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from skillgrad.loop.event_bus import Events
from tests.fakes.local_http import JsonHandler, LocalServer
from tests.fakes.openai_server import ScriptedOpenAI
from tests.needs import need_module
from tests.test_train_e2e import GOOD_RULE, world, write_config


class Recording:
    name = "recorder"

    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []

    def event(self, kind: str, fields: dict[str, Any]) -> None:
        self.events.append((kind, dict(fields)))

    def close(self) -> None:
        self.events.append(("closed", {}))


class Crashing:
    def event(self, kind: str, fields: dict[str, Any]) -> None:
        raise ValueError(f"cannot draw {kind}")

    def close(self) -> None:
        raise RuntimeError("and cannot close either")


def test_a_failing_observer_is_named_once_and_the_others_go_on() -> None:
    said: list[str] = []
    good = Recording()
    bus = Events([Crashing(), good], on_failure=said.append)
    for step in range(1, 6):
        bus.emit("step_end", step=step)
    bus.close()
    assert len(said) == 1, said
    assert said[0].startswith(
        "progress observer Crashing failed on a step_end event (ValueError: cannot draw"
    )
    assert said[0].endswith("it is switched off, the run goes on")
    kinds = [kind for kind, _ in good.events]
    assert kinds == ["message", "step_end", "step_end", "step_end", "step_end", "step_end", "closed"]
    assert good.events[0][1]["text"] == said[0]  # train.log (an observer) keeps the note too


def test_an_observer_that_fails_only_when_closing_is_named_too() -> None:
    class FailsOnClose(Recording):
        def close(self) -> None:
            raise OSError("disk full")

    said: list[str] = []
    bus = Events([FailsOnClose()], on_failure=said.append)
    bus.emit("run_start")
    bus.close()
    assert said == [
        "progress observer recorder failed when closing (OSError: disk full); "
        "it is switched off, the run goes on"
    ]


class MlflowGoneAway(JsonHandler):
    """Answers skillgrad's start-up check of the store, then fails every call (an outage)."""

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        if self.route().endswith("/experiments/search"):
            self.send_body(200, "application/json", json.dumps({"experiments": []}).encode(), {})
        else:
            self.send_body(503, "application/json", b'{"error_code": "TEMPORARILY_UNAVAILABLE"}', {})

    def do_POST(self) -> None:  # noqa: N802
        self.read_json_object()
        if self.route().endswith("/experiments/search"):
            self.send_body(200, "application/json", json.dumps({"experiments": []}).encode(), {})
        else:
            self.send_body(503, "application/json", b'{"error_code": "TEMPORARILY_UNAVAILABLE"}', {})


def test_an_mlflow_outage_is_one_warning_and_the_run_completes(tmp_path: Path) -> None:
    need_module("mlflow", "pip install 'skillgrad[tracking]'")
    mlflow = LocalServer(MlflowGoneAway, "fake-mlflow")
    try:
        with ScriptedOpenAI(world(GOOD_RULE)) as server:
            cfg = write_config(tmp_path, server)
            out = tmp_path / "run"
            env = {**os.environ, "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0", "MLFLOW_HTTP_REQUEST_TIMEOUT": "10"}
            proc = subprocess.run(
                [sys.executable, "-m", "skillgrad.cli", "train", "--config", str(cfg), "--out", str(out),
                 "--set", "tracking.mlflow=true", "--set", f"tracking.mlflow_uri=http://127.0.0.1:{mlflow.port}"],
                capture_output=True, text=True, timeout=240, env=env,
            )  # fmt: skip
    finally:
        mlflow.stop()
    assert proc.returncode == 0, proc.stderr[-3000:]
    warnings = [line for line in proc.stderr.splitlines() if line.startswith("skillgrad: warning:")]
    assert len(warnings) == 1, proc.stderr
    assert "progress observer MLflow tracking failed on a run_start event" in warnings[0]
    assert "switched off, the run goes on" in warnings[0] and "Traceback" not in proc.stderr
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["stopped"] in ("completed", "no_headroom") and summary["best_val_score"] == 1.0
    assert "MLflow tracking failed" in (out / "train.log").read_text(encoding="utf-8")


@pytest.mark.parametrize("crash_on", ["run_start", "step_end"])
def test_the_progress_replay_fails_with_a_display_that_crashes(crash_on: str) -> None:
    """What tests/test_progress.py's replay now does with an observer error: fail, not switch off."""
    from tests.test_progress import _replay

    class CrashesOn(Recording):
        name = "crashing display"

        def event(self, kind: str, fields: dict[str, Any]) -> None:
            if kind == crash_on:
                raise KeyError(kind)
            super().event(kind, fields)

    with pytest.raises(AssertionError, match=f"crashing display failed on a {crash_on} event"):
        _replay([CrashesOn()], [("run_start", {}), ("step_end", {"step": 1})])
