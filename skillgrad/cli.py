"""The `skillgrad` command: train, eval, config, trace, report, backends, models.

User mistakes (UserError) become one line on stderr and exit code 2, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from skillgrad import __version__
from skillgrad.config import BACKEND_NAMES, Config, load_config
from skillgrad.errors import UserError


def _role_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", "-c", help="YAML config file")
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override any config key, e.g. --set train.epochs=1 (repeatable)",
    )
    for flag in ("backend", "optimizer-backend", "target-backend"):
        dest = flag.replace("-", "_")
        names = [f"--{flag}"] + ([f"--{dest}"] if dest != flag else [])
        parser.add_argument(
            *names,
            dest=dest,
            metavar="NAME",
            help=f"backend for {'both roles' if flag == 'backend' else flag.split('-')[0]} "
            f"({' | '.join(BACKEND_NAMES)})",
        )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="skillgrad", description="Train an agent's SKILL.md from scored runs."
    )
    parser.add_argument("--version", action="version", version=f"skillgrad {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    train = sub.add_parser("train", help="train a skill against a benchmark")
    _role_flags(train)
    train.add_argument("--out", help="run folder (default: runs/<time>-train-<benchmark>)")
    train.add_argument("--resume", metavar="OUT", help="continue an interrupted run folder")
    train.add_argument(
        "--estimate",
        action="store_true",
        help="print the projected calls and tokens of the configured run, spend nothing",
    )
    train.add_argument("--no-cache", action="store_true", help="do not answer calls from the call cache")

    ev = sub.add_parser("eval", help="score one skill on a split")
    _role_flags(ev)
    ev.add_argument("--skill", required=True, help="the skill markdown file to score")
    ev.add_argument("--split", default="test", help="train | val | test (default: test)")
    ev.add_argument("--out", help="output folder (default: runs/<time>-eval-<benchmark>)")
    ev.add_argument("--no-cache", action="store_true", help="do not answer calls from the call cache")

    cfg = sub.add_parser("config", help="print the resolved config as JSON (secrets redacted)")
    _role_flags(cfg)

    trace = sub.add_parser("trace", help="print a Claude Code session as the optimizer sees it")
    trace.add_argument(
        "file", help="stream-json output, a skillgrad transcript.jsonl, or a ~/.claude/projects session"
    )
    _role_flags(trace)

    report = sub.add_parser("report", help="write a self-contained HTML report of one run (or compare two)")
    report.add_argument("runs", nargs="+", help="run folder(s)")
    report.add_argument("--out", help="HTML file to write (default: <run>/report.html)")

    backends = sub.add_parser("backends", help="list backends, their roles, and whether they are usable here")
    _role_flags(backends)

    models = sub.add_parser("models", help="manage local model files")
    models.add_argument(
        "action", choices=["pull", "path"], help="pull: fetch the default GGUF; path: print it"
    )
    return parser


def _load(args: argparse.Namespace) -> Config:
    return load_config(
        args.config,
        args.overrides,
        backend=args.backend,
        optimizer_backend=args.optimizer_backend,
        target_backend=args.target_backend,
    )


def cmd_config(args: argparse.Namespace) -> int:
    from skillgrad.wiring import redactor_for

    cfg = _load(args)
    print(json.dumps(redactor_for(cfg).redact_json(cfg.to_json()), indent=2, ensure_ascii=False))
    return 0


def cmd_train(args: argparse.Namespace) -> int:
    from skillgrad.commands import print_estimate, train
    from skillgrad.resume import stored_config

    if args.resume and args.out and Path(args.out) != Path(args.resume):
        raise UserError(f"--out {args.out} and --resume {args.resume} differ; pass only --resume OUT")
    if args.resume and not args.config:
        cfg = stored_config(
            Path(args.resume),
            args.overrides,
            backend=args.backend,
            optimizer_backend=args.optimizer_backend,
            target_backend=args.target_backend,
        )
    else:
        cfg = _load(args)
    if args.estimate:
        return print_estimate(cfg)
    out = Path(args.resume or args.out) if (args.resume or args.out) else None
    return train(cfg, out, resume=bool(args.resume), use_cache=not args.no_cache)


def cmd_eval(args: argparse.Namespace) -> int:
    from skillgrad.commands import evaluate

    out = Path(args.out) if args.out else None
    return evaluate(_load(args), Path(args.skill), args.split, out, use_cache=not args.no_cache)


def cmd_trace(args: argparse.Namespace) -> int:
    from skillgrad.traces.claude import load_trace_file
    from skillgrad.traces.steps import TraceCaps, render_steps

    cfg = _load(args)
    caps = TraceCaps(cfg.trace.tool_result_chars, cfg.trace.step_chars, cfg.trace.total_chars)
    print(render_steps(load_trace_file(Path(args.file)), caps))
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from skillgrad.report import write_report

    path = write_report([Path(r) for r in args.runs], Path(args.out) if args.out else None)
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
    return 0


def cmd_models(args: argparse.Namespace) -> int:
    from skillgrad.models import default_model_path, pull_default_model

    print(pull_default_model() if args.action == "pull" else default_model_path())
    return 0


COMMANDS = {
    "train": cmd_train,
    "eval": cmd_eval,
    "config": cmd_config,
    "trace": cmd_trace,
    "report": cmd_report,
    "backends": cmd_backends,
    "models": cmd_models,
}


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except UserError as exc:
        print(f"skillgrad: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("skillgrad: interrupted; finished work is kept in the run folder", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
