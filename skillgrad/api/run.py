"""`skillgrad.train` and `skillgrad.evaluate`: the public entry points (docs/api.md). The CLI's
`train` and `eval` are these calls with a terminal observer.

Each call validates everything it was given before anything is written (a `UserError` worded as
the CLI words it), then runs with its run folder locked; the process is left as it was found
(`api.scope`). Errors are raised, never turned into exit codes; one raised once the run folder
exists names it as `run_dir` (skillgrad.errors).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from skillgrad.api.events import ObserverLike, announce, as_observers, default_printer
from skillgrad.api.inputs import (
    TEXT_SKILL,
    BenchmarkLike,
    ConfigLike,
    Scorer,
    SkillLike,
    as_benchmark,
    as_config,
    as_skill,
)
from skillgrad.api.results import EvalResult, TaskResult, TrainResult
from skillgrad.api.scope import PROCESS
from skillgrad.api.skill import Skill
from skillgrad.api.strategy_args import AgentLike, GateLike, ParentLike, SearchLike, as_strategies
from skillgrad.config import Config
from skillgrad.errors import UserError
from skillgrad.loop.event_bus import Observer
from skillgrad.run_folder import RunDir
from skillgrad.session import commands
from skillgrad.session.build import default_out
from skillgrad.values import SPLITS, Split


def _folder(out: str | os.PathLike[str] | None, cfg: Config, kind: str) -> Path:
    """The run folder, absolute: a relative `out` (and the default, runs/<time>-<kind>-<name>)
    means the folder the call started in, whatever the call's code does to the current folder."""
    return (Path(out).expanduser() if out is not None else default_out(cfg, kind)).absolute()


def train(
    config: ConfigLike,
    *,
    benchmark: BenchmarkLike | None = None,
    scorer: Scorer | str | None = None,
    skill: SkillLike | None = None,
    out: str | os.PathLike[str] | None = None,
    observers: Sequence[ObserverLike] = (),
    resume: bool = False,
    use_cache: bool = True,
    gate: GateLike | None = None,
    search: SearchLike | None = None,
    parent: ParentLike | None = None,
    agent: AgentLike | None = None,
    quiet: bool = False,
) -> TrainResult:
    """Train a skill; the finished run's result.

    `config`: a YAML path, a dict in the YAML's shape, or a `Config`. `benchmark` (default: the
    config's) is an object with the Benchmark protocol, a list of `Task`s (split by the config's
    `benchmark.*_size` and `seed`) or a JSONL path of `{id, question, context?, answers}` rows;
    `scorer`, for a list or a JSONL file, is a function `(answer, task) -> float | bool | Score`
    or a built-in scorer's name. `skill` (default: `skill.init`) is a `Path` to a file or a
    package folder, the skill's text, or a `Skill`. `out` (default `runs/<time>-train-<name>`)
    that already holds a run becomes `out-2`, ... (said as a `message` event); `resume=True`
    continues the run in `out` instead, paying nothing twice. `observers` get every progress event.
    `gate`, `search`, `parent` and `agent` (default: the config's) are each a name (as
    `optimizer.gate`, `optimizer.search`, `optimizer.parent`, `model.target_backend`) or an object
    implementing `Gate`, a factory of a `Search`, a `ParentRule` or an `Agent` (docs/api.md).
    The run's progress is printed as the CLI prints it (`quiet=True`: nothing printed).

    Raises UserError (bad input, before anything is written), FatalBackendError (a key or quota
    refused), TrainingFailed, Interrupted (Ctrl-C); a budget cap is not an error: the run stops
    with `stopped == "budget"` and its best skill."""
    with PROCESS.call():
        cfg = as_config(config)
        bench = as_benchmark(cfg, benchmark, scorer)
        text = as_skill(cfg, skill)
        watchers = as_observers(observers)
        custom = as_strategies(cfg, gate=gate, search=search, parent=parent, agent=agent)
        with _printing(watchers, quiet):
            summary, run_dir = commands.train(
                cfg,
                _folder(out, cfg, "train"),
                skill=text,
                benchmark=bench,
                observers=watchers,
                resume=resume,
                use_cache=use_cache,
                notify=lambda line: announce(watchers, line),
                custom=custom,
            )
        best = RunDir(run_dir).best_skill_path()
        return TrainResult.from_summary(run_dir, summary, Skill.read(best))


def evaluate(
    config: ConfigLike,
    skill: SkillLike,
    *,
    split: Split = "test",
    benchmark: BenchmarkLike | None = None,
    scorer: Scorer | str | None = None,
    out: str | os.PathLike[str] | None = None,
    observers: Sequence[ObserverLike] = (),
    use_cache: bool = True,
    agent: AgentLike | None = None,
    quiet: bool = False,
) -> EvalResult:
    """Score `skill` (a `Path`, the skill's text, or a `Skill` such as `TrainResult.best_skill`)
    on one split of the benchmark (`config`, `benchmark`, `scorer` and `agent` as for `train`). `out`
    (default `runs/<time>-eval-<name>`) keeps every rollout and `eval.json`. Progress is printed
    unless `quiet`, as for `train`.

    Raises UserError, FatalBackendError, BudgetExceeded (a cap of the budget section: a partial
    score would mean nothing), EvaluationFailed (every task failed to run), Interrupted."""
    with PROCESS.call():
        if split not in SPLITS:
            raise UserError(f"split {split!r}: allowed values: {', '.join(SPLITS)}")
        cfg = as_config(config)
        bench = as_benchmark(cfg, benchmark, scorer)
        label = _skill_label(skill)
        text = as_skill(cfg, skill, initial=False)
        assert text is not None  # a skill was given
        watchers = as_observers(observers)
        custom = as_strategies(cfg, agent=agent)
        with _printing(watchers, quiet):
            report, rollouts, run_dir = commands.evaluate(
                cfg,
                text,
                split,
                _folder(out, cfg, "eval"),
                skill_label=label,
                benchmark=bench,
                observers=watchers,
                use_cache=use_cache,
                notify=lambda line: announce(watchers, line),
                custom=custom,
            )
        return EvalResult.from_report(run_dir, report, tuple(TaskResult.of(r) for r in rollouts))


@contextlib.contextmanager
def _printing(watchers: list[Observer], quiet: bool) -> Iterator[None]:
    """The call's own progress printer (`default_printer`) among `watchers` while it runs, closed
    (a live view stopped) however the call ends."""
    printer = default_printer(quiet)
    if printer is not None:
        watchers.insert(0, printer)
    try:
        yield
    finally:
        if printer is not None:
            printer.close()


def _skill_label(skill: SkillLike) -> str:
    if isinstance(skill, os.PathLike):
        return str(Path(skill))
    if isinstance(skill, Skill) and skill.path is not None:
        return str(skill.path)
    return TEXT_SKILL
