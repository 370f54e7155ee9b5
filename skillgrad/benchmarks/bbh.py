"""`bbh`: one BIG-Bench Hard task, scored by exact match against its target.

Data (`benchmark.data`, required): one task file as the BBH repository ships it, a JSON object
`{"examples": [{"input": ..., "target": ...}, ...]}` (e.g. ../shared/data/bbh/date_understanding.json),
or a JSONL of `{"input", "target", "id"?}` lines. Item ids are `<file stem>-<index>` unless the line
has an `id`. The pool is split by seed like `qa`.

Scoring: exact match of the whole answer with the target after trimming spaces, a trailing full
stop and case (`(B)` = `(b)`, `True` = `true`); nothing else is forgiven, as in BBH's own exact-match
metric: `B` or `(B) 12/25/1937` for `(B)`, or `8 instruments` for `8`, score 0. Feedback is what a
public benchmark gives: `expected '(B)'; got 'B'`; the rule behind a miss is the optimizer's to find.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from skillgrad.benchmarks.qa import PoolBenchmark, make_task, require_data
from skillgrad.benchmarks.splits import iter_jsonl, row_id
from skillgrad.config import Config
from skillgrad.errors import UserError
from skillgrad.values import Score, Task

_SHOWN_CHARS = 160


def normalize(text: str) -> str:
    """Spaces squashed, a trailing full stop dropped, lower case: all exact match forgives."""
    return " ".join(text.split()).removesuffix(".").strip().lower()


def _show(text: str) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= _SHOWN_CHARS else flat[: _SHOWN_CHARS - 3] + "...")


def score_target(prediction: str, target: str) -> Score:
    """1.0 when the answer is the target (see the module docstring), else 0.0; never raises."""
    passed = bool(prediction.strip()) and normalize(prediction) == normalize(target)
    return Score(1.0 if passed else 0.0, passed, f"expected {_show(target)}; got {_show(prediction)}")


def _field(row: Any, key: str, where: str) -> str:
    value = row.get(key) if isinstance(row, dict) else None
    if isinstance(value, int | float) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value.strip():
        raise UserError(
            f"{where}: field '{key}' must be a non-empty string (a BBH item is {{input, target}})"
        )
    return value


def _task(row: Any, where: str, default_id: str) -> Task:
    if not isinstance(row, dict):
        raise UserError(f"{where}: expected an object {{input, target}}, got {type(row).__name__}")
    raw_id = row_id(row, where, default_id)
    return make_task(raw_id, _field(row, "input", where), None, [_field(row, "target", where)])


def _task_file_rows(path: Path) -> list[Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: cannot read ({exc}); check the file") from None
    except json.JSONDecodeError as exc:
        raise UserError(f"{path}: not valid JSON ({exc.msg}, line {exc.lineno}); fix the file") from None
    examples = data.get("examples") if isinstance(data, dict) else None
    if not isinstance(examples, list):
        raise UserError(f'{path}: expected a BBH task file {{"examples": [{{"input", "target"}}, ...]}}')
    return examples


def read_bbh(path: Path) -> list[Task]:
    """Tasks from a BBH task file (`.json`) or a JSONL of items; UserError names the file and item."""
    if not path.is_file():
        raise UserError(
            f"{path}: data file not found; set benchmark.data to a BBH task file (e.g. navigate.json)"
        )
    if path.suffix == ".json":
        rows = _task_file_rows(path)
        tasks = [_task(r, f"{path} examples[{i}]", f"{path.stem}-{i}") for i, r in enumerate(rows)]
    else:
        tasks = [_task(r, f"{path}:{n}", f"{path.stem}-{n}") for n, r in iter_jsonl(path)]
    if not tasks:
        raise UserError(f"{path}: no items; a BBH task has at least one {{input, target}} example")
    return tasks


def create(cfg: Config) -> PoolBenchmark:
    path = require_data(
        cfg, "set benchmark.data (or --data) to a BBH task file, e.g. bbh/date_understanding.json"
    )
    return PoolBenchmark(
        "bbh",
        cfg.benchmark,
        str(path),
        lambda task, answer: score_target(answer, task.answers[0]),
        pool=read_bbh(path),
    )
