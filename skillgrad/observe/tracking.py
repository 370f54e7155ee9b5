"""Optional MLflow experiment tracking (`tracking.mlflow: true`), fed by the same progress events.

Logs the flattened config as params, per-step metrics (validation, best and kept score, tokens
and cost by role) and, at run_end, the skill versions and run summary files from the run folder.
MLflow is imported lazily: it is an optional extra (`pip install 'skillgrad[tracking]'`).
It talks through an explicit `MlflowClient`, never mlflow's process-global "active run".
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skillgrad.errors import UserError
from skillgrad.loop.event_bus import Observer
from skillgrad.loop.step_records import StepEnd
from skillgrad.observe.formatting import usage_by_role
from skillgrad.redact import Redactor
from skillgrad.run_folder import RunFiles
from skillgrad.values import Usage

if TYPE_CHECKING:
    from skillgrad.config import Config

EXPERIMENT = "skillgrad"
PARAM_CHARS = 500  # well under MLflow's param value limit; a long value is a path or a prompt
ARTIFACT_FILES = (
    RunFiles.CONFIG,
    RunFiles.SUMMARY,
    RunFiles.HISTORY,
    f"{RunFiles.BEST_SKILL}.md",
    RunFiles.REPORT,
)


def flatten(data: dict[str, Any], prefix: str = "") -> dict[str, str]:
    """Nested config -> {"train.epochs": "2", ...}; lists as JSON, None as "null"."""
    flat: dict[str, str] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            flat.update(flatten(value, f"{name}."))
        else:
            text = value if isinstance(value, str) else json.dumps(value, default=str)
            flat[name] = text[:PARAM_CHARS]
    return flat


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _usage_metrics(raw: Any) -> dict[str, float]:
    metrics: dict[str, float] = {}
    total = Usage()
    for role, usage in usage_by_role(raw).items():
        total = total + usage
        metrics[f"tokens.{role}"] = float(usage.total_tokens)
        if usage.cost_usd is not None:
            metrics[f"cost_usd.{role}"] = float(usage.cost_usd)
    if metrics:
        metrics["tokens.total"] = float(total.total_tokens)
        if total.cost_usd is not None:
            metrics["cost_usd.total"] = float(total.cost_usd)
    return metrics


class MlflowObserver:
    """One MLflow run per training run, created at `run_start` and closed at `run_end`."""

    name = "MLflow tracking"  # in the warning if it fails (loop.event_bus)

    def __init__(self, client: Any, params: dict[str, str], out_dir: Path) -> None:
        self.client = client
        self.params = params
        self.out_dir = out_dir
        self.run_id: str | None = None

    def _start(self, fields: dict[str, Any]) -> None:
        from mlflow.entities import Param, RunTag

        experiment = self.client.get_experiment_by_name(EXPERIMENT)
        experiment_id = experiment.experiment_id if experiment else self.client.create_experiment(EXPERIMENT)
        tags = {"mlflow.runName": self.out_dir.name, "skillgrad.out": str(self.out_dir)}
        for key in ("optimizer_backend", "target_backend"):
            if fields.get(key):
                tags[f"skillgrad.{key}"] = str(fields[key])
        self.run_id = self.client.create_run(experiment_id, tags=tags).info.run_id
        items = [Param(k, v) for k, v in sorted(self.params.items())]
        for i in range(0, len(items), 100):  # MLflow's log_batch takes at most 100 params per call
            self.client.log_batch(self.run_id, params=items[i : i + 100], tags=[RunTag("skillgrad", "1")])

    def _metrics(self, values: dict[str, float | None], step: int) -> None:
        from mlflow.entities import Metric

        if self.run_id is None:
            return
        stamp = _now_ms()
        metrics = [Metric(k, v, stamp, step) for k, v in values.items() if v is not None]
        if metrics:
            self.client.log_batch(self.run_id, metrics=metrics)

    def event(self, kind: str, fields: dict[str, Any]) -> None:
        if kind == "run_start":
            self._start(fields)
        elif kind == "stage_end" and fields.get("stage") == "baseline":
            score = _num(fields.get("mean_score"))
            self._metrics({"val_score": score, "best_score": score, "current_score": score}, 0)
        elif kind == "step_end":
            end = StepEnd.from_json(fields)
            values: dict[str, float | None] = {
                "val_score": end.val_score,
                "best_score": end.best_score,
                "current_score": end.current_score,
                "accepted": 1.0 if end.action == "accepted" else 0.0,
                "edits_applied": float(end.edits_applied),
            }
            self._metrics({**values, **_usage_metrics(end.usage)}, end.step)
        elif kind == "run_end":
            self._finish(fields)

    def _finish(self, fields: dict[str, Any]) -> None:
        if self.run_id is None:
            return
        summary = _read_json(self.out_dir / RunFiles.SUMMARY)
        test = summary.get("test")
        test = test if isinstance(test, dict) else {}
        step = int(summary.get("steps") or 0)
        self._metrics(
            {
                "final.baseline_val_score": _num(fields.get("baseline_score")),
                "final.best_val_score": _num(fields.get("best_score")),
                "final.test_baseline": _num(test.get("baseline")),
                "final.test_best": _num(test.get("best")),
                **{f"final.{k}": v for k, v in _usage_metrics(fields.get("usage")).items()},
            },
            step,
        )
        if fields.get("stopped"):
            self.client.set_tag(self.run_id, "skillgrad.stopped", str(fields["stopped"]))
        self._artifacts()
        self.client.set_terminated(self.run_id, "FINISHED")
        self.run_id = None

    def _artifacts(self) -> None:
        assert self.run_id is not None
        skills = self.out_dir / RunFiles.SKILLS
        if skills.is_dir():
            self.client.log_artifacts(self.run_id, str(skills), RunFiles.SKILLS)
        best = self.out_dir / RunFiles.BEST_SKILL
        if best.is_dir():  # a skill package's best version
            self.client.log_artifacts(self.run_id, str(best), RunFiles.BEST_SKILL)
        for name in ARTIFACT_FILES:
            if (self.out_dir / name).is_file():
                self.client.log_artifact(self.run_id, str(self.out_dir / name))

    def close(self) -> None:
        if self.run_id is not None:  # the trainer stopped without run_end: a crash or Ctrl-C
            self.client.set_terminated(self.run_id, "FAILED")
            self.run_id = None


def _now_ms() -> int:
    return int(time.time() * 1000)


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def tracking_uri(cfg: Config) -> str | None:
    """`tracking.mlflow_uri` as MLflow takes it; a bare path resolves against the config's folder."""
    uri = cfg.tracking.mlflow_uri
    if not uri or uri == "databricks" or re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]+:", uri):
        return uri or None  # None: MLflow's own default (MLFLOW_TRACKING_URI or ./mlruns)
    return cfg.resolve_path(uri).resolve().as_uri()


def make_tracking_observer(cfg: Config, out_dir: Path, redactor: Redactor | None = None) -> Observer | None:
    """The MLflow observer when `tracking.mlflow` is on; UserError if mlflow is not installed.
    `redactor` (default: the config's own secrets) hides secrets in what is sent to MLflow."""
    if not cfg.tracking.mlflow:
        return None
    try:
        from mlflow.tracking import MlflowClient
    except ImportError:
        raise UserError(
            "tracking.mlflow is true but mlflow is not installed; run `pip install 'skillgrad[tracking]'` "
            "(or `pip install mlflow`), or set tracking.mlflow: false"
        ) from None
    redactor = redactor or Redactor.from_config(cfg, {})
    uri = tracking_uri(cfg)
    try:
        client = MlflowClient(tracking_uri=uri)
        client.search_experiments(max_results=1)  # the store is opened lazily: refuse it now, not mid-run
    except Exception as exc:  # MLflow raises its own MlflowException for unusable stores
        detail = " ".join(str(exc).split())[:300]
        hint = (
            "; MLflow 3 opens a plain folder (file store) only with MLFLOW_ALLOW_FILE_STORE=true, "
            "or use a database: tracking.mlflow_uri=sqlite:///mlflow.db"
            if (uri or "").startswith("file:") or uri is None
            else ""
        )
        raise UserError(
            redactor.redact(f"tracking.mlflow_uri {uri!r}: MLflow cannot use this store: {detail}{hint}")
        ) from None
    # Params leave the run folder for a tracking server: they pass the run's redaction too.
    return MlflowObserver(client, redactor.redact_json(flatten(cfg.to_json())), Path(out_dir))
