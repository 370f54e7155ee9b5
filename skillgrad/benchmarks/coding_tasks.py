"""`coding_tasks`: agentic coding exercises in the exercism layout, for agent targets.

Data: `benchmark.data` is a folder of exercises (e.g. ../shared/data/exercism_python/exercises/
practice), one sub-folder per exercise: `<slug>.py` stub, `<slug>_test.py`, `.docs/instructions.md`
and `.meta/config.json` (its `files.solution` / `files.test` name the files; `.meta/example.py` is
the reference solution and never leaves the source folder). Split by seed over exercise slugs.

`prepare` writes the stub, tests, helper files and `instructions.md` into the agent's workspace.
`score` copies the *pristine* tests and helpers plus the agent's solution files (regular files only:
a symlinked solution is refused) into a fresh temp folder (so edited tests or a planted conftest.py
cannot fake a pass) and runs pytest there under `sandbox.Sandbox`. Outcomes come from the
`skillgrad_verdict` plugin (see `pytest_judge/`), written with a one-time nonce to the sandbox's
private report descriptor, never from a file the solution could rewrite; exiting early or patching
the test framework scores 0. The value is the fraction of tests passing, the feedback lists
failing tests.

Options: `timeout_s` (default 60), `memory_mb` (default 2048), `exercises` (a list of slugs to
restrict the pool to).
"""

from __future__ import annotations

import json
import secrets
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from skillgrad.benchmarks.qa import make_task, require_data
from skillgrad.benchmarks.sandbox import RunResult, Sandbox
from skillgrad.benchmarks.splits import parse_options, split_pool, split_sizes
from skillgrad.config import BenchmarkConfig, Config
from skillgrad.errors import UserError
from skillgrad.templates import render
from skillgrad.values import Score, Split, Task

if TYPE_CHECKING:
    from skillgrad.values import AgentResult

VERDICT_PLUGIN_DIR = Path(__file__).with_name("pytest_judge")  # holds only skillgrad_verdict.py
MAX_SOLUTION_BYTES = 4 * 1024 * 1024


class CodingOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    timeout_s: float = Field(60.0, gt=0)
    memory_mb: int = Field(2048, ge=128)
    exercises: list[str] | None = None


def _exercise_files(folder: Path) -> tuple[list[str], list[str]]:
    meta = folder / ".meta" / "config.json"
    stem = folder.name.replace("-", "_")
    files: dict[str, list[str]] = {}
    if meta.is_file():
        try:
            files = json.loads(meta.read_text(encoding="utf-8")).get("files", {})
        except (json.JSONDecodeError, UnicodeDecodeError, AttributeError):
            raise UserError(f"{meta}: not a valid exercism config.json; fix or remove it") from None
    return files.get("solution") or [f"{stem}.py"], files.get("test") or [f"{stem}_test.py"]


def _instructions(folder: Path) -> str:
    parts = [folder / ".docs" / n for n in ("instructions.md", "instructions.append.md")]
    return "\n\n".join(p.read_text(encoding="utf-8").strip() for p in parts if p.is_file())


def read_exercises(root: Path, only: list[str] | None) -> list[Task]:
    if not root.is_dir():
        raise UserError(
            f"{root}: exercise folder not found; set benchmark.data to the exercism practice folder"
        )
    tasks = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        if only is not None and folder.name not in only:
            continue
        solution, tests = _exercise_files(folder)
        if not all((folder / f).is_file() for f in solution + tests):
            continue  # not an exercise (or an incomplete one): skip rather than fail the whole run
        question = render(
            "skillgrad.benchmarks",
            "coding_task",
            slug=folder.name,
            solution=", ".join(solution),
            tests=", ".join(tests),
        )
        tasks.append(
            make_task(
                folder.name,
                question,
                _instructions(folder) or None,
                (),
                folder=str(folder),
                solution=solution,
                tests=tests,
            )
        )
    found = {str(t.meta["source_id"]) for t in tasks}
    if only is not None and set(only) - found:
        raise UserError(f"{root}: exercise(s) not found: {', '.join(sorted(set(only) - found))}")
    if not tasks:
        raise UserError(f"{root}: no exercises found (sub-folders with a stub and a *_test.py file)")
    return tasks


def _copy_public_files(source: Path, dest: Path) -> None:
    """Top-level visible files (stub, tests, helpers, data); never `.meta/` (the example solution).
    copyfile, not copy2: the source may be read-only and the agent must be able to edit."""
    for item in source.iterdir():
        if item.is_file() and not item.name.startswith("."):
            shutil.copyfile(item, dest / item.name)


def _verdict(run: RunResult, nonce: str) -> dict[str, Any] | None:
    """The plugin's report, if it wrote one with this run's nonce (anything else is forged or absent)."""
    try:
        verdict = json.loads(run.report) if run.report else None
    except ValueError:
        return None
    if (
        not isinstance(verdict, dict)
        or verdict.get("nonce") != nonce
        or not isinstance(verdict.get("tests"), dict)
    ):
        return None
    return verdict


def _judge(run: RunResult, verdict: dict[str, Any] | None, timeout_s: float) -> Score:
    if run.timed_out:
        return Score(
            0.0, False, f"the tests timed out after {timeout_s:g}s (an infinite loop or very slow code)"
        )
    if verdict is None:
        tail = (run.stderr or run.stdout)[-400:]
        return Score(
            0.0, False, f"pytest did not finish (exit {run.returncode}; the code ended it early): {tail}"
        )
    if verdict.get("tampered"):
        names = ", ".join(map(str, verdict["tampered"][:5]))
        return Score(0.0, False, f"the solution changed the test framework ({names}); that is not a solution")
    outcomes = [(str(k), v) for k, v in verdict["tests"].items() if isinstance(v, dict)]
    ran = [(name, v) for name, v in outcomes if v.get("outcome") != "skipped"]
    failing = [
        (name.rsplit("::", 1)[-1], str(v.get("message", "")))
        for name, v in ran
        if v.get("outcome") != "passed"
    ]
    if not ran:
        tail = " | ".join(run.stdout.strip().splitlines()[-4:])[-400:]
        return Score(0.0, False, f"no tests ran: the solution does not import or collect ({tail})")
    passed = len(ran) - len(failing)
    if not failing:
        return Score(1.0, True, f"all {len(ran)} tests passed")
    shown = "; ".join(f"{name}: {msg}" if msg else name for name, msg in failing[:8])
    more = f"; and {len(failing) - 8} more" if len(failing) > 8 else ""
    return Score(passed / len(ran), False, f"{passed}/{len(ran)} tests passed; failing: {shown}{more}")


def _solution_problem(workspace: Path, names: list[str]) -> str | None:
    """Why the workspace's solution files cannot be scored, or None. A symlink (to a correct file
    elsewhere, say) is refused: only what the agent wrote counts, live and on a cache replay alike."""
    base = workspace.resolve()
    for name in names:
        path = workspace / name
        if path.is_symlink() or not path.resolve().is_relative_to(base):
            return f"solution file {name} is a symlink; write the solution into the file itself"
        if not path.is_file():
            return f"solution file(s) missing from the workspace: {name}"
        if path.stat().st_size > MAX_SOLUTION_BYTES:  # checked before anything reads or copies it
            return f"solution file {name} is larger than {MAX_SOLUTION_BYTES // 1024 // 1024} MB"
    return None


class CodingTasks:
    name = "coding_tasks"

    def __init__(self, cfg: BenchmarkConfig, source: str, tasks: list[Task], options: CodingOptions) -> None:
        self.cfg = cfg
        self.source = source
        self.options = options
        self._tasks = tasks
        self.sandbox = Sandbox(timeout_s=options.timeout_s, memory_mb=options.memory_mb)

    def planned_sizes(self) -> tuple[dict[Split, int], int]:
        """The sizes `load` cuts the exercises to (with none given, they adapt to them), and how
        many exercises there are."""
        return split_sizes(self.cfg, len(self._tasks), self.source), len(self._tasks)

    def load(self, split: Split) -> list[Task]:
        return split_pool(self._tasks, split, self.cfg, self.source)

    def prepare(self, task: Task, workspace: Path) -> None:
        workspace.mkdir(parents=True, exist_ok=True)
        _copy_public_files(Path(task.meta["folder"]), workspace)
        if task.context:
            (workspace / "instructions.md").write_text(task.context + "\n", encoding="utf-8")

    def score(self, task: Task, result: AgentResult) -> Score:
        if result.workspace is None or not result.workspace.is_dir():
            return Score(0.0, False, f"no workspace to score (agent error: {result.error or 'none'})")
        problem = _solution_problem(result.workspace, task.meta["solution"])
        if problem:
            return Score(0.0, False, problem)
        with tempfile.TemporaryDirectory(prefix="skillgrad-code-") as tmp:
            run_dir = Path(tmp)
            _copy_public_files(Path(task.meta["folder"]), run_dir)
            for name in task.meta["solution"]:
                shutil.copyfile(result.workspace / name, run_dir / name)
            (run_dir / "pytest.ini").write_text("[pytest]\naddopts =\n", encoding="utf-8")
            nonce = secrets.token_hex(16)
            argv = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "skillgrad_verdict"]
            # Plugin autoload off: installed pytest plugins must not change how exercises are scored.
            run = self.sandbox.run_python(
                [*argv, *task.meta["tests"]],
                run_dir,
                env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
                path=(str(VERDICT_PLUGIN_DIR),),
                stdin=nonce.encode(),
            )
            score = _judge(run, _verdict(run, nonce), self.options.timeout_s)
        if result.is_error:
            return Score(score.value, score.passed, f"{score.feedback} (the agent reported: {result.error})")
        return score


def create(cfg: Config) -> CodingTasks:
    options = parse_options(CodingOptions, cfg.benchmark)
    root = require_data(cfg, "set benchmark.data to an exercism-style practice folder")
    return CodingTasks(cfg.benchmark, str(root), read_exercises(root, options.exercises), options)
