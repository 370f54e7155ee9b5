"""skillgrad, GEPA 0.1.4 and SkillOpt 0.2.0 on public benchmarks: same items, same models, same
budget of target calls, one served address.

    mkdir -p /tmp/so && git --git-dir=SKILLOPT_GIT_DIR archive v0.2.0 | tar -x -C /tmp/so
    python bench/vs_peers.py --data-root ../shared/data --target-model Q05.gguf \
        --optimizer-model Q15.gguf --skillopt-src /tmp/so --seeds 0 1 2
    # later, only skillgrad (e.g. a newer analyst), beside the stored rows of the other two:
    python bench/vs_peers.py ... --systems skillgrad --reuse docs/vs_peers --out NEW \
        --set optimizer.search=frontier

Benchmarks (files under --data-root, ../shared/data on this project's machines): `searchqa` (the
256-item SearchQA sample, token F1; contexts cut to --context-chars at a `[DOC]` boundary, the same
cut for every system), `gsm8k` (test.jsonl, exact number), `bbh_date` (BBH date_understanding,
multiple choice) and `bbh_count` (BBH object_counting, free-form number), both exact match with the
feedback "expected X; got Y". Per seed N: `benchmark.seed=N` picks 12 train / 12 val / 32 test
items and `train.seed=N` seeds the search; every system gets exactly these items.

Models: one OpenAI-compatible address on 127.0.0.1 (bench/peers_server.py): xllamacpp's server
for each GGUF, a router in this process forwarding by the request's model name (`target`,
`optimizer`). Output is capped per role at the router for every system alike (target: the
benchmark's cap below, optimizer: --optimizer-cap); temperature 0 (the server's default for a
system that sends none). Calls and tokens are counted there, the same way for all three.

The budget of target calls is skillgrad's config's: 1 epoch of 12 train items in batches of 6
(minibatch 6: one analyst call per step), baseline val + each step's batch and val = 12 + 2 x (6 +
12) = 48. GEPA gets it as `max_metric_calls` (it checks the budget between candidates, so it can
end a little past it); SkillOpt gets the same epochs, train size, batch, minibatch and learning
rate (3, constant), with its own gate on the same 12 val items: its search makes the same 48 target
calls. Each system starts from its own initial skill as a user would (skillgrad and GEPA from an
empty one, SkillOpt from its SearchQA `initial.md`, a title and no rule).

How each is run: skillgrad `skillgrad train` (backend `openai_chat`, call cache off, overlap off),
then `skillgrad eval --split test` of the initial and the best skill (a skill identical to one
already evaluated on this seed is not evaluated again: at temperature 0 it gets the same answers);
GEPA through bench/gepa_run.py (as bench/vs_gepa.py) with skillgrad's own chat target and
optimizer at the same address, its best prompt evaluated like skillgrad's; SkillOpt with
`skillopt-train` in its own venv (installed as bench/skillopt_side.py says), its `searchqa` env
unchanged on every benchmark (items as {id, question, context, answers}), its own test rollouts of
the initial and the best skill (`eval_test`), whose answers (its `<answer>` extraction) are scored
by the benchmark's own scorer for the test columns (its own EM is kept as `own_test_hard`).

A row per benchmark, seed and system is written to OUT/<benchmark>/seedN/<system>.json as soon as
that system finishes; a row already there is not run again, so later calls extend the table.
`--reuse DIR` copies the rows of systems not in --systems from DIR (same settings and budget, or it
stops and says which differ). `--set k=v` goes to skillgrad alone. Prints per benchmark and seed
the baseline / best val, test before -> after, target and optimizer calls, tokens and wall, then
per benchmark and system the mean test gain and a two-sided sign test over seeds.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import peers_systems as systems  # noqa: E402
from peers_server import Served  # noqa: E402
from peers_tables import (  # noqa: E402
    SYSTEMS,
    read_row,
    reuse_problem,
    row_path,
    seed_table,
    summary_table,
    write_row,
)
from skillopt_side import SkillOpt, install, mismatched_sources, site_packages  # noqa: E402
from vs_gepa import gepa_python, search_budget  # noqa: E402

from skillgrad.benchmarks.registry import load_benchmark  # noqa: E402
from skillgrad.config import load_config  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Spec:
    name: str  # skillgrad's benchmark
    data: str  # under --data-root
    target_cap: int  # max output tokens of a target call
    options: dict[str, Any] = field(default_factory=dict)


BENCHMARKS = {
    "searchqa": Spec("searchqa", "searchqa_sample/searchqa_256.jsonl", 128, {"metric": "f1"}),
    "gsm8k": Spec("gsm8k", "gsm8k/test.jsonl", 256),
    "bbh_date": Spec("bbh", "bbh/date_understanding.json", 128),
    "bbh_count": Spec("bbh", "bbh/object_counting.json", 128),
}
SIZES = {"train_size": 12, "val_size": 12, "test_size": 32}


def cut_context(context: str, limit: int) -> str:
    """The context's leading `[DOC]` passages that fit in `limit` characters (at least the first
    `limit` characters of the first one)."""
    if len(context) <= limit:
        return context
    kept = ""
    for i, doc in enumerate(context.split("[DOC]")):
        piece = doc if i == 0 else "[DOC]" + doc
        if len(kept) + len(piece) > limit:
            break
        kept += piece
    return kept if kept.strip() else context[:limit]


def data_file(spec: Spec, args: argparse.Namespace) -> Path:
    source = (args.data_root / spec.data).resolve()
    if not source.is_file():
        sys.exit(f"--data-root {args.data_root}: no {spec.data} there")
    if spec.name != "searchqa":
        return source
    cut = args.work / "data" / f"searchqa_ctx{args.context_chars}.jsonl"
    if not cut.is_file():
        cut.parent.mkdir(parents=True, exist_ok=True)
        rows = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines() if line.strip()]
        lines = [json.dumps({**r, "context": cut_context(r["context"], args.context_chars)}) for r in rows]
        cut.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return cut


def config_text(spec: Spec, data: Path, base_url: str, args: argparse.Namespace) -> str:
    cfg = {
        "benchmark": {"name": spec.name, "data": str(data), **SIZES, "seed": 0, "options": spec.options},
        "model": {
            "backend": "openai_chat",
            "base_url": base_url,
            "api_key": "sk-bench",
            "target_model": "target",
            "optimizer_model": "optimizer",
            "temperature": 0.0,
            "target_max_output_tokens": spec.target_cap,
            "optimizer_max_output_tokens": args.optimizer_cap,
            "timeout_s": 1800,
            "max_retries": 1,
            "json_retries": 1,
        },
        "train": {"epochs": 1, "batch_size": 6, "minibatch_size": 6, "concurrency": 1, "overlap": False},
        "optimizer": {"learning_rate": 3, "min_learning_rate": 2, "lr_schedule": "constant"},
        "cache": {"enabled": False},
    }
    return json.dumps(cfg, indent=2)  # JSON is YAML


def settings(spec: Spec, key: str, args: argparse.Namespace) -> dict[str, Any]:
    """What must match for rows to stand side by side (besides the budget)."""
    models = {
        r: f"{p.name} ({p.stat().st_size} bytes)"
        for r, p in (("target", args.target_model), ("optimizer", args.optimizer_model))
    }
    return {
        "benchmark": key,
        "data": spec.data,
        **SIZES,
        "target_model": models["target"],
        "optimizer_model": models["optimizer"],
        "target_cap": spec.target_cap,
        "optimizer_cap": args.optimizer_cap,
        "ctx": args.ctx,
        "context_chars": args.context_chars if spec.name == "searchqa" else None,
    }


def skillopt(folder: Path, checkout: Path) -> SkillOpt:
    """SkillOpt 0.2.0 in `folder`/venv: installed once, then reused while it matches the checkout."""
    venv = folder / "venv"
    if (venv / "bin" / "skillopt-train").exists():
        site = site_packages(venv)
        if not mismatched_sources(site, checkout):
            return SkillOpt(venv, site, "the venv installed earlier", 0, checkout)
        shutil.rmtree(folder)
    folder.mkdir(parents=True, exist_ok=True)
    return install(folder, checkout)


def commit() -> str:
    done = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    dirty = subprocess.run(
        ["git", "-C", str(REPO), "status", "--porcelain", "--", "skillgrad"], capture_output=True, text=True
    )
    return done.stdout.strip() + ("+changes" if dirty.stdout.strip() else "")


def reuse_rows(args: argparse.Namespace, key: str, seed: int, wanted: dict[str, Any], budget: int) -> None:
    for system in SYSTEMS:
        target = row_path(args.out, key, seed, system)
        if system in args.systems or target.exists():
            continue
        stored = read_row(row_path(args.reuse, key, seed, system))
        if stored is None:
            continue
        problem = reuse_problem(stored, wanted, budget)
        if problem:
            sys.exit(f"--reuse {args.reuse}: {key} seed {seed} {system}: {problem}")
        write_row(target, stored)


def run_seed(args: argparse.Namespace, key: str, seed: int, served: Served, tools: dict[str, Any]) -> None:
    spec = BENCHMARKS[key]
    work = args.work / key / f"seed{seed}"
    work.mkdir(parents=True, exist_ok=True)
    config = work / "config.yaml"
    config.write_text(
        config_text(spec, data_file(spec, args), served.router.base_url, args), encoding="utf-8"
    )
    budget, wanted = search_budget(config, []), settings(spec, key, args)
    if args.reuse:
        reuse_rows(args, key, seed, wanted, budget)
    test = load_benchmark(load_config(config, [f"benchmark.seed={seed}"])).load("test")
    key_text = json.dumps(wanted, sort_keys=True)
    sr = systems.SeedRun(
        key,
        seed,
        config,
        work,
        served.router.log,
        served.router.base_url,
        budget,
        spec.target_cap,
        tuple(args.set),
        tuple(test),
        "_" + systems.skill_key(key_text),
    )
    for system in args.systems:
        path = row_path(args.out, key, seed, system)
        if path.exists():  # a finished row is kept: rerun into another --out to replace it
            continue
        print(f"{key} seed {seed}: {system} ...", file=sys.stderr, flush=True)
        if system == "skillgrad":
            row = systems.run_skillgrad(sr)
            row |= {"label": args.label, "commit": commit()}
        elif system == "gepa":
            row = systems.run_gepa(sr, tools["gepa"])
        else:
            row = systems.run_skillopt(sr, tools["skillopt"])
        write_row(path, {**row, "settings": wanted})
        print(json.dumps({k: v for k, v in row.items() if k != "best_skill"}), flush=True)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data-root", type=Path, help="folder of the benchmark files (../shared/data here)")
    parser.add_argument("--target-model", type=Path, help="GGUF of the target")
    parser.add_argument("--optimizer-model", type=Path, help="GGUF of the optimizer")
    parser.add_argument(
        "--skillopt-src", type=Path, help="a checkout of SkillOpt v0.2.0 (bench/skillopt_side.py)"
    )
    parser.add_argument("--benchmarks", nargs="+", choices=list(BENCHMARKS), default=list(BENCHMARKS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--systems", nargs="+", choices=SYSTEMS, default=list(SYSTEMS))
    parser.add_argument("--set", action="append", default=[], help="config override for skillgrad only")
    parser.add_argument("--reuse", type=Path, help="take the other systems' rows from this earlier --out")
    parser.add_argument("--label", default="", help="a note stored in skillgrad's rows (what was measured)")
    parser.add_argument(
        "--optimizer-cap", type=int, default=768, help="max output tokens of an optimizer call"
    )
    parser.add_argument("--context-chars", type=int, default=1500, help="SearchQA context cut")
    parser.add_argument("--ctx", type=int, default=4096, help="context window of each model")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "vs_peers", help="result rows")
    parser.add_argument(
        "--work", type=Path, default=REPO / "bench" / "out" / "vs_peers", help="run folders, venvs"
    )
    parser.add_argument(
        "--table-only", action="store_true", help="print the stored rows' tables, run nothing"
    )
    args = parser.parse_args(argv)
    if not args.table_only:
        for name in ("data_root", "target_model", "optimizer_model"):
            if getattr(args, name) is None:
                parser.error(f"--{name.replace('_', '-')} is needed to run (or --table-only)")
        for name in ("target_model", "optimizer_model"):
            if not getattr(args, name).is_file():
                parser.error(f"--{name.replace('_', '-')} {getattr(args, name)}: no such file")
        if not args.data_root.is_dir():
            parser.error(f"--data-root {args.data_root}: no such folder")
        if "skillopt" in args.systems and args.skillopt_src is None:
            parser.error("--systems skillopt needs --skillopt-src PATH (see bench/skillopt_side.py)")
    args.out, args.work = args.out.resolve(), args.work.resolve()
    return args


def stored_rows(args: argparse.Namespace) -> list[dict[str, Any]]:
    rows = []
    for key in args.benchmarks:
        for seed in args.seeds:
            for system in SYSTEMS:
                row = read_row(row_path(args.out, key, seed, system))
                if row is not None:
                    rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if not args.table_only:
        tools: dict[str, Any] = {}
        if "gepa" in args.systems:
            tools["gepa"] = gepa_python(args.work / "venvs" / "gepa")
        if "skillopt" in args.systems:
            tools["skillopt"] = skillopt(args.work / "venvs" / "skillopt", args.skillopt_src.resolve())
        models = {"target": args.target_model, "optimizer": args.optimizer_model}
        caps = {"target": max(s.target_cap for s in BENCHMARKS.values()), "optimizer": args.optimizer_cap}
        with Served(models, caps, ctx=args.ctx, threads=args.threads) as served:
            for key in args.benchmarks:
                served.router.caps["target"] = BENCHMARKS[key].target_cap
                for seed in args.seeds:
                    run_seed(args, key, seed, served, tools)
    rows = stored_rows(args)
    print("\n".join(["", *seed_table(rows), "", *summary_table(rows)]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
