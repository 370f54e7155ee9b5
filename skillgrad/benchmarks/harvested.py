"""`harvested`: replay the tasks `skillgrad harvest` mined from a user's sessions, graded by a judge.

Data (`benchmark.data`): the task set `skillgrad harvest` writes (one task per line, see
`skillgrad.harvest.command`). Splits keep every cluster of near-duplicate requests on one side, so
validation never sees a task the skill was trained on in another wording; clusters are assigned in
a seeded order to the split that is furthest below its size.

Options (`benchmark.options`):
  workspace   a folder copied into every replay workspace (e.g. a checkout of the project)
  pass_score  the judge's score at which a task counts as passed when the judge says so (0.7)

Scoring: an LLM judge (the optimizer role's backend, wrapped in the call cache and counted in the
budget under the stage `judge`) grades the replay's answer and budgeted trace against the rubric
derived from the original session; its reply is schema-validated. The judge is handed in by the
trainer through `use_judge` (see `JudgedBenchmark` in base.py).
"""

from __future__ import annotations

import random
import shutil
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from skillgrad.benchmarks.qa import make_task, require_data
from skillgrad.benchmarks.splits import iter_jsonl, parse_options, row_id, split_sizes, text_field
from skillgrad.config import BenchmarkConfig, Config
from skillgrad.errors import UserError
from skillgrad.templates import render
from skillgrad.traces.steps import TraceCaps
from skillgrad.traces.view import render_view
from skillgrad.values import SPLITS, Score, Split, Task

if TYPE_CHECKING:
    from skillgrad.backends.interface import ChatModel
    from skillgrad.values import AgentResult

JUDGE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "score": {"type": "number", "minimum": 0, "maximum": 1},
        "passed": {"type": "boolean"},
        "feedback": {"type": "string"},
    },
    "required": ["score", "passed", "feedback"],
}
JUDGE_TRACE = TraceCaps(total_chars=3000)


class HarvestedOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    workspace: str | None = None
    pass_score: float = Field(0.7, ge=0, le=1)


def read_harvested(path: Path) -> list[Task]:
    tasks = []
    for lineno, row in iter_jsonl(path):
        where = f"{path}:{lineno}"
        question = text_field(row, "question", where)
        meta = row.get("meta")
        if not isinstance(meta, dict) or not isinstance(meta.get("cluster"), str):
            raise UserError(f"{where}: no meta.cluster; write the task set with `skillgrad harvest`")
        rubric = meta.get("rubric")
        if not isinstance(rubric, list) or not all(isinstance(r, str) for r in rubric):
            raise UserError(f"{where}: meta.rubric must be a list of strings; rerun `skillgrad harvest`")
        assert question is not None
        tasks.append(make_task(row_id(row, where, f"{path.stem}-{lineno}"), question, None, (), **meta))
    if not tasks:
        raise UserError(f"{path}: no tasks; run `skillgrad harvest --out {path}` first")
    return tasks


def split_by_cluster(tasks: list[Task], cfg: BenchmarkConfig) -> dict[Split, list[Task]]:
    """Whole clusters per split, in a seeded order, each to the split furthest below its size."""
    clusters: dict[str, list[Task]] = defaultdict(list)
    for task in tasks:
        clusters[task.meta["cluster"]].append(task)
    order = sorted(clusters)
    random.Random(cfg.seed).shuffle(order)
    sizes = split_sizes(cfg)  # none given: FIXED_SIZES, targets that whole clusters fill in turn
    out: dict[Split, list[Task]] = {s: [] for s in SPLITS}
    for name in order:
        open_splits = [s for s in SPLITS if sizes[s] > len(out[s])]
        if not open_splits:
            break
        split = min(open_splits, key=lambda s: (len(out[s]) / sizes[s], SPLITS.index(s)))
        out[split].extend(clusters[name])
    return out


class HarvestedBenchmark:
    name = "harvested"

    def __init__(self, cfg: Config, tasks: list[Task], options: HarvestedOptions) -> None:
        self.cfg = cfg
        self.options = options
        self.workspace = cfg.resolve_path(options.workspace) if options.workspace else None
        if self.workspace is not None and not self.workspace.is_dir():
            raise UserError(f"benchmark.options.workspace {options.workspace}: not a folder")
        self._splits = split_by_cluster(tasks, cfg.benchmark)
        self._judge: ChatModel | None = None

    def load(self, split: Split) -> list[Task]:
        return list(self._splits[split])

    def use_judge(self, judge: ChatModel) -> None:
        self._judge = judge

    def prepare(self, task: Task, workspace: Path) -> None:
        if self.workspace is not None:
            shutil.copytree(self.workspace, workspace, symlinks=True, dirs_exist_ok=True)

    def judge_messages(self, task: Task, result: AgentResult) -> list[Any]:
        from skillgrad.values import Message

        rubric = "\n".join(f"- {line}" for line in task.meta.get("rubric", [])) or "- Does what was asked."
        user = render(
            "skillgrad.benchmarks",
            "judge_user",
            request=task.question,
            rubric=rubric,
            answer=result.answer.strip() or "(empty)",
            trace=render_view(result.trace, JUDGE_TRACE) or "(no steps)",
        )
        return [Message("system", render("skillgrad.benchmarks", "judge_system")), Message("user", user)]

    def score(self, task: Task, result: AgentResult) -> Score:
        if self._judge is None:
            raise RuntimeError("the harvested benchmark needs a judge (use_judge) before scoring")
        if result.is_error and not result.answer.strip():
            return Score(0.0, False, f"the agent failed before answering: {result.error or 'unknown error'}")
        reply = self._judge.complete(self.judge_messages(task, result), schema=JUDGE_SCHEMA, stage="judge")
        data = reply.data or {}
        value = min(1.0, max(0.0, float(data.get("score", 0.0))))
        passed = bool(data.get("passed")) and value >= self.options.pass_score
        return Score(value, passed, f"judge: {str(data.get('feedback', '')).strip()}")


def create(cfg: Config) -> HarvestedBenchmark:
    options = parse_options(HarvestedOptions, cfg.benchmark)
    path = require_data(cfg, "set benchmark.data to the tasks.jsonl that `skillgrad harvest` wrote")
    return HarvestedBenchmark(cfg, read_harvested(path), options)
