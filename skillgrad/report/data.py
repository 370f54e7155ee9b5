"""Reads a run folder (or an eval folder) into plain records the report renders.

Only `history.jsonl`, `summary.json` or `eval.json` is required; everything else (test split,
traces of a chat target, a summary of a run still in progress) is optional and simply left out.

An agent target writes inside the run folder (its workspace lives there), so the reader trusts
nothing it merely finds: a rollout set shows only the tasks its index (`<set>.tasks.json`, written
by the trainer before the set runs) lists, and no symlink is ever followed. A folder planted next
to the real tasks, or an `answer.txt` linking to a file outside, is not shown or counted.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skillgrad.errors import UserError
from skillgrad.loop.records import StepRecord
from skillgrad.package.folder import load_package
from skillgrad.run_folder import RunFiles
from skillgrad.values import TraceStep

SPLIT_ORDER = {"val": 0, "test": 1, "train": 2}


@dataclass
class TaskRollout:
    task_id: str
    question: str = ""
    context: str = ""
    score: float | None = None
    passed: bool | None = None
    answer: str = ""
    expected: list[str] = field(default_factory=list)
    feedback: str = ""
    is_error: bool = False
    error: str | None = None
    trace: list[TraceStep] = field(default_factory=list)
    trace_text: str | None = None  # claude_trace_steps.txt, shown when there is no trace.json

    @property
    def tool_errors(self) -> int:
        return sum(1 for s in self.trace if s.is_error)


@dataclass
class RolloutSet:
    """The tasks one skill version ran on one split: a step's rollouts or a final test."""

    key: str
    title: str
    split: str
    step: int | None
    version: str | None
    tasks: list[TaskRollout]

    @property
    def mean(self) -> float | None:
        scores = [t.score for t in self.tasks if t.score is not None]
        return sum(scores) / len(scores) if scores else None

    @property
    def passed(self) -> int:
        return sum(1 for t in self.tasks if t.passed)


@dataclass
class Run:
    path: Path
    config: dict[str, Any]
    summary: dict[str, Any]
    history: list[dict[str, Any]]
    skills: dict[str, str]  # version -> text, v0000 first
    best_skill: str | None
    rollout_sets: list[RolloutSet]
    eval: dict[str, Any] | None = None

    @property
    def name(self) -> str:
        return self.path.name

    def set_for(
        self, split: str, *, step: int | None = None, version: str | None = None
    ) -> RolloutSet | None:
        for rs in self.rollout_sets:
            if (
                rs.split == split
                and (step is None or rs.step == step)
                and (version is None or rs.version == version)
            ):
                return rs
        return None


# ---------------------------------------------------------------------------------------------
# file readers: every malformed file becomes a one-line UserError naming it


MAX_READ_BYTES = 4 * 1024 * 1024  # one artifact shown in the report; larger ones are cut


def _plain_file(path: Path) -> bool:
    """A regular file reached without a symlink (the agent may have planted links)."""
    return path.is_file() and not path.is_symlink()


def _read_bytes(path: Path) -> bytes:
    with path.open("rb") as handle:
        return handle.read(MAX_READ_BYTES)


def _read_json(path: Path, default: Any = None) -> Any:
    if not _plain_file(path):
        return default
    try:
        return json.loads(_read_bytes(path).decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: not valid UTF-8 JSON ({exc}); is the run folder damaged?") from None


def _read_text(path: Path) -> str | None:
    if not _plain_file(path):
        return None
    return _read_bytes(path).decode("utf-8", errors="replace")


def _read_history(path: Path) -> list[dict[str, Any]]:
    """History rows; a torn last line (a run still writing, or killed) is skipped, not repaired:
    the report only reads, it never touches a run that may still be going."""
    rows: list[dict[str, Any]] = []
    if not path.is_file():
        return rows
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            if n == len(lines):
                break
            raise UserError(f"{path}:{n}: not a JSON line; is the run folder damaged?") from None
        if isinstance(row, dict):
            rows.append(row)
    return rows


def _read_trace(folder: Path) -> list[TraceStep]:
    raw = _read_json(folder / RunFiles.TRACE, [])
    steps = []
    for item in raw if isinstance(raw, list) else []:
        if isinstance(item, dict) and "kind" in item:
            steps.append(TraceStep.from_json({**item, "text": str(item.get("text", ""))}))
    return steps


def _as_float(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def read_task(folder: Path) -> TaskRollout:
    score = _read_json(folder / RunFiles.SCORE, {}) or {}
    task = _read_json(folder / RunFiles.TASK, {}) or {}
    answer = _read_text(folder / RunFiles.ANSWER)
    expected = score.get("expected") or task.get("answers") or []
    return TaskRollout(
        task_id=str(task.get("id") or folder.name),
        question=str(task.get("question") or ""),
        context=str(task.get("context") or ""),
        score=_as_float(score.get("value")),
        passed=score.get("passed") if isinstance(score.get("passed"), bool) else None,
        answer=answer if answer is not None else str(score.get("answer") or ""),
        expected=[str(e) for e in expected] if isinstance(expected, list) else [str(expected)],
        feedback=str(score.get("feedback") or ""),
        is_error=bool(score.get("is_error", False)),
        error=score.get("error"),
        trace=_read_trace(folder),
        trace_text=_read_text(folder / RunFiles.CLAUDE_TRACE),
    )


def task_index_path(folder: Path) -> Path:
    """Where the trainer lists the task folders of the rollout set in `folder`."""
    return folder.with_name(f"{folder.name}{RunFiles.TASK_INDEX}")


def _task_folders(folder: Path) -> list[Path]:
    """The set's task folders as its index lists them (an older run without one: every real,
    non-symlinked sub-folder)."""
    index = _read_json(task_index_path(folder))
    if isinstance(index, list):
        names = [n for n in index if isinstance(n, str) and n and "/" not in n and n not in (".", "..")]
        candidates = [folder / n for n in names]
    else:
        candidates = sorted(folder.iterdir())
    return [d for d in candidates if d.is_dir() and not d.is_symlink()]


def _read_set(
    folder: Path, key: str, title: str, split: str, step: int | None, version: str | None
) -> RolloutSet:
    tasks = [read_task(d) for d in _task_folders(folder)]
    return RolloutSet(key, title, split, step, version, tasks)


# ---------------------------------------------------------------------------------------------
# the run


def _version_at_step(history: list[dict[str, Any]], step: int) -> str | None:
    for record in map(StepRecord.from_json, history):
        if record.step == step:
            return record.version
    return None


def _version_before_step(history: list[dict[str, Any]], step: int) -> str:
    """The skill a step's train rollouts used: the last version accepted before that step."""
    records = map(StepRecord.from_json, history)
    versions = [r.version for r in records if r.version and r.step < step]
    return versions[-1] if versions else "v0000"


def _rollout_sets(path: Path, history: list[dict[str, Any]]) -> list[RolloutSet]:
    sets: list[RolloutSet] = []
    test_root = path / "test"
    if test_root.is_dir():
        for vdir in sorted(d for d in test_root.iterdir() if d.is_dir()):
            sets.append(_read_set(vdir, f"test-{vdir.name}", f"test · {vdir.name}", "test", None, vdir.name))
    steps_root = path / RunFiles.STEPS
    for sdir in sorted(d for d in steps_root.iterdir() if d.is_dir()) if steps_root.is_dir() else []:
        if not sdir.name.isdigit():
            continue
        step = int(sdir.name)
        for split_dir in sorted(
            (sdir / RunFiles.ROLLOUTS).glob("*"), key=lambda d: SPLIT_ORDER.get(d.name, 9)
        ):
            if not split_dir.is_dir():
                continue
            if step == 0:
                version: str | None = "v0000"
            elif split_dir.name == "train":
                version = _version_before_step(history, step)
            else:  # the candidate's validation: a version only if it was accepted
                version = _version_at_step(history, step)
            label = "baseline" if step == 0 else f"step {step}"
            title = f"{label} · {split_dir.name}" + (f" · {version}" if version and step else "")
            sets.append(
                _read_set(split_dir, f"step{step}-{split_dir.name}", title, split_dir.name, step, version)
            )
    rollouts = path / RunFiles.ROLLOUTS  # an eval folder
    for split_dir in sorted(rollouts.glob("*")) if rollouts.is_dir() else []:
        if split_dir.is_dir():
            sets.append(
                _read_set(
                    split_dir,
                    f"eval-{split_dir.name}",
                    f"eval · {split_dir.name}",
                    split_dir.name,
                    None,
                    None,
                )
            )
    return sets


def _skills(path: Path) -> dict[str, str]:
    """version -> skill text: skills/vNNNN.md, or a package's folder skills/vNNNN/ as its text."""
    folder = path / RunFiles.SKILLS
    files = sorted(folder.glob("v*.md")) if folder.is_dir() else []
    skills = {f.stem: f.read_text(encoding="utf-8", errors="replace") for f in files}
    for version in sorted(folder.glob("v[0-9][0-9][0-9][0-9]")) if folder.is_dir() else []:
        text = _package_text(version)
        if text is not None:
            skills[version.name] = text
    return dict(sorted(skills.items()))


def _package_text(folder: Path) -> str | None:
    """A package version folder as its text; None for one that is not a readable package."""
    if not folder.is_dir() or folder.is_symlink():
        return None
    try:
        return load_package(folder).encode()
    except (UserError, OSError):
        return None


def load_run(path: Path) -> Run:
    """Read the run (or eval) folder at `path`; a folder that is neither raises UserError."""
    path = Path(path)
    if not path.is_dir():
        raise UserError(f"{path}: no such run folder; pass the --out folder of `skillgrad train` or `eval`")
    markers = (RunFiles.HISTORY, RunFiles.SUMMARY, RunFiles.EVAL)
    if not any((path / m).is_file() for m in markers):
        raise UserError(
            f"{path}: not a skillgrad run folder (none of {', '.join(markers)}); "
            "pass the --out folder of `skillgrad train` or `skillgrad eval`"
        )
    history = _read_history(path / RunFiles.HISTORY)
    best = path / RunFiles.BEST_SKILL
    summary = _read_json(path / RunFiles.SUMMARY, {}) or {}
    if not isinstance(summary, dict):
        raise UserError(f"{path / RunFiles.SUMMARY}: expected a JSON object; is the run folder damaged?")
    return Run(
        path=path,
        config=_read_json(path / RunFiles.CONFIG, {}) or {},
        summary=summary,
        history=history,
        skills=_skills(path),
        best_skill=_package_text(best) or _read_text(best.with_suffix(".md")),
        rollout_sets=_rollout_sets(path, history),
        eval=_read_json(path / RunFiles.EVAL),
    )
