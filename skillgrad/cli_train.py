"""`skillgrad train` and `skillgrad eval` on a terminal: the public API's calls (`skillgrad.api`)
with the CLI's progress observer, their results as the closing lines, and each failure as lines on
stderr with its exit code (2: a refused key or quota; 1: the run failed; 130: Ctrl-C). A
`UserError` is left to `cli.main` (one line, exit code 2)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from skillgrad.api.estimate import Estimate
from skillgrad.api.run import evaluate, train
from skillgrad.backend_specs import spec_for
from skillgrad.config import Config
from skillgrad.errors import BudgetExceeded, EvaluationFailed, FatalBackendError, Interrupted, TrainingFailed
from skillgrad.observe.formatting import shown_path
from skillgrad.observe.progress import terminal_observer
from skillgrad.run_folder import RunDir
from skillgrad.session.commands import project
from skillgrad.values import Split


def _err(line: str) -> None:
    print(f"skillgrad: {line}", file=sys.stderr)


def shown(folder: Path | None) -> Path | None:
    return None if folder is None else shown_path(folder)


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


def estimate_command(cfg: Config, *, as_json: bool) -> int:
    """`--estimate`: the summary (calls, tokens, dollars, minutes per role); `--json`: all of it."""
    estimate = Estimate.of(cfg, project(cfg, None, None))
    print(json.dumps(estimate.as_dict(), indent=2) if as_json else estimate.summary())
    return 0


def train_command(cfg: Config, out: Path | None, *, resume: bool, use_cache: bool) -> int:
    terminal = terminal_observer(sys.stdout)
    try:
        result = train(cfg, out=out, resume=resume, use_cache=use_cache, observers=[terminal], quiet=True)
    except Interrupted as exc:
        again = f"continue with: skillgrad train --resume {shown(exc.run_dir)}"
        _err(f"interrupted; finished work is kept in {shown(exc.run_dir)}; {again}")
        return 130
    except FatalBackendError as exc:
        _err(f"error: {exc}")
        if exc.run_dir is not None:
            _err(f"stopped; finished work is kept in {shown(exc.run_dir)}")
        return 2
    except TrainingFailed as exc:
        _err(f"training failed: {exc}")
        hint = f"; fix that, then --resume {shown(exc.run_dir)}" if isinstance(exc.__cause__, OSError) else ""
        _err(f"finished work is kept in {shown(exc.run_dir)}{hint}")
        return 1
    finally:
        terminal.close()
    print(closing_note(cfg, result.summary))
    print(final_line(result.summary, shown(result.run_dir) or result.run_dir))
    print(f"what changed, step by step and task by task: skillgrad report {shown(result.run_dir)}")
    return 0


def eval_command(cfg: Config, skill: Path, split: Split, out: Path | None, *, use_cache: bool) -> int:
    terminal = terminal_observer(sys.stdout)
    try:
        result = evaluate(
            cfg, skill, split=split, out=out, use_cache=use_cache, observers=[terminal], quiet=True
        )
    except Interrupted as exc:
        _err(f"interrupted; finished rollouts are kept in {shown(exc.run_dir)}")
        return 130
    except FatalBackendError as exc:
        _err(f"error: {exc}")
        return 2
    except BudgetExceeded as exc:
        _err(f"{exc}; an evaluation cut short has no score; its rollouts are kept in {shown(exc.run_dir)}")
        return 1
    except EvaluationFailed as exc:
        _err(f"{exc}; details in {shown(exc.run_dir)}")
        return 1
    finally:
        terminal.close()
    errors = f", {result.errors} failed to run" if result.errors else ""
    print(
        f"{split}: mean score {result.mean_score:.3f} over {result.n} tasks "
        f"({result.passed} passed{errors}); details in {shown(result.run_dir)}"
    )
    return 0
