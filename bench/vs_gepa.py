"""skillgrad and GEPA side by side: same items, feedback, models and budget of target calls.

    python bench/vs_gepa.py                                  # packaged model in both roles, 3 seeds
    python bench/vs_gepa.py --target-model Q05.gguf --optimizer-model Q15.gguf --seeds 0 1 2
    python bench/vs_gepa.py --set model.backend=openai_chat --set model.base_url=http://HOST/v1 ...

Per seed, one model process at a time:
1. `skillgrad train` on housestyle (12 train / 12 val, test skipped), call cache off, overlap off
   (train rollouts prefetched beside a validation that rejects are redone: calls past the budget).
2. GEPA (`gepa.optimize`, DefaultAdapter; installed from the registry into a temporary venv made
   with --system-site-packages) through `bench/gepa_run.py`, with skillgrad's own target Agent
   and optimizer ChatModel, the benchmark's own feedback text, and `max_metric_calls` = the
   target calls skillgrad's config could spend on search (baseline + every step's train batch and
   validation), so GEPA never gets less budget than skillgrad had.
3. `skillgrad eval --split test` of the initial skill, skillgrad's best and GEPA's best.
With --gepa-from DIR, GEPA's rows (and the initial skill's test score) come from an earlier run of
this script on the same seeds, models and budget, e.g. to compare `--edit-mode rewrite` with patch.

A seed whose DIR/seedN/result.json exists is not run again, so a later call with more seeds
extends the table. Prints the side-by-side table (baseline val / best val / test, target and
optimizer calls, wall) and, over every skillgrad run, the edits copied from the analyst's prompt
and the selected edits that did not apply. Writes everything under --out (default bench/out/vs_gepa).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from skillgrad.config import load_config

REPO = Path(__file__).resolve().parents[1]
GEPA_SPEC = "gepa==0.1.4"
CONFIG = """\
benchmark: {{name: housestyle, train_size: 12, val_size: 12, test_size: 24, seed: 0}}
model:
  backend: local
  local_threads: 1
  local_ctx: 4096
  max_output_tokens: 512
  temperature: 0.0
  json_retries: 1
train: {{epochs: {epochs}, batch_size: 6, minibatch_size: 3, concurrency: 1, overlap: false}}
optimizer: {{learning_rate: 3, min_learning_rate: 2, lr_schedule: constant}}
cache: {{enabled: false}}
"""


def run(cmd: list[str], log: Path) -> float:
    """Run `cmd` (its output into `log`); exit with its tail if it fails. Returns wall seconds."""
    start = time.perf_counter()
    with log.open("w", encoding="utf-8") as out:
        proc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, text=True, check=False, env=_env())
    if proc.returncode != 0:
        sys.exit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{log.read_text(encoding='utf-8')[-3000:]}")
    return time.perf_counter() - start


def _env() -> dict[str, str]:
    """The repo first on the path, so every subprocess imports this checkout's skillgrad."""
    path = os.environ.get("PYTHONPATH", "")
    return {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{path}" if path else str(REPO)}


def gepa_python(venv: Path) -> Path:
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", GEPA_SPEC], check=True)
    return python


def search_budget(cfg: Path, sets: list[str]) -> int:
    """Target calls skillgrad's config may spend on search: baseline + per step batch and val."""
    c = load_config(cfg, sets)
    steps = c.train.epochs * math.ceil(c.benchmark.train_size / c.train.batch_size)
    return c.benchmark.val_size + steps * (
        min(c.train.batch_size, c.benchmark.train_size) + c.benchmark.val_size
    )


def evaluate(cfg: Path, skill: Path, seed: int, out: Path, sets: list[str]) -> float:
    cmd = ["skillgrad", "eval", "--config", str(cfg), "--skill", str(skill), "--split", "test"]
    cmd += ["--out", str(out), "--set", f"benchmark.seed={seed}", *[a for s in sets for a in ("--set", s)]]
    run(cmd, out.parent / f"{out.name}.log")
    return float(json.loads((out / "eval.json").read_text(encoding="utf-8"))["mean_score"])


def edit_audit(run_dir: Path) -> dict[str, int]:
    """Over one run: proposals, those copied from the prompt, and selected edits that skipped."""
    audit = {
        "proposed": 0,
        "copied_from_prompt": 0,
        "dropped_inapplicable": 0,
        "selected": 0,
        "selected_skipped": 0,
    }
    for step in sorted((run_dir / "steps").glob("[0-9]*")):
        merged = step / "merged_patch.json"
        if not merged.exists():
            continue
        patch = json.loads(merged.read_text(encoding="utf-8"))
        audit["proposed"] += patch["proposed"]
        audit["copied_from_prompt"] += patch["dropped_counts"]["copied from the prompt"]
        audit["dropped_inapplicable"] += patch["dropped_counts"]["cannot apply to the current skill"]
        report = json.loads((step / "edit_report.json").read_text(encoding="utf-8"))
        audit["selected"] += len(report)
        audit["selected_skipped"] += sum(1 for o in report if o["status"] != "applied")
    return audit


def run_skillgrad(seed: int, cfg: Path, args: argparse.Namespace, out: Path) -> dict[str, Any]:
    sets = [
        *args.set,
        f"benchmark.seed={seed}",
        f"train.seed={seed}",
        f"optimizer.edit_mode={args.edit_mode}",
    ]
    run_dir = out / "skillgrad"
    cmd = [
        "skillgrad",
        "train",
        "--config",
        str(cfg),
        "--out",
        str(run_dir),
        "--set",
        "benchmark.test_size=0",
    ]
    wall = run([*cmd, *[a for s in sets for a in ("--set", s)]], out / "skillgrad.log")
    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    by_role = summary["usage"]["by_role"]
    return {
        "baseline_val": summary["baseline_val_score"],
        "best_val": summary["best_val_score"],
        "test": evaluate(cfg, run_dir / "best_skill.md", seed, out / "eval_skillgrad", args.set),
        "target_calls": by_role.get("target", {}).get("calls", 0),
        "optimizer_calls": by_role.get("optimizer", {}).get("calls", 0),
        "wall_s": round(wall, 1),
        "audit": edit_audit(run_dir),
    }


def run_gepa(seed: int, cfg: Path, args: argparse.Namespace, out: Path, python: Path) -> dict[str, Any]:
    sets = [*args.set, f"benchmark.seed={seed}", f"train.seed={seed}"]
    gepa_dir = out / "gepa"
    cmd = [str(python), str(REPO / "bench" / "gepa_run.py"), "--config", str(cfg), "--seed", str(seed)]
    cmd += ["--budget", str(search_budget(cfg, sets)), "--out", str(gepa_dir)]
    run([*cmd, *[a for s in sets for a in ("--set", s)]], out / "gepa.log")
    gepa = json.loads((gepa_dir / "gepa.json").read_text(encoding="utf-8"))
    return {
        "baseline_val": gepa["baseline_val_score"],
        "best_val": gepa["best_val_score"],
        "test": evaluate(cfg, gepa_dir / "best_skill.md", seed, out / "eval_gepa", args.set),
        "target_calls": gepa["target_calls"],
        "optimizer_calls": gepa["optimizer_calls"],
        "wall_s": gepa["wall_s"],
    }


def one_seed(seed: int, cfg: Path, args: argparse.Namespace, python: Path) -> dict[str, Any]:
    out = args.out / f"seed{seed}"
    out.mkdir(parents=True, exist_ok=True)
    row: dict[str, Any] = {"seed": seed, "budget": search_budget(cfg, [*args.set, f"benchmark.seed={seed}"])}
    row["skillgrad"] = run_skillgrad(seed, cfg, args, out)
    earlier = args.gepa_from / f"seed{seed}" / "result.json" if args.gepa_from else None
    if earlier is not None:  # GEPA at temperature 0 on the same models, items and budget: reuse it
        before = json.loads(earlier.read_text(encoding="utf-8"))
        if before["budget"] != row["budget"]:
            sys.exit(f"{earlier}: GEPA ran with budget {before['budget']}, this run has {row['budget']}")
        row["test_initial"], row["gepa"] = before["test_initial"], before["gepa"]
        return row
    empty = out / "initial_skill.md"
    empty.write_text("", encoding="utf-8")
    row["test_initial"] = evaluate(cfg, empty, seed, out / "eval_initial", args.set)
    row["gepa"] = run_gepa(seed, cfg, args, out, python)
    return row


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| seed | system | baseline val | best val | test (initial -> best) | target calls "
        "| optimizer calls | wall s |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        for name in ("skillgrad", "gepa"):
            r = row[name]
            lines.append(
                f"| {row['seed']} | {name} | {r['baseline_val']:.3f} | {r['best_val']:.3f} | "
                f"{row['test_initial']:.3f} -> {r['test']:.3f} | {r['target_calls']} | "
                f"{r['optimizer_calls']} | {r['wall_s']} |"
            )
    for name in ("skillgrad", "gepa"):
        gains = [row[name]["test"] - row["test_initial"] for row in rows]
        calls = sum(row[name]["optimizer_calls"] for row in rows)
        lines.append(
            f"| mean | {name} | | | gain {sum(gains) / len(gains):+.3f} | | {calls / len(rows):.1f} | |"
        )
    audit = {k: sum(row["skillgrad"]["audit"][k] for row in rows) for k in rows[0]["skillgrad"]["audit"]}
    lines.append("")
    lines.append(
        f"skillgrad edits over every run: {audit['proposed']} proposed, {audit['copied_from_prompt']} copied "
        f"from the prompt (dropped), {audit['dropped_inapplicable']} dropped as inapplicable, "
        f"{audit['selected']} selected, {audit['selected_skipped']} selected but not applied."
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--target-model", help="GGUF path or hub id for the target (local backend)")
    parser.add_argument("--optimizer-model", help="GGUF path or hub id for the optimizer (local backend)")
    parser.add_argument("--edit-mode", default="patch", choices=("patch", "rewrite"))
    parser.add_argument("--set", action="append", default=[], help="config override for both systems")
    parser.add_argument("--venv", type=Path, help="reuse this GEPA venv (default: a temporary one)")
    parser.add_argument(
        "--gepa-from", type=Path, help="take GEPA's rows from this earlier --out (same seeds and models)"
    )
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "out" / "vs_gepa")
    args = parser.parse_args(argv)
    if args.target_model:
        args.set.append(f"model.target_model={args.target_model}")
    if args.optimizer_model:
        args.set.append(f"model.optimizer_model={args.optimizer_model}")
    args.out.mkdir(parents=True, exist_ok=True)
    cfg = args.out / "housestyle.yaml"
    cfg.write_text(CONFIG.format(epochs=args.epochs), encoding="utf-8")
    with tempfile.TemporaryDirectory(prefix="sg-gepa-") as tmp:
        python = gepa_python(args.venv or Path(tmp) / "venv")
        rows = []
        for seed in args.seeds:
            done = args.out / f"seed{seed}" / "result.json"
            if not done.exists():  # a finished seed is kept: rerun with more seeds to extend the table
                done.write_text(json.dumps(one_seed(seed, cfg, args, python), indent=2), encoding="utf-8")
            rows.append(json.loads(done.read_text(encoding="utf-8")))
            print(json.dumps(rows[-1]), flush=True)
    (args.out / "results.json").write_text(json.dumps(rows, indent=2), encoding="utf-8")
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
