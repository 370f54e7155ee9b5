"""MLflow tracking against local stores under tmp_path: params, per-step metrics, artifacts."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from skillgrad.config import Config, TrackingConfig
from skillgrad.errors import UserError
from skillgrad.observe.tracking import EXPERIMENT, flatten, make_tracking_observer, tracking_uri
from tests.report_fixture import make_run, run_events


def _cfg(uri: str | None, base: Path | None = None) -> Config:
    cfg = Config(tracking=TrackingConfig(mlflow=True, mlflow_uri=uri))
    if base is not None:
        cfg.base_dir = base
    return cfg


def _replay(obs: Any, run: Path, *, finish: bool = True) -> None:
    for kind, fields in run_events(run):
        if kind == "run_end" and not finish:
            break
        obs.event(kind, fields)
    obs.close()


def _only_run(client: Any) -> Any:
    experiment = client.get_experiment_by_name(EXPERIMENT)
    runs = client.search_runs([experiment.experiment_id])
    assert len(runs) == 1
    return runs[0]


def test_disabled_tracking_makes_no_observer(tmp_path: Path) -> None:
    assert make_tracking_observer(Config(), tmp_path) is None


def test_missing_mlflow_is_a_user_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mlflow", None)
    monkeypatch.setitem(sys.modules, "mlflow.tracking", None)
    with pytest.raises(UserError, match="pip install"):
        make_tracking_observer(_cfg(None), tmp_path)


def test_uri_paths_resolve_against_the_config_folder(tmp_path: Path) -> None:
    assert tracking_uri(_cfg("mlruns", tmp_path)) == (tmp_path / "mlruns").resolve().as_uri()
    assert tracking_uri(_cfg("sqlite:///x.db")) == "sqlite:///x.db"
    assert tracking_uri(_cfg("http://127.0.0.1:5000")) == "http://127.0.0.1:5000"
    assert tracking_uri(_cfg(None)) is None
    assert flatten({"a": {"b": 1, "c": [1, 2]}, "d": None, "e": "x"}) == {
        "a.b": "1",
        "a.c": "[1, 2]",
        "d": "null",
        "e": "x",
    }


def test_file_store_gets_params_metrics_and_artifacts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mlflow = pytest.importorskip("mlflow", reason="mlflow not installed (pip install 'skillgrad[tracking]')")
    # MLflow >= 3 keeps its file store behind an opt-in; it is still the simplest local store
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    run = make_run(tmp_path)
    cfg = _cfg(str(tmp_path / "mlruns"))
    cfg.train.epochs = 3
    obs = make_tracking_observer(cfg, run)
    assert obs is not None
    _replay(obs, run)
    client = mlflow.tracking.MlflowClient(tracking_uri=(tmp_path / "mlruns").as_uri())
    found = _only_run(client)
    assert found.info.status == "FINISHED"
    assert found.data.params["train.epochs"] == "3"
    assert found.data.params["tracking.mlflow"] == "true"
    assert found.data.tags["mlflow.runName"] == "run"
    rid = found.info.run_id
    val = [(m.step, m.value) for m in client.get_metric_history(rid, "val_score")]
    assert val[0] == (0, 0.2333) and [s for s, _ in val] == list(range(7))
    assert [m.value for m in client.get_metric_history(rid, "best_score")][-1] == 0.8
    assert len(client.get_metric_history(rid, "tokens.optimizer")) == 6
    assert found.data.metrics["final.best_val_score"] == 0.8
    top = {a.path for a in client.list_artifacts(rid)}
    assert {"skills", "best_skill.md", "summary.json", "history.jsonl", "config.json"} <= top
    assert {a.path for a in client.list_artifacts(rid, "skills")} == {
        "skills/v0000.md",
        "skills/v0001.md",
        "skills/v0002.md",
    }


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # MLflow's own SQLAlchemy usage, not ours
def test_sqlite_store_and_a_crashed_run(tmp_path: Path) -> None:
    mlflow = pytest.importorskip("mlflow", reason="mlflow not installed (pip install 'skillgrad[tracking]')")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = mlflow.tracking.MlflowClient(tracking_uri=uri)
    # artifacts under tmp_path too (the default artifact root would be the current directory)
    client.create_experiment(EXPERIMENT, artifact_location=(tmp_path / "artifacts").as_uri())
    run = make_run(tmp_path)
    obs = make_tracking_observer(_cfg(uri), run)
    _replay(obs, run, finish=False)  # no run_end: the trainer died
    found = _only_run(client)
    assert found.info.status == "FAILED"
    assert len(client.get_metric_history(found.info.run_id, "val_score")) == 7
