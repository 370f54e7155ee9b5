"""What `skillgrad.train` and `skillgrad.evaluate` return: typed, serialisable views of a run
folder's `summary.json` / `eval.json` (docs/api.md). `to_json()` gives plain JSON and `from_json`
takes it back; `load(run_dir)` reads a finished run folder, also one the CLI wrote."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skillgrad.api.skill import Skill
from skillgrad.budget import Bucket
from skillgrad.errors import UserError
from skillgrad.run_folder import RunFiles
from skillgrad.values import Rollout


@dataclass(frozen=True)
class RoleUsage:
    """Tokens, calls and cost of one role (or of the whole run). `cost_usd` is None when some
    call's price is unknown (a local model, a provider without prices): `known_usd` is then what
    the calls of known price cost, and `unknown_cost_calls` how many had none."""

    input_tokens: int = 0
    output_tokens: int = 0
    calls: int = 0
    known_usd: float = 0.0
    unknown_cost_calls: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def cost_usd(self) -> float | None:
        return None if self.unknown_cost_calls else self.known_usd

    def to_json(self) -> dict[str, Any]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "calls": self.calls,
            "known_usd": self.known_usd,
            "unknown_cost_calls": self.unknown_cost_calls,
        }

    @classmethod
    def from_json(cls, data: Any) -> RoleUsage:
        """A ledger bucket as the run folder stores it (missing fields count 0)."""
        bucket = Bucket.from_json(dict(data) if isinstance(data, Mapping) else {})
        fields = (bucket.input_tokens, bucket.output_tokens, bucket.calls, bucket.known_usd)
        return cls(*fields, bucket.unknown_cost_calls)


@dataclass(frozen=True)
class Spending:
    """A run's usage: paid by role (`optimizer`, `target`), paid in all, and `saved`, what the
    call cache answered without paying (its original usage)."""

    by_role: dict[str, RoleUsage] = field(default_factory=dict)
    total: RoleUsage = field(default_factory=RoleUsage)
    saved: RoleUsage = field(default_factory=RoleUsage)

    @classmethod
    def from_ledger(cls, ledger: Any) -> Spending:
        """From a ledger's JSON (`summary.json` / `eval.json` `usage`)."""
        ledger = ledger if isinstance(ledger, Mapping) else {}
        roles = ledger.get("by_role")
        roles = roles if isinstance(roles, Mapping) else {}
        return cls(
            {str(k): RoleUsage.from_json(v) for k, v in roles.items()},
            RoleUsage.from_json(ledger.get("total")),
            RoleUsage.from_json(ledger.get("saved")),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "by_role": {k: v.to_json() for k, v in self.by_role.items()},
            "total": self.total.to_json(),
            "saved": self.saved.to_json(),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Spending:
        return cls.from_ledger(data)


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"{path}: not found; pass the folder of a finished run") from None
    except (OSError, ValueError) as exc:
        raise UserError(f"{path}: unreadable ({exc}); the run folder is damaged") from None
    if not isinstance(data, dict):
        raise UserError(f"{path}: not a JSON object; the run folder is damaged")
    return data


def _pair(before: float | None, after: float | None) -> str:
    shown = [("?" if v is None else f"{v:.3f}") for v in (before, after)]
    gain = f" ({after - before:+.3f})" if before is not None and after is not None else ""
    return f"{shown[0]} -> {shown[1]}{gain}"


def _spent(usage: Spending) -> str:
    """'paid: N calls, T tokens, $X' and what the cache answered."""
    total = usage.total
    cost = total.cost_usd
    if cost is None:
        dollars = f"${total.known_usd:.4f} known, {total.unknown_cost_calls} call(s) unpriced"
    else:
        dollars = f"${cost:.4f}"
    saved = f"; {usage.saved.calls} answered by the call cache" if usage.saved.calls else ""
    return f"paid: {total.calls} calls, {total.total_tokens} tokens, {dollars}{saved}"


def _score(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class TrainResult:
    """A finished training run (`summary.json` and the best skill of its run folder).

    `stopped`: `completed`, `budget` (a cap of the budget section; the best skill so far),
    `no_headroom`, `no_failures` (nothing left to fix) or `no_new_evidence` (every remaining step
    would replay one already made); `stop_reason` says it in words.
    The test scores are None without a test split (or when the budget stopped the run first)."""

    run_dir: Path
    best_skill: Skill
    best_version: str
    baseline_val: float | None
    best_val: float | None
    baseline_test: float | None
    best_test: float | None
    steps: int
    accepted: int
    rejected: int
    skipped: int
    stopped: str
    stop_reason: str | None
    usage: Spending
    wall_s: float
    summary: dict[str, Any]

    @property
    def val_gain(self) -> float | None:
        if self.best_val is None or self.baseline_val is None:
            return None
        return self.best_val - self.baseline_val

    @property
    def test_gain(self) -> float | None:
        if self.best_test is None or self.baseline_test is None:
            return None
        return self.best_test - self.baseline_test

    def __repr__(self) -> str:
        """A few lines: the scores, the steps, what was spent, the run folder (the fields hold the
        rest: `summary` is summary.json, `best_skill` the skill)."""
        test = f", test {_pair(self.baseline_test, self.best_test)}" if self.best_test is not None else ""
        reason = f" ({self.stop_reason})" if self.stop_reason and self.stopped != "completed" else ""
        return "\n".join(
            [
                f"TrainResult: val {_pair(self.baseline_val, self.best_val)}{test}",
                f"  {self.steps} step(s): {self.accepted} accepted, {self.rejected} rejected, "
                f"{self.skipped} skipped; stopped: {self.stopped}{reason}",
                f"  {_spent(self.usage)}; {self.wall_s:.1f} s",
                f"  best skill: {self.best_version}, {len(self.best_skill.text)} chars",
                f"  run folder: {self.run_dir}",
            ]
        )

    @classmethod
    def from_summary(cls, run_dir: Path, summary: dict[str, Any], best_skill: Skill) -> TrainResult:
        test = summary.get("test")
        test = test if isinstance(test, Mapping) else {}
        return cls(
            run_dir=run_dir,
            best_skill=best_skill,
            best_version=str(summary.get("best_version") or "v0000"),
            baseline_val=_score(summary.get("baseline_val_score")),
            best_val=_score(summary.get("best_val_score")),
            baseline_test=_score(test.get("baseline")),
            best_test=_score(test.get("best")),
            steps=int(summary.get("steps") or 0),
            accepted=int(summary.get("accepted") or 0),
            rejected=int(summary.get("rejected") or 0),
            skipped=int(summary.get("skipped") or 0),
            stopped=str(summary.get("stopped") or ""),
            stop_reason=summary.get("stop_reason"),
            usage=Spending.from_ledger(summary.get("usage")),
            wall_s=float(summary.get("wall_s") or 0.0),
            summary=summary,
        )

    @classmethod
    def load(cls, run_dir: str | os.PathLike[str]) -> TrainResult:
        """The result of the run in `run_dir` (UserError when it has no summary yet)."""
        root = Path(run_dir)
        best = root / RunFiles.BEST_SKILL
        skill = Skill.read(best if best.is_dir() else best.with_suffix(".md"))
        return cls.from_summary(root, _read_json(root / RunFiles.SUMMARY), skill)

    def to_json(self) -> dict[str, Any]:
        return {
            "run_dir": str(self.run_dir),
            "best_skill": self.best_skill.to_json(),
            "summary": self.summary,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TrainResult:
        skill = Skill.from_json(data["best_skill"])
        return cls.from_summary(Path(data["run_dir"]), dict(data["summary"]), skill)


@dataclass(frozen=True)
class TaskResult:
    """One task of an evaluation: its score (value in [0, 1], passed, the grader's feedback), the
    answer, and the agent's error when it failed to run."""

    task_id: str
    value: float
    passed: bool
    feedback: str
    answer: str
    error: str | None = None

    @classmethod
    def of(cls, rollout: Rollout) -> TaskResult:
        score, result = rollout.score, rollout.result
        return cls(rollout.task.id, score.value, score.passed, score.feedback, result.answer, result.error)

    def to_json(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "value": self.value,
            "passed": self.passed,
            "feedback": self.feedback,
            "answer": self.answer,
            "error": self.error,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TaskResult:
        error = data.get("error")
        return cls(
            str(data["task_id"]),
            float(data["value"]),
            bool(data["passed"]),
            str(data.get("feedback", "")),
            str(data.get("answer", "")),
            None if error is None else str(error),
        )


@dataclass(frozen=True)
class EvalResult:
    """One skill scored on one split (`eval.json` of its run folder, and each task's outcome)."""

    run_dir: Path
    skill: str  # where the skill came from: its path, or "(text)" for a skill given as text
    split: str
    mean_score: float
    n: int
    passed: int
    errors: int  # tasks the agent failed to run (they score 0)
    tasks: tuple[TaskResult, ...]
    target_model: str | None
    usage: Spending
    wall_s: float
    report: dict[str, Any]

    def __repr__(self) -> str:
        """Two lines: the score and its tasks, what was spent and the folder (`tasks` holds each)."""
        errors = f", {self.errors} failed to run" if self.errors else ""
        return (
            f"EvalResult: {self.split} mean score {self.mean_score:.3f} over {self.n} tasks "
            f"({self.passed} passed{errors}), skill {self.skill}\n"
            f"  {_spent(self.usage)}; {self.wall_s:.1f} s; run folder {self.run_dir}"
        )

    @classmethod
    def from_report(cls, run_dir: Path, report: dict[str, Any], tasks: tuple[TaskResult, ...]) -> EvalResult:
        model = report.get("target_model")
        return cls(
            run_dir=run_dir,
            skill=str(report.get("skill", "")),
            split=str(report.get("split", "")),
            mean_score=float(report.get("mean_score") or 0.0),
            n=int(report.get("n") or 0),
            passed=int(report.get("passed") or 0),
            errors=int(report.get("errors") or 0),
            tasks=tasks,
            target_model=None if model is None else str(model),
            usage=Spending.from_ledger(report.get("usage")),
            wall_s=float(report.get("wall_s") or 0.0),
            report=report,
        )

    @classmethod
    def load(cls, run_dir: str | os.PathLike[str]) -> EvalResult:
        """The result of the evaluation in `run_dir`, its tasks in the order they ran."""
        root = Path(run_dir)
        report = _read_json(root / RunFiles.EVAL)
        rollouts = root / RunFiles.ROLLOUTS / str(report.get("split", ""))
        index = rollouts.with_name(f"{rollouts.name}{RunFiles.TASK_INDEX}")
        names = _read_json_list(index)
        tasks = []
        for name in names:
            score = _read_json(rollouts / name / RunFiles.SCORE)
            task = _read_json(rollouts / name / RunFiles.TASK)
            tasks.append(TaskResult.from_json({**score, "task_id": task.get("id", name)}))
        return cls.from_report(root, report, tuple(tasks))

    def to_json(self) -> dict[str, Any]:
        return {
            "run_dir": str(self.run_dir),
            "report": self.report,
            "tasks": [t.to_json() for t in self.tasks],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> EvalResult:
        tasks = tuple(TaskResult.from_json(t) for t in data["tasks"])
        return cls.from_report(Path(data["run_dir"]), dict(data["report"]), tasks)


def _read_json_list(path: Path) -> list[str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [str(n) for n in data if isinstance(n, str)] if isinstance(data, list) else []
