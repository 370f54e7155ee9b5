"""A training run and an evaluation, from a config to a finished run folder: everything is
validated first, then the run goes on with its folder locked.

These are the functions the public API (`skillgrad.api`) and, through it, the CLI call. They print
nothing and never exit: notes before a run (a numbered run folder, a finished run) go to `notify`,
progress to the observers, failures are raised. An error raised once the run folder exists carries
it as `run_dir`; Ctrl-C then becomes `Interrupted(run_dir)` and a failed write of the run folder
`TrainingFailed` (its OSError as the cause), so a caller can always say where the finished work is.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from skillgrad.activation.both import DESCRIPTION_DIR
from skillgrad.activation.description import (
    check_description,
    tags_removed,
    with_front_matter,
    without_description_tags,
)
from skillgrad.activation.runs import activation_roles, make_trainer
from skillgrad.activation.world import ActivationPlan, needs_tasks, trigger_config
from skillgrad.atomic import RunLock
from skillgrad.benchmarks.catalog import load_benchmark
from skillgrad.benchmarks.contract import Benchmark, JudgedBenchmark
from skillgrad.budget import Ledger, PaidJournal
from skillgrad.config import Config
from skillgrad.errors import (
    EvaluationFailed,
    Interrupted,
    SkillgradError,
    TrainingFailed,
    UserError,
)
from skillgrad.executors.executor import Executor, open_executor
from skillgrad.loop.accounting import Accounting
from skillgrad.loop.custom_strategies import Custom
from skillgrad.loop.event_bus import Observer
from skillgrad.loop.rollout import mean_score
from skillgrad.loop.stages import RolloutRunner
from skillgrad.observe.formatting import shown_path
from skillgrad.run_folder import RunDir, RunFiles
from skillgrad.session.build import (
    build_roles,
    call_cache,
    check_splits,
    checked_activation,
    checked_benchmark,
    default_out,
    initial_skill,
    open_session,
    redactor_for,
    settle_sizes,
)
from skillgrad.session.costing import over_budget, priced
from skillgrad.session.paths import check_out_folder, check_run_folder
from skillgrad.session.resume import (
    adopt_sizes,
    check_credentials,
    check_objects,
    check_part,
    check_resumable,
    check_same_config,
    earlier_sessions,
    finished_summary,
    load_checkpoint,
)
from skillgrad.values import Rollout, Split, Task

Notify = Callable[[str], None]


def disk_error(exc: OSError) -> str:
    """One line for a failed write: what, where, and the system's reason."""
    where = f" writing {exc.filename}" if exc.filename else ""
    return f"{exc.strerror or type(exc).__name__}{where}"


def train_splits(cfg: Config) -> tuple[Split, ...]:
    return ("train", "val", "test") if cfg.benchmark.test_size else ("train", "val")


def project(cfg: Config, benchmark: Benchmark | None, skill: str | None) -> dict[str, dict[str, Any]]:
    """The priced projection of `train(cfg, skill=skill, benchmark=benchmark)` (None: the
    config's), validated as `train` validates it: the body's (`"body"`) and, with
    optimizer.target description or both, the description's (`"description"`)."""
    text = initial_skill(cfg) if skill is None else skill
    text, _ = without_description_tags(text, cfg.skill.name)
    if benchmark is None:
        benchmark = checked_benchmark(cfg, train_splits(cfg)) if needs_tasks(cfg) else None
    else:
        check_splits(benchmark, cfg, train_splits(cfg))
    return projected_parts(cfg, benchmark, text, checked_activation(cfg, benchmark))


def projected_parts(
    cfg: Config, benchmark: Benchmark | None, skill: str, plan: ActivationPlan | None
) -> dict[str, dict[str, Any]]:
    """Each part's projection (`session.projection`) with its dollars and minutes (`costing`)."""
    from skillgrad.session.projection import estimate

    parts: dict[str, dict[str, Any]] = {}
    if benchmark is not None and cfg.optimizer.target != "description":
        splits: dict[str, list[Task]] = {split: benchmark.load(split) for split in train_splits(cfg)}
        parts["body"] = priced(cfg, estimate(cfg, splits, skill))
    if plan is not None:
        view = trigger_config(cfg, plan.splits)
        triggers = {str(split): tasks for split, tasks in plan.splits.items()}
        initial = with_front_matter(skill, cfg.skill.name)
        repeats = cfg.benchmark.trigger_repeats
        parts["description"] = priced(view, estimate(view, triggers, initial, test_repeats=repeats))
    return parts


def check_projected_cost(
    cfg: Config, benchmark: Benchmark | None, skill: str, plan: ActivationPlan | None
) -> None:
    """A new run whose estimate costs more than budget.max_usd is refused before it starts
    (budget.refuse_over_estimate); without a cap or a known price nothing is projected."""
    if cfg.budget.max_usd is None or not cfg.budget.refuse_over_estimate:
        return
    if (reason := over_budget(cfg, projected_parts(cfg, benchmark, skill, plan))) is not None:
        raise UserError(reason)


def fresh_out(out: Path, notify: Notify) -> Path:
    """`out`, or when it already holds a run, the first free `out-2`, `out-3`, ... (said to `notify`)."""
    if not (out.exists() and any(out.iterdir())):
        return out
    n = 2
    while (candidate := out.with_name(f"{out.name}-{n}")).exists() and any(candidate.iterdir()):
        n += 1
    was, now = shown_path(out), shown_path(candidate)
    if (holder := RunLock(out / RunFiles.LOCK).live_holder()) is not None:
        notify(f"{was} is in use by another skillgrad trainer ({holder}); this run writes to {now}")
    else:
        notify(f"{was} holds an earlier run (`--resume {was}` continues it); this run writes to {now}")
    return candidate


@contextlib.contextmanager
def kept_in(out: Path, failure: type[SkillgradError]) -> Iterator[None]:
    """Errors raised inside name the run folder that keeps the finished work (see the module)."""
    try:
        yield
    except SkillgradError as exc:
        exc.run_dir = exc.run_dir or out
        raise
    except KeyboardInterrupt:
        raise Interrupted(out) from None
    except OSError as exc:  # a full disk, a read-only folder: finished work stays resumable
        error = failure(disk_error(exc))
        error.run_dir = out
        raise error from exc


def resumed_skill(out: Path, given: str, *, explicit: bool) -> str:
    """The initial skill of a resumed run: the one its folder recorded (skills/v0000) when the
    baseline got that far, so a run started from a skill's text resumes without it. A skill the
    caller passed (`explicit`) must be that one."""
    try:
        recorded = RunDir(out).read_skill(0)
    except (OSError, SkillgradError):
        return given
    if explicit and given != recorded:
        raise UserError(
            f"{out}: cannot resume with a different initial skill than the run's skills/v0000; "
            "pass the same skill, or start a new run with another out"
        )
    return recorded


def train(
    cfg: Config,
    out: Path | None,
    *,
    skill: str | None = None,
    benchmark: Benchmark | None = None,
    observers: Sequence[Observer] = (),
    resume: bool = False,
    use_cache: bool = True,
    notify: Notify = print,
    custom: Custom | None = None,
) -> tuple[dict[str, Any], Path]:
    """Train (or continue the run in `out`); the summary and the run folder. `skill` (the initial
    skill's text) and `benchmark` replace the config's `skill.init` and `benchmark.name`, `custom`
    (the strategies handed in as objects) the config's; the run folder names those in
    objects.json, and a resume must hand in the same (`check_objects`).
    `use_cache=False` (`--no-cache`) is the run's `cache.enabled: false`, kept in its config.json."""
    custom = custom or Custom()
    if not use_cache and cfg.cache.enabled:
        cfg = cfg.model_copy(deep=True)
        cfg.cache.enabled = False
    if resume:
        if out is None:
            raise UserError("resume needs the run folder to continue: pass out= (--resume OUT)")
        check_run_folder("out", out)
        adopt_sizes(out, cfg)
        check_same_config(out, cfg)
        check_objects(out, custom.labels, notify)  # what the config cannot name, by label
        if (done := finished_summary(out)) is not None:
            with RunLock(out / RunFiles.LOCK):  # a trainer still holding it is refused, as for any resume
                RunDir(out).remove_stale_temp_files()  # what a SIGKILL left is tidied all the same
                done_note = "this run is finished, nothing to resume (nothing is spent or changed)"
                notify(f"{shown_path(out)}: {done_note}")
            return done, out
        check_credentials(out, cfg, os.environ)  # said once, before anything runs or changes
        check_resumable(out)
        if cfg.optimizer.target == "both":
            check_part(out / DESCRIPTION_DIR)  # the description part's own folder, checked alike
    elif out is not None:
        check_out_folder("out", out)
        out = fresh_out(out, notify)
    if skill is not None:
        check_description(cfg, "skill", skill)
    text = initial_skill(cfg) if skill is None else skill
    text, tags = without_description_tags(text, cfg.skill.name)
    if tags:  # the rule of every description an analyst proposes, so the router never sees one
        source = "skill" if skill is not None else cfg.skill.init
        notify(f"{source}: warning: {tags_removed(tags)}; the run trains the description without them")
    if benchmark is None and needs_tasks(cfg):
        benchmark = load_benchmark(cfg)
    sizes_note = settle_sizes(cfg, benchmark)  # no sizes given: they adapt to the data
    if benchmark is not None:
        check_splits(benchmark, cfg, train_splits(cfg))
    plan = checked_activation(cfg, benchmark)  # optimizer.target description | both: the triggers
    if resume and out is not None:
        text = resumed_skill(out, text, explicit=skill is not None)
    else:  # a resume pays only what is left; the estimate projects a whole run
        check_projected_cost(cfg, benchmark, text, plan)
    out = out or default_out(cfg, "train")
    with open_executor(cfg) as executor:  # may refuse (no cluster): before anything is written
        summary = _train(
            cfg, out, text, benchmark, plan, executor, observers, custom,
            resume=resume, use_cache=use_cache, note=sizes_note,
        )  # fmt: skip
        return summary, out


def _train(
    cfg: Config,
    out: Path,
    skill: str,
    benchmark: Benchmark | None,
    plan: ActivationPlan | None,
    executor: Executor,
    observers: Sequence[Observer],
    custom: Custom,
    *,
    resume: bool,
    use_cache: bool,
    note: str | None = None,
) -> dict[str, Any]:
    """The run itself, `note` (the split sizes chosen) its first event."""
    redactor = redactor_for(cfg)
    journal = PaidJournal(out / RunFiles.PAID)
    ledger = Ledger(cfg.budget, journal)  # the roles' retries are reserved through it (their meter)
    cache = call_cache(cfg, redactor, use_cache)
    judged = isinstance(benchmark, JudgedBenchmark)
    activation = activation_roles(cfg, plan)
    roles = build_roles(
        cfg,
        cache,
        redactor,
        judge=judged,
        journal=journal,
        meter=ledger,
        executor=executor,
        activation=activation,
        custom=custom,
    )
    session = open_session(cfg, out, redactor, observers, resume=resume, journal=journal, ledger=ledger)
    if note is not None:
        session.events.emit("message", text=note)
    try:
        with kept_in(out, TrainingFailed), RunLock(out / RunFiles.LOCK):
            state = None
            if resume:
                session.run.remove_stale_temp_files()  # left by a SIGKILL; the lock is ours now
                state, loaded = load_checkpoint(out, cfg, journal)
                ledger.adopt(loaded)
            session.run.write_config(cfg.portable().to_json())
            if custom.labels:  # what the config cannot name
                session.run.write_json(RunFiles.OBJECTS, dict(custom.labels))
            both = resume and cfg.optimizer.target == "both"
            part = check_part(out / DESCRIPTION_DIR) if both else None  # the description's checkpoint
            tools = (session.run, session.events, session.ledger)
            trainer = make_trainer(cfg, benchmark, roles, *tools, skill, plan, part, custom)
            if resume:
                trainer.earlier_wall_s, trainer.earlier_sessions = earlier_sessions(out)
            return trainer.train(state)
    finally:
        session.events.close()


def evaluate(
    cfg: Config,
    skill: str,
    split: Split,
    out: Path | None,
    *,
    skill_label: str,
    benchmark: Benchmark | None = None,
    observers: Sequence[Observer] = (),
    use_cache: bool = True,
    notify: Notify = print,
    custom: Custom | None = None,
) -> tuple[dict[str, Any], list[Rollout], Path]:
    """Score `skill` on one split: eval.json's report, the rollouts in task order, the folder.
    `skill_label` names the skill in the report (its path, or how it was given); `custom`: an
    agent object as the target."""
    if out is not None:
        check_out_folder("out", out)
    if benchmark is None:
        benchmark = load_benchmark(cfg)
    sizes_note = settle_sizes(cfg, benchmark)  # the same splits as a training run's on that data
    check_splits(benchmark, cfg, (split,))
    out = fresh_out(out, notify) if out is not None else default_out(cfg, "eval")
    with open_executor(cfg) as executor:
        report, rollouts = _evaluate(
            cfg,
            skill,
            skill_label,
            split,
            benchmark,
            out,
            executor,
            observers,
            use_cache,
            custom,
            sizes_note,
        )
        return report, rollouts, out


def _evaluate(
    cfg: Config,
    skill: str,
    skill_label: str,
    split: Split,
    benchmark: Benchmark,
    out: Path,
    executor: Executor,
    observers: Sequence[Observer],
    use_cache: bool,
    custom: Custom | None,
    note: str | None = None,
) -> tuple[dict[str, Any], list[Rollout]]:
    redactor = redactor_for(cfg)
    judged = isinstance(benchmark, JudgedBenchmark)
    cache = call_cache(cfg, redactor, use_cache)
    ledger = Ledger(cfg.budget)
    roles = build_roles(
        cfg, cache, redactor, optimizer=False, judge=judged, meter=ledger, executor=executor, custom=custom
    )
    session = open_session(cfg, out, redactor, observers, ledger=ledger)
    if note is not None:
        session.events.emit("message", text=note)
    try:
        with kept_in(out, EvaluationFailed), RunLock(out / RunFiles.LOCK):
            session.run.write_config(cfg.portable().to_json())
            accounting = Accounting(session.ledger)
            runner = RolloutRunner(cfg, benchmark, roles, session.run, session.events, accounting)
            try:
                tasks = benchmark.load(split)
                results = runner.rollouts(tasks, skill, session.run.eval_dir(split), "eval", 0)
            except SkillgradError as exc:  # a refused key, the budget: the record says why
                session.run.write_eval({"skill": skill_label, "split": split, "error": str(exc)})
                raise
            report = {
                "skill": skill_label,
                "split": split,
                "mean_score": mean_score(results),
                "n": len(results),
                "passed": sum(1 for r in results if r.score.passed),
                "errors": sum(1 for r in results if r.result.is_error),
                "scorer_errors": sum(1 for r in results if r.score.scorer_error is not None),
                "target_backend": roles.target_backend(cfg),
                "target_model": roles.agent.model,
                "usage": session.ledger.to_json(),
                "wall_s": round(session.events.elapsed(), 3),
            }
            session.run.write_eval(report)
            if (note := runner.scorer_note()) is not None:
                session.events.emit("message", text=note)
            if results and report["errors"] == len(results):  # a score of 0 that measured nothing
                raise EvaluationFailed(f"every task failed to run; first error: {results[0].result.error}")
            return report, results
    finally:
        session.events.close()
