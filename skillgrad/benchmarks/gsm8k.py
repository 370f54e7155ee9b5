"""`gsm8k`: grade-school math word problems, scored by exact numeric match.

Data: `benchmark.data` is a JSONL in the original dataset's form, `{"question": ..., "answer":
"<worked solution> #### 18"}` (e.g. ../shared/data/gsm8k/test.jsonl); an `id` field is optional
(default `gsm8k-<line>`). Without `benchmark.data` the public `openai/gsm8k` dataset is read through
the `datasets` package (split `options.hf_split`, default test). The file is split by seed.

Scoring (scoring.score_numeric): the answer's number is the last `\\boxed{}`, else the text after
the last `####`, else the last number; commas, currency and units are ignored; the value must equal
the gold number exactly. Feedback shows the expected number. The worked solution is kept in
`task.meta['solution']` (not shown to the target).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from skillgrad.benchmarks.qa import PoolBenchmark, answer_scorer, make_task
from skillgrad.benchmarks.scoring import extract_number, format_number, score_numeric
from skillgrad.benchmarks.splits import hub_rows, iter_jsonl, parse_options, row_id, text_field
from skillgrad.config import Config
from skillgrad.errors import UserError
from skillgrad.values import Task


class GSM8KOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    hf_split: Literal["train", "test"] = "test"


def gsm8k_task(row: dict[str, Any], where: str, default_id: str) -> Task:
    question = text_field(row, "question", where)
    solution = text_field(row, "answer", where)
    assert question is not None and solution is not None  # required fields
    if "####" not in solution:
        raise UserError(f"{where}: field 'answer' has no '#### <number>' final answer")
    gold = extract_number(solution.rsplit("####", 1)[1])
    if gold is None:
        raise UserError(f"{where}: no number after '####' in field 'answer'")
    raw_id = row_id(row, where, default_id)
    return make_task(raw_id, question, None, [format_number(gold[1])], solution=solution)


def read_gsm8k(path: Path) -> list[Task]:
    tasks = [gsm8k_task(row, f"{path}:{n}", f"gsm8k-{n}") for n, row in iter_jsonl(path)]
    if not tasks:
        raise UserError(f"{path}: no items; expected JSONL lines of {{question, answer}}")
    return tasks


def _hub_tasks(split: str) -> list[Task]:
    hint = "set --data PATH to a GSM8K JSONL (the openai/grade-school-math test.jsonl)"
    rows = hub_rows("gsm8k", "openai/gsm8k", split, hint, name="main")
    return [
        gsm8k_task(dict(row), f"openai/gsm8k[{split}] row {i}", f"gsm8k-{split}-{i}")
        for i, row in enumerate(rows)
    ]


def create(cfg: Config) -> PoolBenchmark:
    options = parse_options(GSM8KOptions, cfg.benchmark)
    if cfg.benchmark.data:
        path = cfg.resolve_path(cfg.benchmark.data)
        source, tasks = str(path), read_gsm8k(path)
    else:
        source, tasks = f"openai/gsm8k[{options.hf_split}] (datasets)", _hub_tasks(options.hf_split)
    return PoolBenchmark("gsm8k", cfg.benchmark, source, answer_scorer(score_numeric), pool=tasks)
