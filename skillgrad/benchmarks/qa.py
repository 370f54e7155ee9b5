"""`qa`: question answering from one JSONL file, scored by SQuAD exact match and token F1.

Data: one JSON object per line, `{"id": ..., "question": ..., "context": ... (optional),
"answers": [...]}`; `id` defaults to `<file stem>-<line>`. The file is split into train / val /
test by `benchmark.seed` and the sizes (see splits.py).

Scoring: the value is the best token F1 over the gold answers (a smooth signal the gate can see
improve), and `passed` is exact match. `benchmark.options.metric: em` makes the value exact match.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict

from skillgrad.benchmarks.scoring import Scorer, score_exact, score_f1
from skillgrad.benchmarks.splits import (
    answers_field,
    iter_jsonl,
    parse_options,
    presplit_size,
    row_id,
    safe_task_id,
    split_pool,
    split_sizes,
    take_split,
    text_field,
)
from skillgrad.config import BenchmarkConfig, Config
from skillgrad.errors import UserError
from skillgrad.values import SPLITS, Score, Split, Task

if TYPE_CHECKING:
    from skillgrad.values import AgentResult

TaskScorer = Callable[[Task, str], Score]


class QAOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    metric: Literal["f1", "em"] = "f1"


def make_task(
    raw_id: str, question: str, context: str | None, answers: Sequence[str], **meta: object
) -> Task:
    """A Task whose id is folder-safe; the original id is kept in `meta['source_id']`."""
    return Task(
        id=safe_task_id(raw_id),
        question=question,
        context=context,
        answers=tuple(answers),
        meta={"source_id": raw_id, **meta},
    )


def read_qa_jsonl(path: Path) -> list[Task]:
    """Tasks from a `{id, question, context?, answers[]}` JSONL file (UserError names file:line)."""
    tasks = []
    for lineno, row in iter_jsonl(path):
        where = f"{path}:{lineno}"
        raw_id = row_id(row, where, f"{path.stem}-{lineno}")
        question = text_field(row, "question", where)
        context = text_field(row, "context", where, required=False)
        assert question is not None  # required=True guarantees it
        tasks.append(make_task(raw_id, question, context, answers_field(row, where), line=lineno))
    if not tasks:
        raise UserError(f"{path}: no items; add one JSON object per line")
    return tasks


def require_data(cfg: Config, hint: str) -> Path:
    """The resolved `benchmark.data` path, or a UserError saying how to set it."""
    if not cfg.benchmark.data:
        raise UserError(f"benchmark '{cfg.benchmark.name}' needs data: {hint}")
    return cfg.resolve_path(cfg.benchmark.data)


def answer_scorer(scorer: Scorer) -> TaskScorer:
    return lambda task, answer: scorer(answer, task.answers)


class PoolBenchmark:
    """A benchmark over an in-memory task pool, split by seed (or pre-split), scored from the
    agent's answer text. Used by qa, searchqa, gsm8k and custom."""

    def __init__(
        self,
        name: str,
        cfg: BenchmarkConfig,
        source: str,
        scorer: TaskScorer,
        pool: list[Task] | None = None,
        presplit: dict[Split, list[Task]] | None = None,
    ) -> None:
        self.name = name
        self.cfg = cfg
        self.source = source
        self._scorer = scorer
        self._pool = pool
        self._presplit = presplit

    def planned_sizes(self) -> tuple[dict[Split, int], int]:
        """The sizes `load` cuts the data to (with none given, they adapt to it: splits.py), and
        how many items the data holds."""
        if self._presplit is not None:
            held = {s: len(self._presplit.get(s, [])) for s in SPLITS}
            return {s: presplit_size(self.cfg, s, held[s]) for s in SPLITS}, sum(held.values())
        pool = self._pool or []
        return split_sizes(self.cfg, len(pool), self.source), len(pool)

    def load(self, split: Split) -> list[Task]:
        if self._presplit is not None:
            return take_split(self._presplit.get(split, []), split, self.cfg, f"{self.source} [{split}]")
        return split_pool(self._pool or [], split, self.cfg, self.source)

    def score(self, task: Task, result: AgentResult) -> Score:
        if result.is_error and not result.answer.strip():
            return Score(0.0, False, f"the agent failed before answering: {result.error or 'unknown error'}")
        return self._scorer(task, result.answer)


def create(cfg: Config) -> PoolBenchmark:
    options = parse_options(QAOptions, cfg.benchmark)
    path = require_data(
        cfg, "pass --data PATH (or set benchmark.data) to a JSONL file of {id, question, context?, answers[]}"
    )
    scorer = score_f1 if options.metric == "f1" else score_exact
    return PoolBenchmark("qa", cfg.benchmark, str(path), answer_scorer(scorer), pool=read_qa_jsonl(path))
