"""`custom`: your own benchmark as one JSONL file plus a scorer.

Data (`benchmark.data`): `{"id": ..., "question": ..., "context": ... (optional), "answers": [...]}`
per line, exactly as for `qa`; split by seed.

Scorer (`benchmark.scorer`, required): a built-in name -
  exact     SQuAD-normalised exact match
  f1        token F1 as value, passed = exact match
  numeric   exact numeric match (last number, ####, \\boxed{}; commas/units ignored)
  contains  a normalised answer appears in the reply
  regex     each answer is a regex searched in the reply (case-insensitive)
- or `module:function` with signature `fn(answer: str, task: Task) -> Score | float | bool`
(a float is the value in [0, 1], passed when it is 1; a bool is 1 or 0). An exception raised by a
user scorer, or a result outside that contract (a value that is not a finite number in [0, 1], a
`passed` that is not a bool or passes a value of 0, another type), fails that task with the reason
as `Score.scorer_error` (benchmarks.contract.checked_score): one odd reply cannot stop a run, and a
scorer's bug never counts as a pass.
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Callable

from pydantic import BaseModel, ConfigDict

from skillgrad.benchmarks.catalog import import_object
from skillgrad.benchmarks.contract import checked_score, scorer_failed
from skillgrad.benchmarks.qa import PoolBenchmark, TaskScorer, answer_scorer, read_qa_jsonl, require_data
from skillgrad.benchmarks.scoring import SCORERS
from skillgrad.benchmarks.splits import parse_options
from skillgrad.config import Config
from skillgrad.errors import UserError
from skillgrad.values import Score, Task

UserScorer = Callable[[str, Task], "Score | float | bool"]


def _coerce(value: object, spec: str) -> Score:
    """A user scorer's result as a Score, checked (never clipped: 2.0 is a bug, not a pass)."""
    name = f"scorer {spec}"
    if isinstance(value, bool):
        return Score(float(value), value, f"{name} returned {value}")
    if isinstance(value, numbers.Real) and not isinstance(value, Score):
        number = float(value)
        return checked_score(Score(number, number == 1.0, f"{name} returned {number:g}"), name)
    if not isinstance(value, Score):
        return scorer_failed(name, f"returned {type(value).__name__}; expected Score, float or bool")
    return checked_score(value, name)


def user_scorer(spec: str, fn: UserScorer) -> TaskScorer:
    def score(task: Task, answer: str) -> Score:
        try:
            return _coerce(fn(answer, task), spec)
        except Exception as exc:  # a user scorer's bug must cost one task, not the whole run
            return scorer_failed(f"scorer {spec}", f"raised {type(exc).__name__}: {str(exc)[:200]}")

    return score


def resolve_scorer(cfg: Config) -> TaskScorer:
    spec = cfg.benchmark.scorer
    names = ", ".join(SCORERS)
    if not spec:
        raise UserError(
            f"benchmark.scorer is required for the custom benchmark; use one of {names}, or module:function"
        )
    if spec in SCORERS:
        return answer_scorer(SCORERS[spec])
    if ":" not in spec:
        raise UserError(f"benchmark.scorer {spec!r}: unknown scorer; allowed: {names}, or module:function")
    fn = import_object(spec, "benchmark.scorer", cfg.base_dir)
    if not callable(fn):
        raise UserError(f"benchmark.scorer {spec!r}: not callable; define fn(answer, task) -> Score | float")
    return user_scorer(spec, fn)


def _check_patterns(tasks: list[Task], source: str) -> None:
    """Invalid regexes are a data error: report them at load time, not as zero scores later."""
    for task in tasks:
        for pattern in task.answers:
            try:
                re.compile(pattern)
            except re.error as exc:
                line = task.meta.get("line", "?")
                raise UserError(f"{source}:{line}: answer {pattern!r} is not a valid regex ({exc})") from None


class CustomOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")  # no options yet: a typo'd key must not pass silently


def create(cfg: Config) -> PoolBenchmark:
    parse_options(CustomOptions, cfg.benchmark)
    scorer = resolve_scorer(cfg)
    path = require_data(cfg, "set benchmark.data to a JSONL file of {id, question, context?, answers[]}")
    tasks = read_qa_jsonl(path)
    if cfg.benchmark.scorer == "regex":
        _check_patterns(tasks, str(path))
    return PoolBenchmark("custom", cfg.benchmark, str(path), scorer, pool=tasks)
