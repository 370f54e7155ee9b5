"""Trigger sets: queries that should and should not load the skill, split train / val / test,
and the benchmark that scores one run of a query by whether the session loaded the skill.

`benchmark.triggers` is a JSONL of `{"query": ..., "should_trigger": true|false}` (an `id` is
optional). Without it the benchmark's own task questions are the queries that should load the
skill, and `benchmark.trigger_negatives` (a JSONL of `{"query": ...}` or `{"question": ...}`: a
file of unrelated requests, or a neighbouring skill's tasks) those that should not. The pool is
split by `benchmark.trigger_split` shares within each label (seeded by `benchmark.seed`), so every
split holds both kinds; val needs at least one of each.

A query is a Task (its question the query; `meta.should_trigger` the label; the expected answer
says which) so the trainer's rollouts, racing validation, gate, cache and report all apply. Its
score is 1 when the skill was loaded exactly when it should be.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

from skillgrad.activation.detect import loaded_skills
from skillgrad.benchmarks.contract import Benchmark
from skillgrad.benchmarks.splits import check_unique, iter_jsonl, row_id, safe_task_id, text_field
from skillgrad.config import Config
from skillgrad.errors import UserError
from skillgrad.skilldoc import normalize_text
from skillgrad.values import SPLITS, AgentResult, Score, Split, Task

SHOULD = "loads the skill"
SHOULD_NOT = "does not load the skill"
NONE = "none"  # a router's answer when no skill fits


def trigger_task(task_id: str, query: str, should: bool) -> Task:
    return Task(
        safe_task_id(task_id),
        query,
        answers=(SHOULD if should else SHOULD_NOT,),
        meta={"should_trigger": should},
    )


def should_trigger(task: Task) -> bool:
    return bool(task.meta.get("should_trigger"))


def is_trigger_task(task: Task) -> bool:
    return isinstance(task.meta.get("should_trigger"), bool)


def read_triggers(path: Path) -> list[Task]:
    """`{query, should_trigger, id?}` rows (UserError naming the line for a bad one)."""
    tasks = []
    for lineno, row in iter_jsonl(path):
        where = f"{path}:{lineno}"
        query = text_field(row, "query", where) or ""
        should = row.get("should_trigger")
        if not isinstance(should, bool):
            raise UserError(f"{where}: field 'should_trigger' must be true or false")
        tasks.append(trigger_task(row_id(row, where, f"t{lineno}"), query, should))
    return tasks


def read_negatives(path: Path) -> list[Task]:
    """Requests that must not load the skill: `{query}` or `{question}` rows (a benchmark's file)."""
    tasks = []
    for lineno, row in iter_jsonl(path):
        where = f"{path}:{lineno}"
        query = text_field(row, "query" if "query" in row else "question", where) or ""
        tasks.append(trigger_task(f"neg-{row_id(row, where, str(lineno))}", query, False))
    return tasks


def task_positives(benchmark: Benchmark, cfg: Config) -> list[Task]:
    """The benchmark's task questions (every split the config sizes), as queries that should load it."""
    sizes = {
        "train": cfg.benchmark.train_size,
        "val": cfg.benchmark.val_size,
        "test": cfg.benchmark.test_size,
    }
    split_tasks = [t for split in SPLITS if sizes[split] for t in benchmark.load(split)]
    return [trigger_task(f"pos-{t.id}", t.question, True) for t in split_tasks]


def _checked(pool: list[Task], source: str) -> list[Task]:
    """The pool without repeated queries; a query with both labels is the user's to fix."""
    seen: dict[str, Task] = {}
    for task in pool:
        key = normalize_text(task.question)
        other = seen.get(key)
        if other is not None and should_trigger(other) != should_trigger(task):
            raise UserError(
                f"{source}: the query {task.question[:80]!r} is listed both as one that should "
                "load the skill and as one that should not; keep one"
            )
        seen.setdefault(key, task)
    kept = list(seen.values())
    check_unique(kept, source)
    return kept


def trigger_pool(cfg: Config, benchmark: Benchmark | None) -> list[Task]:
    """Every labelled query of the run (UserError for missing or broken input)."""
    b = cfg.benchmark
    if b.triggers:
        return _checked(read_triggers(cfg.resolve_path(b.triggers)), "benchmark.triggers")
    if not b.trigger_negatives:
        raise UserError(
            f"optimizer.target={cfg.optimizer.target} needs queries that should not load the skill: set "
            'benchmark.trigger_negatives to a JSONL of {"query": ...} requests, or benchmark.triggers '
            'to a JSONL of {"query", "should_trigger"}'
        )
    assert benchmark is not None, "the task benchmark gives the positives"
    negatives = read_negatives(cfg.resolve_path(b.trigger_negatives))
    return _checked(task_positives(benchmark, cfg) + negatives, "benchmark.trigger_negatives")


def _cut(count: int, shares: Sequence[float]) -> tuple[int, int, int]:
    """(train, val, test) sizes of `count` items: val and a non-zero test share get at least one."""
    total = sum(shares)
    val = min(count, max(1, round(count * shares[1] / total)))
    test = round(count * shares[2] / total)
    if shares[2] > 0 and test == 0 and count >= 3:
        test = 1
    test = min(test, count - val)
    return count - val - test, val, test


def split_triggers(pool: list[Task], cfg: Config) -> dict[Split, list[Task]]:
    """The pool split by `benchmark.trigger_split` within each label, seeded by `benchmark.seed`."""
    splits: dict[Split, list[Task]] = {s: [] for s in SPLITS}
    for label in (True, False):
        items = sorted((t for t in pool if should_trigger(t) == label), key=lambda t: t.id)
        random.Random(f"{cfg.benchmark.seed}:{label}").shuffle(items)
        train, val, _ = _cut(len(items), cfg.benchmark.trigger_split)
        splits["train"] += items[:train]
        splits["val"] += items[train : train + val]
        splits["test"] += items[train + val :]
    labels = [should_trigger(t) for t in splits["val"]]
    positives = sum(should_trigger(t) for t in pool)
    if not splits["train"] or all(labels) or not any(labels):
        raise UserError(
            f"the trigger set has {positives} queries that should load the skill and {len(pool) - positives} "
            "that should not: too few to split (benchmark.trigger_split) into a train split and a val "
            "split with both kinds; add queries"
        )
    return splits


class TriggerBenchmark:
    """Benchmark over the queries: a run scores 1 when the skill was loaded exactly when it should
    be. `harness`: loading is read from the trace (`detect`); else the answer is a router's pick."""

    name = "triggers"

    def __init__(
        self, splits: dict[Split, list[Task]], skill_name: str, installed: list[str], harness: bool
    ) -> None:
        self.splits = splits
        self.skill_name = skill_name
        self.installed = installed  # every skill in the workspace, ours first
        self.harness = harness

    def load(self, split: Split) -> list[Task]:
        return list(self.splits[split])

    def loaded(self, result: AgentResult) -> list[str]:
        if self.harness:
            return loaded_skills(result.trace, self.installed)
        pick = result.answer.strip()
        return [pick] if pick in self.installed else []

    def score(self, task: Task, result: AgentResult) -> Score:
        loaded = self.loaded(result)
        triggered = self.skill_name in loaded
        others = [n for n in loaded if n != self.skill_name]
        instead = (
            f"; it loaded {', '.join(others)}" if others else ("" if triggered else "; it loaded no skill")
        )
        if should_trigger(task):
            feedback = (
                "loaded the skill, as it should" if triggered else "should have loaded the skill but did not"
            )
        else:
            feedback = (
                "should not have loaded the skill but did"
                if triggered
                else "did not load the skill, as it should not"
            )
        right = triggered == should_trigger(task)
        return Score(1.0 if right else 0.0, right, feedback + instead)
