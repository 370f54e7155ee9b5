"""Calls, sequential rounds and wall time per point gained, against a fixed-latency scripted server;
skillgrad and SkillOpt 0.2.0 side by side.

    python bench/latency.py --data ../shared/data/searchqa_sample/searchqa_256.jsonl
    python bench/latency.py --data FILE --latency 0.5 --seeds 0 1 --reps 1 --variants default full
    mkdir -p /tmp/so && git --git-dir=SKILLOPT_GIT_DIR archive v0.2.0 | tar -x -C /tmp/so
    python bench/latency.py --data FILE --latency 0.5 --skillopt --skillopt-src /tmp/so

One scripted OpenAI-compatible server (bench/latency_world.py, 127.0.0.1 only) serves both roles
of both systems and answers every request exactly L seconds after reading it; its behaviour (the
target's share of right answers, the rules the analyst proposes) is the same for both, only the
wire formats differ. Configuration (the issue's): the 256 items shuffled with seed 0 -> train 64 /
val 16, 1 epoch, batch 8, minibatch 4, learning rate 4 -> 2 cosine, strict gate, concurrency 24,
cache off; the seed is the training seed (`train.seed` in both systems). SkillOpt gets exactly
skillgrad's train and val items (as its split_dir) and its own SearchQA defaults otherwise, test
evaluation off (skillgrad has no test split here either).

Calls are counted at the server by kind (target calls on train items = rollout, on val items =
val, the baseline included; analyst; merge; rank), and rounds are observed there for both
systems the same way: the longest chain of calls each of which started after the previous one
ended (skillgrad's own `summary.json` `rounds` is the same measure, taken in the client).

Variants (skillgrad config on top of the configuration): `default` (racing, at most 2 waves, overlap),
`full` (one-wave validation), `sequential` (train.overlap=false), `full-sequential` (the order of
the previous release: one wave, no overlap). `--skillopt` (with `--skillopt-src`, see
bench/skillopt_side.py) trains SkillOpt 0.2.0 on the same server for every latency and seed and
prints both systems side by side with the ratios skillgrad `default` / SkillOpt and the issue's
targets. Medians over `--reps` repetitions.

skillgrad runs from a fresh venv of this checkout with its `openai` extra (bench/fresh_venv.py; as
SkillOpt runs from its own), outside any checkout; `--dev-env` runs it on this interpreter's
packages. Beside each of its runs the script times the SDK floor (bench/first_request.py): a bare
openai-SDK script from its spawn to its first request, which no program on the SDK can beat; the
tables give the wall ratio with and without it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import fresh_venv  # noqa: E402
from first_request import FirstRequest  # noqa: E402
from latency_tables import print_side_by_side, print_variants  # noqa: E402
from latency_world import Item, Scripted, question_key, serve  # noqa: E402
from skillopt_side import SkillOpt, clean_env, install, run_once, write_split  # noqa: E402

from skillgrad.benchmarks.catalog import load_benchmark  # noqa: E402
from skillgrad.config import load_config  # noqa: E402
from skillgrad.loop.rounds import longest_chain  # noqa: E402

VARIANTS: dict[str, list[str]] = {
    "default": [],
    "full": ["optimizer.validation=full"],
    "sequential": ["train.overlap=false"],
    "full-sequential": ["optimizer.validation=full", "train.overlap=false"],
}


def config(folder: Path, data: Path, port: int, seed: int) -> Path:
    cfg = {
        "benchmark": {
            "name": "qa",
            "data": str(data),
            "train_size": 64,
            "val_size": 16,
            "seed": 0,
            "options": {"metric": "em"},
        },
        "model": {
            "backend": "openai_chat",
            "base_url": f"http://127.0.0.1:{port}/v1",
            "api_key": "sk-bench",
            "optimizer_model": "scripted-optimizer",
            "target_model": "scripted-target",
            "max_retries": 0,
        },
        "train": {"epochs": 1, "batch_size": 8, "minibatch_size": 4, "concurrency": 24, "seed": seed},
        "optimizer": {"learning_rate": 4, "min_learning_rate": 2, "lr_schedule": "cosine", "gate": "strict"},
        "cache": {"enabled": False},
    }
    path = folder / "config.yaml"
    path.write_text(json.dumps(cfg), encoding="utf-8")
    return path


def splits(data: Path) -> dict[str, list[dict[str, Any]]]:
    """skillgrad's train and val items for the configuration, as the data file's rows."""
    rows = {}
    for line in data.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            rows[str(row["id"])] = row
    with tempfile.TemporaryDirectory(prefix="sg-latency-") as tmp:
        bench = load_benchmark(load_config(config(Path(tmp), data.resolve(), 1, 0)))
        return {
            split: [rows[str(t.meta["source_id"])] for t in bench.load(split)] for split in ("train", "val")
        }


def world_items(split_rows: dict[str, list[dict[str, Any]]]) -> dict[str, Item]:
    return {
        question_key(row["question"]): Item(str(row["answers"][0]), split)
        for split, rows in split_rows.items()
        for row in rows
    }


def server_figures(world: Scripted, wall: float) -> dict[str, Any]:
    calls = dict(world.calls)
    return {"calls": sum(calls.values()), **calls, "rounds": longest_chain(world.intervals), "wall": wall}


def run_skillgrad(
    python: str, data: Path, world: Scripted, seed: int, variant: str, floor: FirstRequest
) -> dict[str, Any]:
    httpd = serve(world)
    try:
        with tempfile.TemporaryDirectory(prefix="sg-latency-") as tmp:
            cfg = config(Path(tmp), data, httpd.server_address[1], seed)
            out = Path(tmp) / "run"
            sets = [arg for item in VARIANTS[variant] for arg in ("--set", item)]
            command = [
                python,
                "-m",
                "skillgrad.cli",
                "train",
                "--config",
                str(cfg),
                "--out",
                str(out),
            ]
            started = time.perf_counter()
            proc = subprocess.run(  # not in a checkout: `-m` would import the one in the cwd
                [*command, *sets], capture_output=True, text=True, env=clean_env(), cwd=tmp, timeout=600
            )
            wall = time.perf_counter() - started
            sdk_floor = floor.sdk_floor(python, clean_env(), Path(tmp))  # beside the run: same load
            if proc.returncode != 0:
                sys.exit(f"skillgrad failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
            summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    finally:
        httpd.shutdown()
        httpd.server_close()
    return {
        **server_figures(world, wall),
        "val_score": summary["best_val_score"],
        "accepted": summary["accepted"],
        "stopped": summary["stopped"],
        "own_rounds": summary["rounds"],
        "own_calls": summary["calls"]["by_stage"],
        "floor": sdk_floor,
    }


def run_skillopt(
    so: SkillOpt, split_rows: dict[str, list[dict[str, Any]]], world: Scripted, seed: int
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="so-latency-") as tmp:
        split_dir = write_split(Path(tmp) / "split", split_rows)
        own = run_once(so, world, Path(tmp), split_dir, seed)
    return {**server_figures(world, own["wall"]), **own, "stopped": "-"}


def median_of(runs: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in runs[0]:
        values = [r[key] for r in runs]
        numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)
        out[key] = statistics.median(values) if numeric else values[0]
    out["reps"] = runs
    return out


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--data", type=Path, required=True, help="SearchQA JSONL (id, question, context, answers)"
    )
    parser.add_argument("--latency", type=float, nargs="+", default=[0.2, 0.5, 1.0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument(
        "--variants", nargs="+", choices=list(VARIANTS), help="default: all; `default` with --skillopt"
    )
    parser.add_argument("--skillopt", action="store_true", help="train SkillOpt 0.2.0 side by side")
    parser.add_argument("--skillopt-src", type=Path, help="a checkout of SkillOpt v0.2.0 (its prompt files)")
    parser.add_argument("--json", type=Path, help="also write every figure here")
    parser.add_argument(
        "--dev-env", action="store_true", help="skillgrad on this interpreter's packages (not a fresh venv)"
    )
    args = parser.parse_args()
    if args.skillopt and args.skillopt_src is None:
        parser.error("--skillopt needs --skillopt-src PATH (see bench/skillopt_side.py)")
    if args.variants is None:
        args.variants = ["default"] if args.skillopt else list(VARIANTS)
    if args.skillopt and "default" not in args.variants:
        parser.error("--skillopt compares with the `default` variant: include it in --variants")
    return args


def main() -> int:
    args = parse_args()
    data = args.data.resolve()
    split_rows = splits(data)
    items = world_items(split_rows)
    figures: list[dict[str, Any]] = []
    floor = FirstRequest()
    with tempfile.TemporaryDirectory(prefix="so-venv-") as venv_dir:
        python = sys.executable if args.dev_env else str(fresh_venv.install(Path(venv_dir), REPO))
        so = install(Path(venv_dir), args.skillopt_src.resolve()) if args.skillopt else None
        if so is not None:
            print(
                f"SkillOpt 0.2.0 installed from {so.source}; {so.prompts_added} missing markdown files "
                f"(prompts, initial skill) added from {so.checkout}\n",
                flush=True,
            )
        for latency in args.latency:
            for seed in args.seeds:
                systems = [("skillgrad", v) for v in args.variants] + ([("skillopt", "0.2.0")] if so else [])
                for system, variant in systems:
                    runs = []
                    for _ in range(args.reps):
                        world = Scripted(latency, items)
                        if system == "skillopt" and so is not None:
                            runs.append(run_skillopt(so, split_rows, world, seed))
                        else:
                            runs.append(run_skillgrad(python, data, world, seed, variant, floor))
                    row = {"latency": latency, "seed": seed, "system": system, "variant": variant}
                    figures.append({**row, **median_of(runs)})
                    print(f"done: L={latency} seed={seed} {system} {variant}", file=sys.stderr, flush=True)
    floor.close()
    print_variants([f for f in figures if f["system"] == "skillgrad"])
    if so is not None:
        print_side_by_side(figures)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
