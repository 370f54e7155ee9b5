"""What the public API accepts, turned into what a run is built from: a `Config` (from a YAML path,
a dict or a Config), a benchmark (an object with the Benchmark protocol, a list of `Task`s or a
JSONL path, scored by a callable), and the initial skill (a path, its text or a `Skill`).

Nothing the caller passed is changed: a Config is copied before its role backends are resolved.
A run folder records what the config cannot name: a benchmark given as an object or a list as
`benchmark.name: python:<name>` (registry.IN_PYTHON), a skill given as text as `skill.init: null`
with the text itself in `skills/v0000`.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeAlias

from skillgrad.api.skill import Skill
from skillgrad.benchmarks.catalog import IN_PYTHON, check_benchmark_object
from skillgrad.benchmarks.contract import Benchmark
from skillgrad.benchmarks.custom import resolve_scorer, user_scorer
from skillgrad.benchmarks.qa import PoolBenchmark, TaskScorer, read_qa_jsonl, require_data
from skillgrad.config import Config, config_from_data, load_config, resolve_roles
from skillgrad.errors import UserError
from skillgrad.package.wiring import check_initial_package
from skillgrad.session.build import read_skill
from skillgrad.values import Score, Task

ConfigLike: TypeAlias = "str | os.PathLike[str] | Mapping[str, Any] | Config"
Scorer: TypeAlias = Callable[[str, Task], "float | bool | Score"]
BenchmarkLike: TypeAlias = "Benchmark | Sequence[Task] | str | os.PathLike[str]"
SkillLike: TypeAlias = "str | os.PathLike[str] | Skill"
TEXT_SKILL = "(text)"  # how a skill given as text is named in eval.json and errors


def as_config(config: ConfigLike) -> Config:
    """A fresh Config with both role backends resolved; relative paths of a dict or a Config mean
    the current folder (of a YAML file: its folder). UserError as the CLI words it."""
    if isinstance(config, Config):
        cfg = config.model_copy(deep=True)
        cfg.base_dir = Path.cwd() / cfg.base_dir
        resolve_roles(cfg)
        return cfg
    if isinstance(config, Mapping):
        return config_from_data(copy.deepcopy(dict(config)), "config", base_dir=Path.cwd())
    if isinstance(config, str | os.PathLike):
        return load_config(Path(config))
    raise TypeError(f"config: expected a YAML path, a dict or a Config, got {type(config).__name__}")


def _task_scorer(cfg: Config, scorer: Scorer | str | None, source: str) -> TaskScorer:
    if callable(scorer):
        name = getattr(scorer, "__qualname__", None) or type(scorer).__name__
        return user_scorer(name, scorer)
    if scorer is not None:
        cfg.benchmark.scorer = scorer
    if cfg.benchmark.scorer is None:
        raise UserError(
            f"{source}: pass scorer= (a function (answer, task) -> float | bool | Score, or exact, f1, "
            "numeric, contains, regex), or set benchmark.scorer"
        )
    return resolve_scorer(cfg)


def _task_list(benchmark: Sequence[Any]) -> list[Task]:
    tasks = list(benchmark)
    for index, task in enumerate(tasks):
        if not isinstance(task, Task):
            raise UserError(
                f"benchmark[{index}]: {type(task).__name__} is not a skillgrad.Task; "
                "make each item Task(id=..., question=..., answers=(...))"
            )
    if not tasks:
        raise UserError(
            "benchmark: the list of tasks is empty; pass at least 5 (1 to train on, 4 to validate), "
            "or as many as benchmark.train_size + val_size"
        )
    return tasks


def as_benchmark(
    cfg: Config, benchmark: BenchmarkLike | None, scorer: Scorer | str | None
) -> Benchmark | None:
    """The benchmark to run, or None for the one the config names (then `cfg` holds all of it).
    Updates `cfg.benchmark` so that the run folder records where the tasks came from."""
    if benchmark is None:
        if scorer is None:
            return None
        if cfg.benchmark.name != "custom":
            raise UserError(
                f"scorer=: benchmark '{cfg.benchmark.name}' scores its own tasks; a scorer goes with a "
                "list of tasks, a JSONL path or the custom benchmark"
            )
        benchmark = require_data(cfg, "set benchmark.data to a JSONL file of {id, question, answers[]}")
    if isinstance(benchmark, str | os.PathLike):
        path = Path(benchmark).expanduser().resolve()
        cfg.benchmark.data = str(path)
        if not callable(scorer):  # a scorer by name: the config says it all (and the CLI resumes it)
            cfg.benchmark.name = "custom"
            cfg.benchmark.scorer = scorer or cfg.benchmark.scorer
            return None
        cfg.benchmark.name = f"{IN_PYTHON}custom"
        score = _task_scorer(cfg, scorer, str(path))
        return PoolBenchmark(cfg.benchmark.name, cfg.benchmark, str(path), score, pool=read_qa_jsonl(path))
    if isinstance(benchmark, Sequence):
        tasks = _task_list(benchmark)
        cfg.benchmark.name = f"{IN_PYTHON}tasks"
        score = _task_scorer(cfg, scorer, "tasks")
        return PoolBenchmark(cfg.benchmark.name, cfg.benchmark, "tasks", score, pool=tasks)
    check_benchmark_object(benchmark, f"benchmark {type(benchmark).__name__}")
    if scorer is not None:
        raise UserError(
            f"scorer=: benchmark '{benchmark.name}' scores its own tasks (its score method); drop scorer="
        )
    cfg.benchmark.name = f"{IN_PYTHON}{benchmark.name}"
    return benchmark


def _names_a_path(text: str) -> bool:
    """A one-line text that is the name of an existing file or folder (a path passed as text)."""
    if "\n" in text or not text.strip() or len(text) > 1024:
        return False
    try:
        return Path(text).expanduser().exists()
    except (OSError, ValueError):  # a name too long for the file system, a NUL
        return False


def as_skill(cfg: Config, skill: SkillLike | None, *, initial: bool = True) -> str | None:
    """The skill's text, or None for the config's `skill.init`. As a run's `initial` skill, a path
    is recorded as `skill.init`, a text (or a Skill) replaces it (the run keeps it as
    skills/v0000), and either must fit `skill.max_chars` and `optimizer.edit_mode`."""
    if skill is None:
        return None
    path: Path | None = None
    if isinstance(skill, os.PathLike):
        path = Path(skill).expanduser().resolve()
        text = read_skill(path)
    elif isinstance(skill, Skill):
        text = skill.text
    elif isinstance(skill, str):
        if _names_a_path(skill):
            raise UserError(
                f"skill={skill!r} is taken as the skill's text, but it names a file; pass "
                f"pathlib.Path({skill!r}) to read it"
            )
        text = skill
    else:
        raise TypeError(f"skill: expected a path, the skill's text or a Skill, got {type(skill).__name__}")
    if initial:
        cfg.skill.init = None if path is None else str(path)
        check_initial_package(cfg, path or Path(TEXT_SKILL), text)
    return text
