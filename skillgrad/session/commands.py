"""`skillgrad train` and `skillgrad eval`: validate everything, then run with a locked run folder."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from skillgrad.activation.both import DESCRIPTION_DIR
from skillgrad.activation.description import with_front_matter
from skillgrad.activation.runs import activation_roles, make_trainer
from skillgrad.activation.world import ActivationPlan, needs_tasks, plan_activation, trigger_config
from skillgrad.atomic import RunLock
from skillgrad.backend_specs import spec_for
from skillgrad.benchmarks.base import Benchmark, JudgedBenchmark
from skillgrad.budget import PaidJournal
from skillgrad.config import Config
from skillgrad.errors import FatalBackendError
from skillgrad.executors.base import Executor, open_executor
from skillgrad.loop.accounting import Accounting
from skillgrad.loop.rollout import mean_score
from skillgrad.loop.stages import RolloutRunner
from skillgrad.loop.trainer import TrainingFailed
from skillgrad.run_folder import RunDir, RunFiles
from skillgrad.session.build import (
    build_roles,
    call_cache,
    checked_benchmark,
    default_out,
    initial_skill,
    open_session,
    read_skill,
    redactor_for,
)
from skillgrad.session.resume import (
    check_credentials,
    check_part,
    check_resumable,
    check_same_config,
    earlier_sessions,
    finished_summary,
    load_checkpoint,
)


def disk_error(exc: OSError) -> str:
    """One line for a failed write: what, where, and the system's reason."""
    where = f" writing {exc.filename}" if exc.filename else ""
    return f"{exc.strerror or type(exc).__name__}{where}"


def _splits(cfg: Config) -> tuple[str, ...]:
    return ("train", "val", "test") if cfg.benchmark.test_size > 0 else ("train", "val")


def print_estimate(cfg: Config) -> int:
    """The projection of the body's training; with optimizer.target description or both, of the
    description's (over the trigger splits, as its trainer reads the config) under its own key."""
    from skillgrad.session.estimate import estimate

    skill = initial_skill(cfg)
    benchmark = checked_benchmark(cfg, _splits(cfg)) if needs_tasks(cfg) else None
    parts: dict[str, Any] = {}
    if benchmark is not None and cfg.optimizer.target != "description":
        splits = {split: benchmark.load(split) for split in _splits(cfg)}  # type: ignore[arg-type]
        parts["body"] = estimate(cfg, splits, skill)
    if (plan := plan_activation(cfg, benchmark)) is not None:
        view = trigger_config(cfg, plan.splits)
        triggers = {str(split): tasks for split, tasks in plan.splits.items()}
        initial = with_front_matter(skill, cfg.skill.name)
        parts["description"] = estimate(view, triggers, initial, test_repeats=cfg.benchmark.trigger_repeats)
    print(json.dumps(parts if cfg.optimizer.target != "body" else parts["body"], indent=2))
    return 0


def final_line(summary: dict[str, Any], out: Path) -> str:
    test = summary.get("test")
    test_line = f", test {test['baseline']:.3f} -> {test['best']:.3f}" if test else ""
    skipped = summary.get("skipped", 0)
    return (
        f"val {summary['baseline_val_score']:.3f} -> {summary['best_val_score']:.3f} "
        f"({summary['accepted']} accepted, {summary['rejected']} rejected, {skipped} skipped{test_line}); "
        f"stopped: {summary['stopped']}; best skill: {RunDir(out).best_skill_path()}"
    )


def closing_note(cfg: Config, summary: dict[str, Any]) -> str:
    """What the run demonstrated and why the score moved or did not, in one line."""
    accepted = summary.get("accepted", 0)
    if accepted and summary.get("search"):  # the frontier search keeps candidates by the items they win
        note = f"{accepted} candidate(s) entered the pool, each winning val items over its parent"
    elif accepted:
        note = f"{accepted} step(s) changed the skill: each candidate kept raised the val score"
    else:
        note = "no candidate raised the val score, so the best skill is the one the run started from"
    demo = spec_for(cfg.model.backend_for("target")).packaged_demo_model and not (
        cfg.model.local_model or cfg.model.target_model
    )
    if demo:
        note += (
            "; the target is the packaged 135M demo model, which follows a skill only where it can copy "
            "from it (facts, rarely format rules): train real skills with a real model (README)"
        )
    return note


def fresh_out(out: Path) -> Path:
    """`out`, or when it already holds a run, the first free `out-2`, `out-3`, ... (said on screen)."""
    if not (out.exists() and any(out.iterdir())):
        return out
    n = 2
    while (candidate := out.with_name(f"{out.name}-{n}")).exists() and any(candidate.iterdir()):
        n += 1
    print(f"{out} holds an earlier run (`--resume {out}` continues it); this run writes to {candidate}")
    return candidate


def train(cfg: Config, out: Path | None, *, resume: bool = False, use_cache: bool = True) -> int:
    if resume and out is not None:
        check_same_config(out, cfg)
        if (done := finished_summary(out)) is not None:
            with RunLock(out / ".lock"):  # a trainer still holding it is refused, as for any resume
                RunDir(out).remove_stale_temp_files()  # what a SIGKILL left is tidied all the same
                print(f"{out}: this run is finished, nothing to resume (nothing is spent or changed)")
                print(final_line(done, out))
            return 0
        check_credentials(out, cfg, os.environ)  # said once, before anything runs or changes
        check_resumable(out)
        if cfg.optimizer.target == "both":
            check_part(out / DESCRIPTION_DIR)  # the description part's own folder, checked alike
    if not resume and out is not None:
        out = fresh_out(out)
    skill = initial_skill(cfg)
    benchmark = checked_benchmark(cfg, _splits(cfg)) if needs_tasks(cfg) else None
    plan = plan_activation(cfg, benchmark)  # optimizer.target description | both: the triggers
    with open_executor(cfg) as executor:  # may refuse (no cluster): before anything is written
        return _train(cfg, out, skill, benchmark, plan, executor, resume=resume, use_cache=use_cache)


def _train(
    cfg: Config,
    out: Path | None,
    skill: str,
    benchmark: Benchmark | None,
    plan: ActivationPlan | None,
    executor: Executor,
    *,
    resume: bool,
    use_cache: bool,
) -> int:
    redactor = redactor_for(cfg)
    judged = isinstance(benchmark, JudgedBenchmark)
    out = out or default_out(cfg, "train")
    journal = PaidJournal(out / RunFiles.PAID)
    cache = call_cache(cfg, redactor, use_cache)
    activation = activation_roles(cfg, plan)
    roles = build_roles(
        cfg, cache, redactor, judge=judged, journal=journal, executor=executor, activation=activation
    )
    if resume:
        check_same_config(out, cfg)
    session = open_session(cfg, out, redactor, resume=resume, journal=journal)
    with RunLock(out / RunFiles.LOCK):
        state = None
        if resume:
            session.run.remove_stale_temp_files()  # left by a SIGKILL; the lock is ours now
            state, session.ledger = load_checkpoint(out, cfg, journal)
        session.run.write_config(cfg.portable().to_json())
        trainer = make_trainer(
            cfg, benchmark, roles, session.run, session.events, session.ledger, skill, plan, redactor
        )
        if resume:
            trainer.earlier_wall_s, trainer.earlier_sessions = earlier_sessions(out)
        try:
            summary = trainer.train(state)
        except KeyboardInterrupt:
            print(
                f"skillgrad: interrupted; finished work is kept in {out}; "
                f"continue with: skillgrad train --resume {out}",
                file=sys.stderr,
            )
            return 130
        except FatalBackendError as exc:
            print(f"skillgrad: error: {exc}", file=sys.stderr)
            print(f"skillgrad: stopped; finished work is kept in {out}", file=sys.stderr)
            return 2
        except TrainingFailed as exc:
            print(f"skillgrad: training failed: {exc}", file=sys.stderr)
            print(f"skillgrad: finished work is kept in {out}", file=sys.stderr)
            return 1
        except OSError as exc:  # a full disk, a read-only folder: finished work stays resumable
            print(f"skillgrad: training failed: {disk_error(exc)}", file=sys.stderr)
            print(
                f"skillgrad: finished work is kept in {out}; fix that, then --resume {out}", file=sys.stderr
            )
            return 1
        finally:
            session.events.close()
    print(closing_note(cfg, summary))
    print(final_line(summary, out))
    print(f"what changed, step by step and task by task: skillgrad report {out}")
    return 0


def evaluate(cfg: Config, skill_path: Path, split: str, out: Path | None, *, use_cache: bool = True) -> int:
    skill = read_skill(skill_path, "--skill")
    benchmark = checked_benchmark(cfg, (split,))
    out = fresh_out(out) if out is not None else None
    with open_executor(cfg) as executor:
        return _evaluate(cfg, skill_path, skill, split, benchmark, out, executor, use_cache=use_cache)


def _evaluate(
    cfg: Config,
    skill_path: Path,
    skill: str,
    split: str,
    benchmark: Benchmark,
    out: Path | None,
    executor: Executor,
    *,
    use_cache: bool,
) -> int:
    redactor = redactor_for(cfg)
    judged = isinstance(benchmark, JudgedBenchmark)
    cache = call_cache(cfg, redactor, use_cache)
    roles = build_roles(cfg, cache, redactor, optimizer=False, judge=judged, executor=executor)
    out = out or default_out(cfg, "eval")
    session = open_session(cfg, out, redactor)
    with RunLock(out / RunFiles.LOCK):
        session.run.write_config(cfg.portable().to_json())
        runner = RolloutRunner(cfg, benchmark, roles, session.run, session.events, Accounting(session.ledger))
        try:
            tasks = benchmark.load(split)  # type: ignore[arg-type]
            results = runner.rollouts(tasks, skill, session.run.eval_dir(split), "eval", 0)
        except FatalBackendError as exc:
            session.run.write_eval({"skill": str(skill_path), "split": split, "error": str(exc)})
            print(f"skillgrad: error: {exc}", file=sys.stderr)
            return 2
        finally:
            session.events.close()
    report = {
        "skill": str(skill_path),
        "split": split,
        "mean_score": mean_score(results),
        "n": len(results),
        "passed": sum(1 for r in results if r.score.passed),
        "errors": sum(1 for r in results if r.result.is_error),
        "target_backend": cfg.model.target_backend,
        "target_model": roles.agent.model,
        "usage": session.ledger.to_json(),
        "wall_s": round(session.events.elapsed(), 3),
    }
    session.run.write_eval(report)
    errors = f", {report['errors']} failed to run" if report["errors"] else ""
    print(
        f"{split}: mean score {report['mean_score']:.3f} over {report['n']} tasks "
        f"({report['passed']} passed{errors}); details in {out}"
    )
    if results and report["errors"] == len(results):  # a score of 0 that measured nothing
        print(f"skillgrad: every task failed to run; first error: {results[0].result.error}", file=sys.stderr)
        return 1
    return 0
