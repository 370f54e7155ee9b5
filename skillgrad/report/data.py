"""Reads a run folder (or an eval folder) into plain records the report renders.

Only `history.jsonl`, `summary.json` or `eval.json` is required; everything else (test split,
traces of a chat target, a summary of a run still in progress) is optional and simply left out.
Every file is read through `report.files`: a large one is shown in part with its size (the task's
`notes`), a damaged one is skipped with a warning naming it (`Run.warnings`), and the rest of the
report still renders.

An agent target writes inside the run folder (its workspace lives there), so the reader trusts
nothing it merely finds: a rollout set shows only the tasks its index (`<set>.tasks.json`, written
by the trainer before the set runs) lists, and no symlink is ever followed. A folder planted next
to the real tasks, or an `answer.txt` linking to a file outside, is not shown or counted.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from skillgrad.errors import UserError
from skillgrad.loop.step_records import StepRecord
from skillgrad.package.folder import load_package
from skillgrad.report.files import (
    Notes,
    Partial,
    keep_text,
    plain_file,
    read_array_head,
    read_object,
    read_text,
)
from skillgrad.run_folder import RunFiles, read_task_index, task_index_path
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
    trace: list[TraceStep] = field(default_factory=list)  # the first steps (report.files.TRACE_STEPS)
    trace_text: str | None = None  # claude_trace_steps.txt, shown when there is no trace.json
    trace_total: int | None = None  # steps in trace.json (None: as many as `trace`)
    trace_errors: int | None = None  # error steps in trace.json (None: those of `trace`)
    notes: list[str] = field(default_factory=list)  # this task's files shown in part, and why

    @property
    def tool_errors(self) -> int:
        if self.trace_errors is not None:
            return self.trace_errors
        return sum(1 for s in self.trace if s.is_error)

    @property
    def steps(self) -> int:
        return self.trace_total if self.trace_total is not None else len(self.trace)


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
    warnings: list[str] = field(default_factory=list)  # damaged files, each skipped

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def missing_runs(self) -> tuple[int, int]:
        """(val, test) runs whose agent failed after its retries: left out of the scores."""
        test = self.summary.get("test")
        by_version = test.get("missing") if isinstance(test, dict) else None
        tested = by_version.values() if isinstance(by_version, dict) else []
        val = self.summary.get("val_missing")
        return (val if isinstance(val, int) else 0, sum(v for v in tested if isinstance(v, int)))

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
# the files of a task and of a rollout set


def _read_history(path: Path, warnings: list[str]) -> list[dict[str, Any]]:
    """History rows, line by line. A line that is not a JSON object is skipped with a warning,
    except a torn last line (a run still writing, or killed), skipped in silence: the report
    only reads, it never touches a run that may still be going."""
    if not plain_file(path):
        return []
    with path.open("rb") as handle:
        lines = [(number, line) for number, line in enumerate(handle, 1) if line.strip()]
    rows: list[dict[str, Any]] = []
    bad: list[int] = []
    for position, (number, line) in enumerate(lines, 1):
        try:
            row = json.loads(line.decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            row = None
        kept = _history_row(row) if isinstance(row, dict) else None
        if kept is not None:
            rows.append(kept)
        elif not (position == len(lines) and not line.endswith(b"\n")):
            bad.append(number)
    if bad:
        shown = ", ".join(map(str, bad[:5])) + (" ..." if len(bad) > 5 else "")
        warnings.append(f"{path}: line(s) {shown} not a step's record; skipped in the report")
    return rows


# the fields of a history row the report reads by their type (the others it reads as it finds them)
_HISTORY_TYPES = {"step": int, "action": str, "version": str, "edits": list, "usage": dict, "dropped": dict}


def _history_row(row: dict[str, Any]) -> dict[str, Any] | None:
    """A history row as the report keeps it (long texts, an edit's content, kept in part); None
    for one whose fields are not of their type (null is as good as absent)."""
    for key, kind in _HISTORY_TYPES.items():
        value = row.get(key)
        if value is not None and (not isinstance(value, kind) or isinstance(value, bool)):
            return None

    def short(item: dict[str, Any]) -> dict[str, Any]:
        return {k: keep_text(v) if isinstance(v, str) else v for k, v in item.items()}

    edits = [{**_EDIT_FIELDS, **short(e)} for e in row.get("edits") or [] if isinstance(e, dict)]
    return {**short(row), "edits": edits}


_EDIT_FIELDS = dict.fromkeys(("op", "target", "content", "rationale", "status", "reason"), "")


def _read_trace(folder: Path, notes: Notes, task: TaskRollout) -> None:
    head = read_array_head(folder / RunFiles.TRACE, notes)
    if head is None:
        return
    items = [item for item in head.items if isinstance(item, dict) and "kind" in item]
    task.trace = [_step(item) for item in items]
    task.trace_total, task.trace_errors = head.total, head.errors


def _step(item: dict[str, Any]) -> TraceStep:
    step = TraceStep.from_json(item)
    text = item.get("text")
    return replace(step, text=Partial(step.text, text.whole)) if isinstance(text, Partial) else step


def _text(value: Any) -> str:
    """A field as text; text read in part stays a `Partial` (str() would make it plain)."""
    return value if isinstance(value, str) else str(value or "")


def _as_float(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def read_task(folder: Path, warnings: list[str] | None = None) -> TaskRollout:
    """One task folder. Its files shown in part are in the task's `notes`; a damaged one is
    skipped, with a warning added to `warnings`."""
    notes = Notes()
    score = read_object(folder / RunFiles.SCORE, notes)
    task = read_object(folder / RunFiles.TASK, notes)
    answer = read_text(folder / RunFiles.ANSWER, notes)
    expected = score.get("expected") or task.get("answers") or []
    rollout = TaskRollout(
        task_id=str(task.get("id") or folder.name),
        question=_text(task.get("question")),
        context=_text(task.get("context")),
        score=_as_float(score.get("value")),
        passed=score.get("passed") if isinstance(score.get("passed"), bool) else None,
        answer=answer if answer is not None else _text(score.get("answer")),
        expected=[_text(e) for e in expected] if isinstance(expected, list) else [_text(expected)],
        feedback=_text(score.get("feedback")),
        is_error=bool(score.get("is_error", False)),
        error=_text(score["error"]) if score.get("error") else None,
        trace_text=read_text(folder / RunFiles.CLAUDE_TRACE, notes),
    )
    _read_trace(folder, notes, rollout)
    rollout.notes = [note.replace(f"{folder}/", "", 1) for note in notes.notes]
    if warnings is not None:
        warnings.extend(notes.warnings)
    return rollout


def _task_folders(folder: Path, warnings: list[str]) -> list[Path]:
    """The set's task folders as its index lists them (an older run without one: every real,
    non-symlinked sub-folder; a damaged index: none, with a warning)."""
    index = task_index_path(folder)
    if plain_file(index):
        try:
            candidates = [folder / name for name in read_task_index(index)]
        except (ValueError, OSError) as exc:
            warnings.append(f"{index}: not a list of task folders ({exc}); its set is skipped in the report")
            return []
    else:
        candidates = sorted(folder.iterdir())
    return [d for d in candidates if d.is_dir() and not d.is_symlink()]


def _read_set(folder: Path, key: str, title: str, split: str, step: int | None, version: str | None,
              warnings: list[str]) -> RolloutSet:  # fmt: skip
    tasks = [read_task(d, warnings) for d in _task_folders(folder, warnings)]
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


def _rollout_sets(path: Path, history: list[dict[str, Any]], warnings: list[str]) -> list[RolloutSet]:
    sets: list[RolloutSet] = []
    test_root = path / "test"
    if test_root.is_dir():
        for vdir in sorted(d for d in test_root.iterdir() if d.is_dir()):
            title = f"test · {vdir.name}"
            sets.append(_read_set(vdir, f"test-{vdir.name}", title, "test", None, vdir.name, warnings))
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
                _read_set(
                    split_dir, f"step{step}-{split_dir.name}", title, split_dir.name, step, version, warnings
                )
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
                    warnings,
                )
            )
    return sets


def _skills(path: Path) -> dict[str, str]:
    """version -> skill text: skills/vNNNN.md, or a package's folder skills/vNNNN/ as its text."""
    folder = path / RunFiles.SKILLS
    files = sorted(folder.glob("v*.md")) if folder.is_dir() else []
    skills = {f.stem: text for f in files if (text := _read_skill(f)) is not None}
    for version in sorted(folder.glob("v[0-9][0-9][0-9][0-9]")) if folder.is_dir() else []:
        text = _package_text(version)
        if text is not None:
            skills[version.name] = text
    return dict(sorted(skills.items()))


def _read_skill(path: Path) -> str | None:
    """A skill file, whole (`propose` installs it): a skill is the run's artifact, not a log."""
    return path.read_text(encoding="utf-8", errors="replace") if plain_file(path) else None


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
    notes = Notes()
    history = _read_history(path / RunFiles.HISTORY, notes.warnings)
    best = path / RunFiles.BEST_SKILL
    summary = read_object(path / RunFiles.SUMMARY, notes)
    config = read_object(path / RunFiles.CONFIG, notes)
    if any(not isinstance(section, dict) for section in config.values()):
        notes.damaged(path / RunFiles.CONFIG, "a section that is not a mapping")
        config = {}
    evaluation = read_object(path / RunFiles.EVAL, notes) if plain_file(path / RunFiles.EVAL) else None
    sets = _rollout_sets(path, history, notes.warnings)
    return Run(
        path=path,
        config=config,
        summary=summary,
        history=history,
        skills=_skills(path),
        best_skill=_package_text(best) or _read_skill(best.with_suffix(".md")),
        rollout_sets=sets,
        eval=evaluation,
        warnings=notes.warnings,
    )
