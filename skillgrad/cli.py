"""The `skillgrad` command: train, eval, config, trace, report, backends, models, harvest, propose, adopt.

User mistakes (UserError) become one line on stderr and exit code 2, never a traceback.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
from pathlib import Path

from skillgrad import __version__, cli_help
from skillgrad.backend_specs import backend_names
from skillgrad.cli_help import parser_kwargs
from skillgrad.config import Config, load_config
from skillgrad.errors import UserError, print_warning
from skillgrad.session.paths import check_input, check_out_file, check_out_folder, check_run_folder


def _config_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", "-c", help="YAML config file")
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override any config key, e.g. --set train.epochs=1 (repeatable)",
    )


def _role_flags(parser: argparse.ArgumentParser) -> None:
    _config_flags(parser)
    for flag in ("backend", "optimizer-backend", "target-backend"):
        dest = flag.replace("-", "_")
        names = [f"--{flag}"] + ([f"--{dest}"] if dest != flag else [])
        parser.add_argument(
            *names,
            dest=dest,
            metavar="NAME",
            help=f"backend for {'both roles' if flag == 'backend' else flag.split('-')[0]} "
            f"({' | '.join(backend_names())})",
        )


def _benchmark_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--benchmark", metavar="NAME", help="shorthand for --set benchmark.name=NAME")
    parser.add_argument(
        "--data",
        metavar="PATH",
        help="shorthand for --set benchmark.data=PATH, a data file or folder (relative to this folder)",
    )


def _executor_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--executor", choices=["threads", "ray"], help="shorthand for --set train.executor=NAME"
    )


def _overrides(args: argparse.Namespace) -> list[str]:
    """--set items, after them the --benchmark / --data / --executor shorthands (so those win)."""
    extra = [f"benchmark.name={args.benchmark}"] if getattr(args, "benchmark", None) else []
    if getattr(args, "executor", None):
        extra.append(f"train.executor={args.executor}")
    if getattr(args, "data", None):
        data = Path(args.data).expanduser()
        check_input("--data", data)
        extra.append(f"benchmark.data={data.resolve()}")
    return [*args.overrides, *extra]


def _session_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The commands that read agent sessions: trace, harvest, propose, adopt."""
    trace = sub.add_parser("trace", help="print a Claude Code or Codex session as the optimizer sees it")
    trace.add_argument(
        "file",
        help="Claude Code stream-json output, a skillgrad transcript.jsonl, a ~/.claude/projects session, "
        "or codex exec --json output",
    )
    trace.add_argument(
        "subagents",
        nargs="*",
        metavar="AGENT_FILE",
        help="the session's separate subagent files (agent-*.jsonl)",
    )
    shown = trace.add_mutually_exclusive_group()
    shown.add_argument(
        "--budget", type=int, metavar="N", help="the optimizer's view in N characters, the header included"
    )
    shown.add_argument("--full", action="store_true", help="every step, uncapped")
    shown.add_argument("--json", action="store_true", help="the steps as JSON lines")
    _config_flags(trace)  # the view's caps are the config's `trace.*` keys; no backend runs

    what = "mine your Claude Code or Codex sessions into a task set (tasks.jsonl)"
    harvest = sub.add_parser("harvest", help=what, description=f"{what[0].upper()}{what[1:]}.")
    harvest.add_argument(
        "--from",
        dest="source",
        help="~/.claude/projects/<project>, ~/.codex/sessions, or one session file "
        "(default: this folder's Claude Code project)",
    )
    harvest.add_argument("--since", metavar="YYYY-MM-DD", help="only sessions modified on or after this day")
    harvest.add_argument("--out", required=True, help="the task set to write (JSONL)")

    propose = sub.add_parser("propose", help="stage a trained skill as a proposal against the installed one")
    propose.add_argument("run", help="the run folder of `skillgrad train`")
    propose.add_argument(
        "--skill",
        help="the installed SKILL.md (default: .claude/skills/<name>/SKILL.md "
        "of this project, else of ~/.claude)",
    )

    adopt = sub.add_parser("adopt", help="install a proposal (keeps the previous skill for --undo)")
    adopt.add_argument("run", help="the run folder whose proposal to install")
    adopt.add_argument("--undo", action="store_true", help="put the previous skill back")
    adopt.add_argument(
        "--allow-regressions", action="store_true", help="install even if a passing task breaks"
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="skillgrad", description="Train an agent's SKILL.md from scored runs."
    )
    parser.add_argument("--version", action="version", version=f"skillgrad {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    train = sub.add_parser("train", help="train a skill against a benchmark", **parser_kwargs(cli_help.TRAIN))
    _role_flags(train)
    _benchmark_flags(train)
    _executor_flag(train)
    train.add_argument("--out", help="run folder (default: runs/<time>-train-<benchmark>)")
    train.add_argument("--resume", metavar="OUT", help="continue an interrupted run folder")
    train.add_argument(
        "--estimate",
        action="store_true",
        help="print the projected calls, tokens, dollars and minutes of the configured run, spend nothing",
    )
    train.add_argument("--json", action="store_true", help="with --estimate: the full projection as JSON")
    train.add_argument("--no-cache", action="store_true", help="do not answer calls from the call cache")

    ev = sub.add_parser("eval", help="score one skill on a split", **parser_kwargs(cli_help.EVAL))
    _role_flags(ev)
    _benchmark_flags(ev)
    _executor_flag(ev)
    ev.add_argument(
        "--skill", required=True, help="the skill to score: a SKILL.md file or a skill package folder"
    )
    ev.add_argument("--split", default="test", help="train | val | test (default: test)")
    ev.add_argument("--out", help="output folder (default: runs/<time>-eval-<benchmark>)")
    ev.add_argument("--no-cache", action="store_true", help="do not answer calls from the call cache")

    cfg = sub.add_parser(
        "config", help="print the resolved config as JSON (secrets redacted), each role's model on stderr"
    )
    _role_flags(cfg)
    _benchmark_flags(cfg)

    _session_parsers(sub)

    report = sub.add_parser("report", help="write a self-contained HTML report of one run (or compare two)")
    report.add_argument("runs", nargs="+", help="run folder(s)")
    report.add_argument("--out", help="HTML file to write (default: <run>/report.html)")

    backends = sub.add_parser("backends", help="list backends, their roles, and whether they are usable here")
    _role_flags(backends)

    cluster = sub.add_parser("cluster", help="is the Ray cluster of ray.address reachable, and its resources")
    _role_flags(cluster)

    models = sub.add_parser("models", help="manage local model files")
    models.add_argument(
        "action", choices=["pull", "path"], help="pull: fetch the default GGUF; path: print it"
    )
    return parser


def _roles(args: argparse.Namespace) -> dict[str, str | None]:
    """The role flags given (a command without them, as `trace`, gives none)."""
    names = ("backend", "optimizer_backend", "target_backend")
    return {name: getattr(args, name, None) for name in names}


def _load(args: argparse.Namespace) -> Config:
    return load_config(args.config, _overrides(args), **_roles(args))


def cmd_config(args: argparse.Namespace) -> int:
    from skillgrad.benchmarks.catalog import check_benchmark_name
    from skillgrad.session.build import redactor_for
    from skillgrad.session.costing import models_lines

    cfg = _load(args)
    check_benchmark_name(cfg.benchmark.name)  # as `train` would refuse it
    print(json.dumps(redactor_for(cfg).redact_json(cfg.to_json()), indent=2, ensure_ascii=False))
    sys.stdout.flush()  # the JSON first, then what it leaves null: the model each role resolves to
    for line in models_lines(cfg):
        print(f"skillgrad: {line}", file=sys.stderr)
    return 0


def cmd_train(args: argparse.Namespace) -> int:
    from skillgrad.cli_train import estimate_command, train_command
    from skillgrad.session.resume import stored_config

    if args.json and not args.estimate:
        raise UserError("--json goes with --estimate: skillgrad train --estimate --json")
    if args.resume and args.out and Path(args.out) != Path(args.resume):
        raise UserError(f"--out {args.out} and --resume {args.resume} differ; pass only --resume OUT")
    if args.resume:
        check_run_folder("--resume", Path(args.resume))
    elif args.out and not args.estimate:
        check_out_folder("--out", Path(args.out))
    if args.resume and not args.config:
        cfg = stored_config(Path(args.resume), _overrides(args), **_roles(args))
    else:
        cfg = _load(args)
    if args.estimate:
        return estimate_command(cfg, as_json=args.json)
    out = Path(args.resume or args.out) if (args.resume or args.out) else None
    return train_command(cfg, out, resume=bool(args.resume), use_cache=not args.no_cache)


def cmd_eval(args: argparse.Namespace) -> int:
    from skillgrad.cli_train import eval_command
    from skillgrad.values import SPLITS

    if args.split not in SPLITS:
        raise UserError(f"--split {args.split!r}: allowed values: {', '.join(SPLITS)}")
    check_input("--skill", Path(args.skill))
    out = Path(args.out) if args.out else None
    if out is not None:
        check_out_folder("--out", out)
    return eval_command(_load(args), Path(args.skill), args.split, out, use_cache=not args.no_cache)


def cmd_trace(args: argparse.Namespace) -> int:
    from skillgrad.traces.any_session import load_any_session
    from skillgrad.traces.show import TraceShow, show_trace

    cfg = _load(args)
    if args.budget is not None and args.budget < 1:
        raise UserError(f"--budget {args.budget}: pass a positive number of characters")
    session = load_any_session(Path(args.file), [Path(f) for f in args.subagents])
    show = TraceShow("json" if args.json else "full" if args.full else "view", args.budget)
    text = show_trace(session, cfg.trace, show)
    if args.json:  # the other modes say it in their header
        for warning in session.warnings:
            print_warning(warning)
    # An output encoding that cannot show a character (cp1252, ascii) gets a replacement, not a crash.
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(errors="replace")
    print(text)
    return 0


def cmd_harvest(args: argparse.Namespace) -> int:
    from skillgrad.harvest.command import default_source, harvest, harvest_redactor
    from skillgrad.harvest.sessions import parse_since

    since = parse_since(args.since)
    check_out_file("--out", Path(args.out), "tasks.jsonl")
    if args.source:
        check_input("--from", Path(args.source).expanduser())
    source = Path(args.source).expanduser() if args.source else default_source(Path.cwd(), Path.home())
    summary = harvest(source, since, Path(args.out), harvest_redactor())
    print("\n".join(summary.lines(Path(args.out))))
    return 0


def cmd_propose(args: argparse.Namespace) -> int:
    from skillgrad.harvest.proposal import installed_skill_path, propose
    from skillgrad.report.data import load_run

    run = Path(args.run)
    name = str((load_run(run).config.get("skill") or {}).get("name") or "task-skill")
    target = (
        Path(args.skill).expanduser() if args.skill else installed_skill_path(name, Path.cwd(), Path.home())
    )
    evidence = propose(run, target)
    gain = evidence["val_gain"]
    print(
        f"proposal for {target}: val {evidence['val_baseline']} -> {evidence['val_best']}"
        + (f" ({gain:+.3f})" if gain is not None else "")
        + f"; {len(evidence['improved'])} task(s) improved, {len(evidence['regressed'])} regressed"
    )
    if not evidence["trained_from_installed"]:
        print("note: the run did not start from the installed skill; its baseline is the run's own v0000")
    print(f"diff: {run / 'proposal' / 'skill.diff'}; install with: skillgrad adopt {run}")
    return 0


def cmd_adopt(args: argparse.Namespace) -> int:
    from skillgrad.harvest.proposal import adopt, undo

    run = Path(args.run)
    if args.undo:
        print(f"restored the previous skill at {undo(run)}")
    else:
        target = adopt(run, allow_regressions=args.allow_regressions)
        print(f"installed {target}; undo with: skillgrad adopt --undo {run}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from skillgrad.report import write_report

    if args.out:
        check_out_file("--out", Path(args.out), "report.html")
    out = Path(args.out) if args.out else None
    path = write_report([Path(r) for r in args.runs], out, on_warning=print_warning)
    print(path)
    return 0


def cmd_backends(args: argparse.Namespace) -> int:
    from skillgrad.backends.registry import BACKENDS, availability

    cfg = _load(args)
    for name, spec in BACKENDS.items():
        ok, reason = availability(cfg, name)
        kind = "agent harness" if spec.harness else "chat model"
        status = ("usable" + (f" ({reason})" if reason else "")) if ok else f"not usable: {reason}"
        print(f"{name:<18} roles: {', '.join(spec.roles):<18} {kind:<14} {status}")
    from skillgrad.executors.cluster import executor_line

    print(executor_line(cfg))
    return 0


def cmd_cluster(args: argparse.Namespace) -> int:
    from skillgrad.executors.cluster import cluster_report

    reachable, lines = cluster_report(_load(args))
    print("\n".join(lines))
    return 0 if reachable else 1


def cmd_models(args: argparse.Namespace) -> int:
    from skillgrad.backends.local_models import default_model_path, pull_default_model

    print(pull_default_model() if args.action == "pull" else default_model_path())
    return 0


COMMANDS = {
    "train": cmd_train,
    "eval": cmd_eval,
    "config": cmd_config,
    "trace": cmd_trace,
    "report": cmd_report,
    "harvest": cmd_harvest,
    "propose": cmd_propose,
    "adopt": cmd_adopt,
    "backends": cmd_backends,
    "cluster": cmd_cluster,
    "models": cmd_models,
}


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        code = COMMANDS[args.command](args)
        sys.stdout.flush()  # here, not at exit: a reader that left (`| head`) is a BrokenPipeError below
        return code
    except UserError as exc:
        print(f"skillgrad: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("skillgrad: interrupted; finished work is kept in the run folder", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `skillgrad config | head`: the reader left; say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def entry() -> int:
    """The process entry (the `skillgrad` script, `python -m skillgrad.cli`). Start-up creates a few
    hundred thousand objects that live as long as the process (the SDKs' types): collecting them
    as they appear, and traversing them all once more at exit, cost a few tenths of a second and
    free nothing. So the collector runs less often here, and everything alive at the end is
    frozen before the interpreter exits (the files a command writes are closed by then)."""
    gc.set_threshold(100_000, 50, 100)
    code = main()
    gc.freeze()
    return code


if __name__ == "__main__":
    sys.exit(entry())
