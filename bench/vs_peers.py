"""skillgrad, GEPA 0.1.4, SkillOpt 0.2.0 and DSPy 3.4.1 on public benchmarks: same items, same
models, same budget of target calls, one served address.

    mkdir -p /tmp/so && git --git-dir=SKILLOPT_GIT_DIR archive v0.2.0 | tar -x -C /tmp/so
    python bench/vs_peers.py --data-root ../shared/data --target-model Q15.gguf \
        --optimizer-model Q15.gguf --skillopt-src /tmp/so --dspy-venv DSPY_VENV \
        --benchmarks bbh_date gsm8k --seeds 0 1 2 --out docs/vs_peers_q15
    # later, only skillgrad (e.g. a newer analyst), beside the stored rows of the other three:
    python bench/vs_peers.py ... --systems skillgrad --reuse docs/vs_peers_q15 --out NEW \
        --set optimizer.search=frontier
    # the tables of the stored rows, the learning table first (bench/headroom.py's rows):
    python bench/vs_peers.py --table-only --out docs/vs_peers_q15 --headroom docs/headroom
    # skillgrad's rows against an earlier --out of its rows (another commit), seed by seed:
    python bench/vs_peers.py --table-only --out NEW --compare docs/vs_peers_q15

Benchmarks: bench/peers_bench.py's registry (searchqa, hotpotqa, gsm8k and every BBH task as
bbh_<task>; `--benchmarks all` or `bbh` for the groups). Per seed N: `benchmark.seed=N` picks 12
train / 12 val / 32 test items and `train.seed=N` seeds the search; every system gets exactly these.

Models: one OpenAI-compatible address on 127.0.0.1 (bench/peers_server.py): xllamacpp's server
for each GGUF (--threads each, one by default), a router in this process forwarding by the
request's model name (`target`, `optimizer`). Output is capped per role at the router for every
system alike (target: the benchmark's cap, optimizer: --optimizer-cap); temperature 0 (the
server's default for a system that sends none). Calls and tokens are counted there, the same way
for all four.

The budget of target calls is skillgrad's config's: 1 epoch of 12 train items in batches of 6
(minibatch 6: one analyst call per step), baseline val + each step's batch and val = 12 + 2 x (6 +
12) = 48. GEPA gets it as `max_metric_calls` (it checks the budget between candidates, so it can
end a little past it); SkillOpt gets the same epochs, train size, batch, minibatch and learning
rate (3, constant), with its own gate on the same 12 val items: its search makes the same 48 target
calls; DSPy runs the BootstrapFewShotWithRandomSearch candidates that 48 calls pay for (zero-shot,
labelled demos, one bootstrapped: 12 + 12 + 24, bench/dspy_run.py). Each system starts from its own
initial skill as a user would (skillgrad and GEPA from an empty one, SkillOpt from its SearchQA
`initial.md`, a title and no rule, DSPy from its zero-shot `question -> answer` program).

How each is run: skillgrad `skillgrad train` (backend `openai_chat`, call cache off, overlap off),
then `skillgrad eval --split test` of the initial and the best skill (a skill identical to one
already evaluated on this seed is not evaluated again: at temperature 0 it gets the same answers);
GEPA through bench/gepa_run.py (as bench/vs_gepa.py) with skillgrad's own chat target and
optimizer at the same address, its best prompt evaluated like skillgrad's; SkillOpt with
`skillopt-train` in its own venv (installed as bench/skillopt_side.py says), its `searchqa` env
unchanged on every benchmark (items as {id, question, context, answers}: every benchmark here is
one of questions and answers, so its harness runs on each), its own test rollouts of the initial
and the best skill (`eval_test`), whose answers (its `<answer>` extraction) are scored by the
benchmark's own scorer for the test columns (its own EM is kept as `own_test_hard`); DSPy through
bench/dspy_run.py in its own venv (--dspy-venv, made with `dspy==3.4.1` if missing), the prompts of
its initial and compiled program (DSPy's ChatAdapter messages, demos as chat turns) sent to the
same target for each test item and scored by the benchmark's scorer (bench/peers_dspy.py).

A row per benchmark, seed and system is written to OUT/<benchmark>/seedN/<system>.json as soon as
that system finishes; a row already there is not run again (one made with other settings stops the
run: pass another --out), so later calls extend the table. `--reuse DIR` copies the rows of systems
not in --systems from DIR (same settings and budget, or it stops and says which differ). `--set
k=v` goes to skillgrad alone. Prints the learning table (bench/peers_tables.py: per benchmark the
headroom from --headroom's rows, each system's mean test gain over the empty skill's score on the
same items (the headroom's base), its share of the headroom, the mean test scores it starts and
ends at and its gain over its own initial skill, calls, sign tests), then per
benchmark and seed the baseline / best val, test before -> after, target and optimizer calls,
tokens and wall, then per benchmark and system the mean test gain and a two-sided sign test over
seeds.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import peers_systems as systems  # noqa: E402
from peers_bench import (  # noqa: E402
    BENCHMARKS,
    GROUPS,
    MIN_TEST_ITEMS,
    NAMES,
    SIZES,
    add_serving_options,
    config_text,
    data_file,
    expand,
    settings,
)
from peers_dspy import DSPY_SPEC  # noqa: E402
from peers_server import Served  # noqa: E402
from peers_tables import (  # noqa: E402
    SYSTEMS,
    change_table,
    headroom_rows,
    learning_table,
    read_row,
    reuse_problem,
    row_path,
    seed_table,
    summary_table,
    write_row,
)
from skillopt_side import SkillOpt, install, mismatched_sources, site_packages  # noqa: E402
from vs_gepa import gepa_python, search_budget  # noqa: E402

from skillgrad.benchmarks.catalog import load_benchmark  # noqa: E402
from skillgrad.config import load_config  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


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


def dspy_python(venv: Path) -> Path:
    """DSPy's own venv (--system-site-packages: skillgrad and its scorers import there too)."""
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", DSPY_SPEC], check=True)
    return python


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


@contextlib.contextmanager
def held(work: Path) -> Iterator[None]:
    """`work` for this process alone while a seed runs: its config.yaml names this run's served
    address, and a second run in the same folder would send its calls to this one's router (seen:
    a DSPy search charged with another run's 32 test calls). Exits when another run holds it."""
    work.mkdir(parents=True, exist_ok=True)
    with open(work / ".lock", "w", encoding="utf-8") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            sys.exit(f"{work}: another bench/vs_peers.py run is using this folder; pass another --work")
        yield


def run_seed(args: argparse.Namespace, key: str, seed: int, served: Served, tools: dict[str, Any]) -> None:
    work = args.work / key / f"seed{seed}"
    with held(work):
        run_systems(args, key, seed, work, served, tools)


def run_systems(
    args: argparse.Namespace, key: str, seed: int, work: Path, served: Served, tools: dict[str, Any]
) -> None:
    spec = BENCHMARKS[key]
    config = work / "config.yaml"
    config.write_text(
        config_text(spec, data_file(spec, args), served.router.base_url, args, args.test_size),
        encoding="utf-8",
    )
    budget, wanted = search_budget(config, []), settings(spec, key, args)
    if args.reuse:
        reuse_rows(args, key, seed, wanted, budget)
    bench = load_benchmark(load_config(config, [f"benchmark.seed={seed}"]))
    test, search = bench.load("test"), [*bench.load("train"), *bench.load("val")]
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
        tuple(search),
    )
    for system in args.systems:
        path = row_path(args.out, key, seed, system)
        kept = read_row(path)
        if kept is not None:  # a finished row is kept: rerun into another --out to replace it
            problem = reuse_problem(kept, wanted, budget)
            if problem:
                sys.exit(f"{path}: made with other settings ({problem}); pass another --out")
            continue
        print(f"{key} seed {seed}: {system} ...", file=sys.stderr, flush=True)
        if system == "skillgrad":
            row = systems.run_skillgrad(sr)
            row |= {"label": args.label, "commit": commit()}
        elif system == "gepa":
            row = systems.run_gepa(sr, tools["gepa"])
        elif system == "dspy":
            row = systems.run_dspy(sr, tools["dspy"])
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
    parser.add_argument(
        "--benchmarks",
        nargs="+",
        choices=NAMES,
        default=["all"],
        metavar="NAME",
        help=f"benchmarks, or a group: {', '.join(GROUPS)} (default all); names: {', '.join(BENCHMARKS)}",
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--systems", nargs="+", choices=SYSTEMS, default=list(SYSTEMS))
    parser.add_argument("--set", action="append", default=[], help="config override for skillgrad only")
    parser.add_argument("--reuse", type=Path, help="take the other systems' rows from this earlier --out")
    parser.add_argument("--label", default="", help="a note stored in skillgrad's rows (what was measured)")
    parser.add_argument(
        "--optimizer-cap", type=int, default=768, help="max output tokens of an optimizer call"
    )
    add_serving_options(parser, "each model", "bench/out/vs_peers_smoke")
    parser.add_argument(
        "--out", type=Path, help="result rows (default docs/vs_peers; --smoke: bench/out/vs_peers_smoke)"
    )
    parser.add_argument(
        "--work", type=Path, default=REPO / "bench" / "out" / "vs_peers", help="run folders, venvs"
    )
    parser.add_argument("--dspy-venv", type=Path, help=f"DSPy's venv (made with {DSPY_SPEC} if missing)")
    parser.add_argument(
        "--headroom", type=Path, default=REPO / "docs" / "headroom", help="bench/headroom.py's rows"
    )
    parser.add_argument(
        "--table-only", action="store_true", help="print the stored rows' tables, run nothing"
    )
    parser.add_argument(
        "--compare", type=Path, help="an earlier --out: skillgrad's rows there against --out's, seed by seed"
    )
    args = parser.parse_args(argv)
    args.benchmarks = expand(args.benchmarks)
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
    smoke = args.smoke is not None
    args.out = (args.out or REPO / ("bench/out/vs_peers_smoke" if smoke else "docs/vs_peers")).resolve()
    args.work = args.work.resolve()
    args.test_size = args.smoke if smoke else SIZES["test_size"]
    if smoke and args.smoke < 1:
        parser.error(f"--smoke {args.smoke}: give the number of test items, 1 or more")
    if smoke and args.out.is_relative_to(REPO / "docs"):
        parser.error(f"--smoke rows never go under docs/ (--out {args.out}); drop --out or pass another")
    args.dspy_venv = (args.dspy_venv or args.work / "venvs" / "dspy").resolve()
    return args


def stored_rows(out: Path, benchmarks: list[str], seeds: list[int]) -> list[dict[str, Any]]:
    rows = []
    for key in benchmarks:
        for seed in seeds:
            for system in SYSTEMS:
                row = read_row(row_path(out, key, seed, system))
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
        if "dspy" in args.systems:
            tools["dspy"] = dspy_python(args.dspy_venv)
        models = {"target": args.target_model, "optimizer": args.optimizer_model}
        caps = {"target": max(s.target_cap for s in BENCHMARKS.values()), "optimizer": args.optimizer_cap}
        with Served(models, caps, ctx=args.ctx, threads=args.threads) as served:
            for key in args.benchmarks:
                served.router.caps["target"] = BENCHMARKS[key].target_cap
                for seed in args.seeds:
                    run_seed(args, key, seed, served, tools)
    rows = stored_rows(args.out, args.benchmarks, args.seeds)
    kept = [r for r in rows if r["settings"].get("test_size", MIN_TEST_ITEMS) >= MIN_TEST_ITEMS]  # no smoke
    learning = learning_table(headroom_rows(args.headroom, args.benchmarks), kept)
    print("\n".join(["", *learning, "", *seed_table(rows), "", *summary_table(rows)]))
    if args.compare is not None:
        earlier = stored_rows(args.compare.resolve(), args.benchmarks, args.seeds)
        print("\n".join(["", *change_table(kept, earlier)]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
