"""`searchqa`: Jeopardy clues answered from search-result snippets (SearchQA, MRQA version).

Data, in this order:
1. `benchmark.data`: a local JSONL of `{id, question, context, answers}` (as in
   ../shared/data/searchqa_sample), split by seed like `qa`.
2. Otherwise the public dataset `lucadiliello/searchqa` through the `datasets` package (install
   the `benchmarks` extra; needs network on first use, then the Hugging Face cache). Its `key`
   field is the task id.

`benchmark.options.manifest` restricts items to an id manifest (`{"id": ...}` entries, a JSON array
or JSONL): a folder with `train/items.json`, `val/items.json`, `test/items.json` (the layout of
../shared/data/searchqa_splits) fixes the split membership, and each split is a seeded sample of its
configured size; a single file restricts the pool before the seeded split. Without a manifest the
dataset's validation split is the pool. Contexts are long: agent targets get them as a file.

Options: `metric` (f1 | em, as in qa), `manifest` (path), `hf_dataset` (default
lucadiliello/searchqa).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from skillgrad.benchmarks.qa import PoolBenchmark, answer_scorer, make_task, read_qa_jsonl
from skillgrad.benchmarks.scoring import score_exact, score_f1
from skillgrad.benchmarks.splits import hub_rows, parse_options, read_id_manifest
from skillgrad.config import Config
from skillgrad.errors import UserError
from skillgrad.values import SPLITS, Split, Task


class SearchQAOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    metric: Literal["f1", "em"] = "f1"
    manifest: str | None = None
    hf_dataset: str = "lucadiliello/searchqa"


def _manifest_ids(path: Path) -> dict[Split, list[str]] | list[str]:
    if path.is_dir():
        return {
            s: read_id_manifest(path / s / "items.json")
            for s in SPLITS
            if (path / s / "items.json").is_file()
        }
    return read_id_manifest(path)


def _hub_tasks(dataset: str, wanted: set[str] | None) -> list[Task]:
    # Manifest ids may come from either hub split; without a manifest only validation is used.
    splits = ("train", "validation") if wanted is not None else ("validation",)
    tasks = []
    hint = (
        "set --set benchmark.data=PATH to a JSONL of {id, question, context, answers} "
        "(e.g. --data my_searchqa.jsonl)"
    )
    rows = (row for split in splits for row in hub_rows("searchqa", dataset, split, hint))
    for row in rows:
        key = str(row["key"])
        if wanted is None or key in wanted:
            tasks.append(make_task(key, row["question"], row["context"], [str(a) for a in row["answers"]]))
    return tasks


def _restrict(tasks: list[Task], ids: list[str], source: str) -> list[Task]:
    by_id = {str(t.meta["source_id"]): t for t in tasks}
    missing = [i for i in ids if i not in by_id]
    if missing:
        raise UserError(
            f"{source}: {len(missing)} manifest id(s) not in the data (first: {missing[0]!r}); "
            f"use data that contains them or drop benchmark.options.manifest"
        )
    return [by_id[i] for i in ids]


def create(cfg: Config) -> PoolBenchmark:
    options = parse_options(SearchQAOptions, cfg.benchmark)
    manifest = _manifest_ids(cfg.resolve_path(options.manifest)) if options.manifest else None
    wanted: set[str] | None = None
    if manifest is not None:
        wanted = (
            {i for ids in manifest.values() for i in ids} if isinstance(manifest, dict) else set(manifest)
        )
    if cfg.benchmark.data:
        path = cfg.resolve_path(cfg.benchmark.data)
        source, tasks = str(path), read_qa_jsonl(path)
    else:
        source, tasks = f"{options.hf_dataset} (datasets)", _hub_tasks(options.hf_dataset, wanted)
    scorer = answer_scorer(score_f1 if options.metric == "f1" else score_exact)
    if isinstance(manifest, dict):
        presplit = {s: _restrict(tasks, ids, source) for s, ids in manifest.items()}
        return PoolBenchmark("searchqa", cfg.benchmark, source, scorer, presplit=presplit)
    pool = _restrict(tasks, manifest, source) if manifest is not None else tasks
    return PoolBenchmark("searchqa", cfg.benchmark, source, scorer, pool=pool)
