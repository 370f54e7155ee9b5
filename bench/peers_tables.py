"""bench/vs_peers.py's pure parts: where rows are stored, which stored rows can be reused, the
per-seed table, and per system the mean test gain with a sign test over seeds."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from scipy.stats import binomtest

SYSTEMS = ("skillgrad", "gepa", "skillopt")
# What must be equal for a stored row to stand beside a new one: same items, models and budget.
SAME_SETTINGS = ("budget", "settings")


def row_path(out: Path, benchmark: str, seed: int, system: str) -> Path:
    return out / benchmark / f"seed{seed}" / f"{system}.json"


def read_row(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    row: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return row


def write_row(path: Path, row: Mapping[str, Any]) -> None:
    """Write one finished row whole (a temporary file renamed over it: never half a row)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_suffix(".json.part")
    part.write_text(json.dumps(row, indent=2, ensure_ascii=False), encoding="utf-8")
    part.replace(path)


def reuse_problem(stored: Mapping[str, Any], settings: Mapping[str, Any], budget: int) -> str | None:
    """Why a stored row cannot stand beside this run's (None when it can)."""
    if stored.get("budget") != budget:
        return f"budget {stored.get('budget')} there, {budget} here"
    theirs = stored.get("settings", {})
    for key in sorted(set(theirs) | set(settings)):
        if theirs.get(key) != settings.get(key):
            return f"settings.{key} is {theirs.get(key)!r} there, {settings.get(key)!r} here"
    return None


def gain(row: Mapping[str, Any]) -> float:
    return float(row["test_after"]) - float(row["test_before"])


def sign_test(gains: Sequence[float]) -> tuple[int, int, float]:
    """(seeds up, seeds down, two-sided exact sign-test p); ties are left out, as the test does."""
    up = sum(1 for g in gains if g > 1e-9)
    down = sum(1 for g in gains if g < -1e-9)
    p = binomtest(up, up + down, 0.5).pvalue if up + down else 1.0
    return up, down, float(p)


def _num(value: Any, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, float) and not math.isfinite(value):
        return "-"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def seed_table(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """One line per benchmark, seed and system, in that order."""
    lines = [
        "| benchmark | seed | system | baseline val | best val | test before -> after | target calls "
        "| optimizer calls | tokens (target / optimizer) | wall s |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    order = {name: i for i, name in enumerate(SYSTEMS)}
    for r in sorted(rows, key=lambda r: (r["benchmark"], r["seed"], order.get(r["system"], 9))):
        lines.append(
            f"| {r['benchmark']} | {r['seed']} | {r['system']} | {_num(r['baseline_val'])} | "
            f"{_num(r['best_val'])} | {_num(r['test_before'])} -> {_num(r['test_after'])} | "
            f"{r['target_calls']} | {r['optimizer_calls']} | "
            f"{r['target_tokens']} / {r['optimizer_tokens']} | "
            f"{_num(r['wall_s'], 0)} |"
        )
    return lines


def summary_table(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """Per benchmark and system: seeds, mean test gain, the sign test, mean optimizer calls."""
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["benchmark"], r["system"]), []).append(r)
    lines = [
        "| benchmark | system | seeds | mean test gain | seeds up / down | sign test p "
        "| mean optimizer calls | mean wall s |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    order = {name: i for i, name in enumerate(SYSTEMS)}
    for (bench, system), group in sorted(groups.items(), key=lambda kv: (kv[0][0], order.get(kv[0][1], 9))):
        gains = [gain(r) for r in group]
        up, down, p = sign_test(gains)
        calls = sum(r["optimizer_calls"] for r in group) / len(group)
        wall = sum(float(r["wall_s"]) for r in group) / len(group)
        lines.append(
            f"| {bench} | {system} | {len(group)} | {sum(gains) / len(gains):+.3f} | {up} / {down} | "
            f"{p:.3f} | {calls:.1f} | {wall:.0f} |"
        )
    return lines
