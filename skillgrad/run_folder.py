"""The run folder: `RunFiles` names everything in it (the one place those names are spelled, for
the writer and every reader: resume, report, tracking) and `RunDir` writes and reads it through
named methods. Every write is atomic, redacted by value and confined to the run folder: no link
an agent planted in it (`ln -sfn ~/elsewhere ../../../../reflections`) is followed
(`skillgrad.confined`)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path, PurePath
from typing import Annotated, Any

from pydantic import AfterValidator, StringConstraints, TypeAdapter, ValidationError

from skillgrad.atomic import (
    RunLock,
    append_jsonl,
    in_use,
    read_jsonl_repairing,
    write_json_atomic,
    write_text_atomic,
)
from skillgrad.benchmarks.splits import safe_task_id
from skillgrad.confined import PROC_FD, Confined
from skillgrad.errors import UserError, describe_validation
from skillgrad.package.folder import read_skill_at, write_package
from skillgrad.package.model import as_package
from skillgrad.redact import Redactor
from skillgrad.snapshot import scrub_tree
from skillgrad.traces.steps import TraceCaps
from skillgrad.traces.view import render_steps
from skillgrad.values import Rollout, Task


class RunFiles:
    """The names in a run folder (docs/architecture.md, "Run folder"; the tour of them:
    docs/reference/run-folder.md). Skills are `<name>.md`, or a folder `<name>/` for a skill package."""

    CONFIG = "config.json"  # the resolved config, secrets redacted
    OBJECTS = (
        "objects.json"  # the strategies handed in as Python objects, by label (loop/custom_strategies.py)
    )
    STATE = "state.json"  # the resume point: TrainState + ledger
    HISTORY = "history.jsonl"  # one StepRecord a step
    SUMMARY = "summary.json"
    EVAL = "eval.json"  # an eval folder's result
    PAID = "paid.jsonl"  # every paid call as it returned (budget.PaidJournal)
    LOCK = ".lock"
    REPORT = "report.html"
    LOG = "train.log"  # the progress lines: a line per stage start and end, step, message (appended)
    BEST_SKILL = "best_skill"
    SKILLS = "skills"  # skills/vNNNN
    STEPS = "steps"  # steps/NNNN/
    TEST = "test"  # test/vNNNN/<task>/: the final test of the baseline and the best skill
    ROLLOUTS = "rollouts"  # steps/NNNN/rollouts/<split>/<task>/, or an eval's rollouts/<split>/
    REFLECTIONS = "reflections"  # steps/NNNN/reflections/mb_NN.json (+ mb_NN/, its workspace)
    GATE = "gate.json"
    MERGED_PATCH = "merged_patch.json"
    EDIT_REPORT = "edit_report.json"
    CANDIDATE = "candidate_skill"
    MERGE = "merge.json"  # steps/NNNN/merge.json: a lineage merge of the frontier search
    TASK_INDEX = ".tasks.json"  # <set>.tasks.json beside a rollout set: the task folders it ran
    # one task's folder
    TASK = "task.json"
    ANSWER = "answer.txt"
    SCORE = "score.json"  # written last: its presence marks the task complete
    TRACE = "trace.json"
    TRANSCRIPT = "transcript.jsonl"
    WORKSPACE = "workspace"
    CLAUDE_TRACE = "claude_trace_steps.txt"  # the default rendered trace (a spec may name its own)


TRACE_FILE = RunFiles.CLAUDE_TRACE
# A kept workspace file larger than this is emptied rather than scanned for secrets.
MAX_KEPT_FILE_BYTES = 8 * 1024 * 1024


def _folder_name(name: str) -> str:
    if name in (".", "..") or "/" in name or "\x00" in name:
        raise ValueError("not a task folder's name")
    return name


# A task folder's name as a set's index lists it: one path component, never "." or "..".
TaskFolderName = Annotated[str, StringConstraints(min_length=1), AfterValidator(_folder_name)]
_TASK_INDEX = TypeAdapter(list[TaskFolderName])


def task_index_path(folder: Path) -> Path:
    """Where the trainer lists the task folders of the rollout set in `folder`."""
    return folder.with_name(f"{folder.name}{RunFiles.TASK_INDEX}")


def read_task_index(path: Path) -> list[str]:
    """A set's index, validated: ValueError saying what is wrong with it."""
    try:
        return _TASK_INDEX.validate_json(path.read_bytes())
    except ValidationError as exc:
        raise ValueError(describe_validation(exc)) from None


def version_name(version: int) -> str:
    """The name of skill version `version` in the run folder (`skills/<name>.md`)."""
    return f"v{version:04d}"


@contextlib.contextmanager
def _naming(target: Path) -> Iterator[None]:
    """A failed write (a full disk) names the artifact it was writing (never the descriptor path
    a confined write went through)."""
    try:
        yield
    except OSError as exc:
        if exc.filename and not str(exc.filename).startswith(str(PROC_FD)):
            raise
        raise OSError(exc.errno, exc.strerror or str(exc), str(target)) from exc


class RunDir:
    def __init__(
        self, root: Path, redactor: Redactor | None = None, confined: Confined | None = None
    ) -> None:
        self.root = root
        self._redactor = redactor or Redactor()
        self._confined = confined or Confined(root)

    def part(self, name: str) -> RunDir:
        """The run folder of a part of this run (`description/`), written through this one."""
        return RunDir(self.root / name, self._redactor, self._confined.child(name))

    @contextlib.contextmanager
    def _file(self, rel: str | Path) -> Iterator[Path]:
        """Where to write the file `rel`: inside its folder of the run, whatever was planted on
        the way (`skillgrad.confined`); a failure names `rel`'s place in the run."""
        inside = PurePath(rel)
        with _naming(self.root / rel), self._confined.folder(inside.parent) as folder:
            yield folder / inside.name

    def clear(self, rel: str | Path, *, create: bool = False) -> None:
        """Remove what is at `rel` in the run (a folder's whole tree; no link in it followed);
        with `create`, an empty folder is left there."""
        with _naming(self.root / rel):
            self._confined.clear(rel, create=create)

    # -- creation -------------------------------------------------------------------------------
    def create(self, *, allow_existing: bool = False) -> None:
        if self.root.exists() and any(self.root.iterdir()) and not allow_existing:
            if (holder := RunLock(self.root / RunFiles.LOCK).live_holder()) is not None:
                raise UserError(in_use(self.root, holder))  # started a moment before this one
            raise UserError(
                f"{self.root}: run folder already exists and is not empty; pass another --out "
                f"(or --resume {self.root} to continue it)"
            )
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # checked up front (session.paths); this is the race or root's view
            raise UserError(
                f"{self.root}: cannot create the run folder ({exc.strerror}); choose another --out"
            ) from None

    def remove_stale_temp_files(self) -> None:
        """Remove the temp files of atomic writes cut short by a SIGKILL (`.<name>.<random>.tmp`).
        Call with the run lock held, so no writer is using them. Workspaces are left as they are."""
        for path in self.root.rglob(".*.tmp"):
            inside_workspace = RunFiles.WORKSPACE in path.relative_to(self.root).parts
            if not inside_workspace and path.is_file() and not path.is_symlink():
                with contextlib.suppress(OSError):
                    path.unlink()

    # -- generic writes -------------------------------------------------------------------------
    def path(self, *parts: str) -> Path:
        return self.root.joinpath(*parts)

    def write_text(self, rel: str | Path, text: str) -> Path:
        with self._file(rel) as target:
            write_text_atomic(target, self._redactor.redact(text))
        return self.root / rel

    def write_json(self, rel: str | Path, obj: Any) -> Path:
        with self._file(rel) as target:
            write_json_atomic(target, self._redactor.redact_json(obj))
        return self.root / rel

    def append_history(self, record: dict[str, Any]) -> None:
        with self._file(RunFiles.HISTORY) as history:
            append_jsonl(history, self._redactor.redact_json(record))

    def keep_history_to(self, step: int) -> None:
        """Cut history.jsonl back to the steps up to `step` (a resume), its torn tail repaired."""
        with self._file(RunFiles.HISTORY) as history:
            if history.exists():
                kept = [r for r in read_jsonl_repairing(history) if int(r.get("step", 0)) <= step]
                write_text_atomic(history, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in kept))

    # -- named artifacts ------------------------------------------------------------------------
    def write_config(self, data: dict[str, Any]) -> Path:
        return self.write_json(RunFiles.CONFIG, data)

    def write_state(self, data: dict[str, Any]) -> Path:
        return self.write_json(RunFiles.STATE, data)

    def read_history(self, *, repair: bool = True) -> list[dict[str, Any]]:
        """history.jsonl's rows; a torn last line is dropped (and, with `repair`, cut off)."""
        return read_jsonl_repairing(self.root / RunFiles.HISTORY, repair=repair)

    def write_summary(self, data: dict[str, Any]) -> Path:
        return self.write_json(RunFiles.SUMMARY, data)

    def write_eval(self, data: dict[str, Any]) -> Path:
        return self.write_json(RunFiles.EVAL, data)

    def write_gate(self, step: int, data: dict[str, Any]) -> Path:
        return self.write_json(self.step_dir(step) / RunFiles.GATE, data)

    def write_merged_patch(self, step: int, data: dict[str, Any]) -> Path:
        return self.write_json(self.step_dir(step) / RunFiles.MERGED_PATCH, data)

    def write_edit_report(self, step: int, data: list[dict[str, Any]]) -> Path:
        return self.write_json(self.step_dir(step) / RunFiles.EDIT_REPORT, data)

    def write_candidate(self, step: int, text: str) -> Path:
        return self.write_skill_at(self.step_dir(step) / RunFiles.CANDIDATE, text)

    def reflection_path(self, step: int, name: str) -> Path:
        return self.step_dir(step) / RunFiles.REFLECTIONS / f"{name}.json"

    def reflection_workspace(self, step: int, name: str) -> Path:
        """The folder an analyst read (optimizer.reflection: workspace), beside its record."""
        return self.step_dir(step) / RunFiles.REFLECTIONS / name

    def write_folder(self, rel: str | Path, files: dict[str, str]) -> Path:
        """A fresh folder holding exactly `files` (path inside it -> text), each written atomically
        and redacted; what an earlier, interrupted write left there is removed first."""
        self.clear(rel, create=True)
        for path, text in files.items():
            self.write_text(Path(rel) / path, text)
        return self.root / rel

    @property
    def redactor(self) -> Redactor:
        """The run's redactor, for a writer that must count lines of what will be written."""
        return self._redactor

    def rollouts_dir(self, step: int, split: str) -> Path:
        """A step's rollout set of `split` (train, val, val-r2, ...)."""
        return self.step_dir(step) / RunFiles.ROLLOUTS / split

    def test_dir(self, version: int) -> Path:
        return Path(RunFiles.TEST) / version_name(version)

    def eval_dir(self, split: str) -> Path:
        return Path(RunFiles.ROLLOUTS) / split

    # -- skills ---------------------------------------------------------------------------------
    def write_skill(self, version: int, text: str) -> Path:
        """skills/vNNNN.md, or the folder skills/vNNNN/ for a package."""
        return self.write_skill_at(Path(RunFiles.SKILLS) / version_name(version), text)

    def best_skill_path(self) -> Path:
        """best_skill/ for a package, else best_skill.md."""
        folder = self.root / RunFiles.BEST_SKILL
        return folder if folder.is_dir() else folder.with_suffix(".md")

    def write_best_skill(self, text: str) -> Path:
        return self.write_skill_at(RunFiles.BEST_SKILL, text)

    def read_skill(self, version: int) -> str:
        """Skill version `version` as written (a package folder read back whole)."""
        return read_skill_at(self.root / RunFiles.SKILLS / version_name(version))

    def write_skill_at(self, stem: str | Path, text: str) -> Path:
        """A skill at `stem`.md, or a package as the folder `stem`/ (written whole, then renamed)."""
        package = as_package(text)
        if package is None:
            return self.write_text(f"{stem}.md", text)
        with self._file(stem) as target:
            write_package(target, package, redact=self._redactor.redact)
        return self.root / stem

    def step_dir(self, step: int) -> Path:
        return Path(RunFiles.STEPS) / f"{step:04d}"

    # -- rollouts -------------------------------------------------------------------------------
    def task_dir(self, prefix: Path, task: Task) -> Path:
        return prefix / safe_task_id(task.id)

    def fresh_workspace(self, prefix: Path, task: Task, *, create: bool = True) -> Path:
        """An empty workspace for one task, only ever under the run folder. Chat targets never
        touch it (`create=False`), so their prediction folders stay free of empty directories."""
        workspace = self.task_dir(prefix, task) / RunFiles.WORKSPACE
        self.clear(workspace, create=create)
        return self.root / workspace

    def write_task_index(self, prefix: Path, tasks: list[Task]) -> None:
        """List the set's task folders before they run: the report shows only these (an agent may
        plant folders next to its own)."""
        index = task_index_path(prefix)
        # a set validated in waves (racing) lists each wave's tasks in turn: keep them all (a
        # resumed run checked every index before it started: see session.resume)
        listed = read_task_index(self.root / index) if (self.root / index).is_file() else []
        names = listed + [self.task_dir(prefix, t).name for t in tasks]
        self.write_json(index, list(dict.fromkeys(names)))

    def write_rollout(
        self, prefix: Path, rollout: Rollout, *, harness: bool, caps: TraceCaps, trace_file: str = TRACE_FILE
    ) -> None:
        folder = self.task_dir(prefix, rollout.task)
        # The agent wrote the workspace (maybe `env > file`): scored by now, it is scrubbed before
        # it is kept, like every other artifact (a link it put in place of the folder is removed).
        with contextlib.ExitStack() as opened:
            try:
                kept = opened.enter_context(self._confined.folder(folder / RunFiles.WORKSPACE, create=False))
            except FileNotFoundError:  # no workspace (a chat target), or a link the walk removed
                kept = None
            if kept is not None:
                scrub_tree(kept, self._redactor.redact_bytes, MAX_KEPT_FILE_BYTES)
        self.write_json(folder / RunFiles.TASK, rollout.task.to_json())
        self.write_text(folder / RunFiles.ANSWER, rollout.result.answer)
        if harness or rollout.result.trace:
            self.write_text(folder / trace_file, render_steps(rollout.result.trace, caps) + "\n")
            self.write_json(folder / RunFiles.TRACE, [s.to_json() for s in rollout.result.trace])
        if rollout.result.raw:
            lines = "".join(json.dumps(m, ensure_ascii=False, default=str) + "\n" for m in rollout.result.raw)
            self.write_text(folder / RunFiles.TRANSCRIPT, lines)
        # score.json last: its presence marks the task as complete.
        self.write_json(folder / RunFiles.SCORE, rollout.to_json())
