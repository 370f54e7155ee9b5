"""bench/vs_peers.py's pure parts: where rows are stored, which stored rows can be reused, the
per-seed table, per system the mean test gain with a sign test over seeds, and the learning table:
per benchmark its headroom (bench/headroom.py's rows: the best reference skill's mean test score
less the empty skill's), each system's mean test gain over the empty skill and the share of the
headroom it recovered (gain / headroom), its calls, and skillgrad against each peer seed by seed
(a sign test)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from peers_bench import MIN_TEST_ITEMS, test_settings
from scipy.stats import binomtest

SYSTEMS = ("skillgrad", "gepa", "skillopt", "dspy")
HEADROOM_BAR = 0.10  # benchmarks with at least this headroom are where a skill can show it learns
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
    """Per benchmark and system: seeds, the mean gain over the system's own initial skill (DSPy's is
    its zero-shot program; the learning table's gain is over the empty skill), the sign test of
    those gains, mean optimizer calls and wall."""
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["benchmark"], r["system"]), []).append(r)
    lines = [
        "| benchmark | system | seeds | mean gain over its own start | seeds up / down | sign test p "
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


def headroom_rows(root: Path, benchmarks: Iterable[str]) -> list[dict[str, Any]]:
    """bench/headroom.py's rows under `root` (every model label) for `benchmarks`, smoke rows and
    rows of fewer than MIN_TEST_ITEMS test items left out."""
    rows = []
    for bench in benchmarks:
        for path in sorted(root.glob(f"*/{bench}/seed*.json")):
            row = read_row(path)
            if row and not row.get("smoke") and row["settings"]["test_size"] >= MIN_TEST_ITEMS:
                rows.append(row)
    return rows


def _key(row: Mapping[str, Any]) -> str:
    return json.dumps(test_settings(row["settings"]), sort_keys=True)


def headroom(rows: Sequence[Mapping[str, Any]]) -> tuple[float, str, float] | None:
    """(headroom, the best reference, the empty skill's mean) over one benchmark's seeds: the
    reference with the highest mean test score among those every seed has, less the empty skill's
    mean. None without rows or without the empty skill."""
    scored = [{name: ref["score"] for name, ref in r["references"].items()} for r in rows]
    common = set.intersection(*(set(s) for s in scored)) if scored else set()
    if "empty" not in common:
        return None
    means = {name: sum(s[name] for s in scored) / len(scored) for name in common}
    best = max(sorted(means), key=lambda name: means[name])
    return means[best] - means["empty"], best, means["empty"]


def share(gain_value: float, room: float | None) -> float | None:
    """The share of the headroom a gain recovered (None where there is no headroom to share)."""
    return gain_value / room if room is not None and room > 1e-9 else None


def versus(ours: Sequence[Mapping[str, Any]], theirs: Sequence[Mapping[str, Any]]) -> list[float]:
    """Skillgrad against a peer on the seeds both ran, by the test score each reached on the same
    items: per seed, skillgrad's score less the peer's."""
    mine = {r["seed"]: float(r["test_after"]) for r in ours}
    return [mine[r["seed"]] - float(r["test_after"]) for r in theirs if r["seed"] in mine]


def empty_scores(head: Iterable[Mapping[str, Any]]) -> dict[int, float]:
    """Per seed, the empty skill's test score of bench/headroom.py's rows (one benchmark's)."""
    return {h["seed"]: h["references"]["empty"]["score"] for h in head if "empty" in h["references"]}


def common_gain(row: Mapping[str, Any], empties: Mapping[int, float]) -> float:
    """The test score a system reached less the empty skill's on the same items: the base the
    headroom is measured from, the same for every system. A system's own initial skill may start
    lower (DSPy's zero-shot program answers in its own format: 0.000 on hyperbaton, where the empty
    skill scores 0.385), and a gain over that start is no part of what a skill can add. Without a
    headroom row for the seed, the row's own start."""
    return float(row["test_after"]) - empties.get(row["seed"], float(row["test_before"]))


def _model(settings: Mapping[str, Any]) -> str:
    return str(settings.get("target_model", "")).split(" (")[0]


def learning_table(head: Iterable[Mapping[str, Any]], rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """Per target model, benchmark and system: the headroom (over the seeds the system ran), the
    mean test gain over the empty skill (`common_gain`) and its share of the headroom, the scores
    it started and ended at and its gain over its own start, calls, the sign test of its gains,
    skillgrad against it by the score reached; then, over benchmarks with headroom >=
    HEADROOM_BAR, each system's mean gain and share."""
    rooms: dict[str, list[Mapping[str, Any]]] = {}
    for h in head:
        rooms.setdefault(_key(h), []).append(h)
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for r in rows:
        groups.setdefault((_key(r), r["system"]), []).append(r)
    lines = [
        "| target | benchmark | headroom (best reference) | system | seeds | mean test gain | share "
        "| mean test before -> after | gain over its own start | mean target calls "
        "| mean optimizer calls | seeds up / down (p) | skillgrad better / worse (p) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    order = {name: i for i, name in enumerate(SYSTEMS)}
    over_bar: dict[tuple[str, str], list[BarEntry]] = {}
    for (key, system), group in sorted(groups.items(), key=lambda kv: (kv[0][0], order.get(kv[0][1], 9))):
        first = group[0]
        # the headroom of the seeds this system ran: another seed's items are other test items
        seeds = {r["seed"] for r in group}
        ran = [h for h in rooms.get(key, []) if h["seed"] in seeds]
        room, empties = headroom(ran), empty_scores(ran)
        gains = [common_gain(r, empties) for r in group]
        mean_gain = sum(gains) / len(gains)
        up, down, p = sign_test(gains)
        vs, differences = "-", None
        if system != "skillgrad" and (ours := groups.get((key, "skillgrad"))):
            differences = versus(ours, group)
            vs = _versus_cell(differences)
        part = share(mean_gain, room[0] if room else None)
        if room and room[0] >= HEADROOM_BAR:
            entry = BarEntry(mean_gain, part, differences)
            over_bar.setdefault((_model(first["settings"]), system), []).append(entry)
        means = [sum(r[k] for r in group) / len(group) for k in ("test_before", "test_after")]
        calls = [sum(r[k] for r in group) / len(group) for k in ("target_calls", "optimizer_calls")]
        lines.append(
            f"| {_model(first['settings'])} | {first['benchmark']} | "
            f"{f'{room[0]:.3f} ({room[1]})' if room else '-'} | {system} | {len(group)} | "
            f"{mean_gain:+.3f} | {_num(part, 2)} | {means[0]:.3f} -> {means[1]:.3f} | "
            f"{means[1] - means[0]:+.3f} | {calls[0]:.1f} | {calls[1]:.1f} | "
            f"{up} / {down} ({p:.3f}) | {vs} |"
        )
    return [*lines, "", *_bar_table(over_bar)]


@dataclass(frozen=True)
class BarEntry:
    """One benchmark's figures for the table over the benchmarks with headroom: a system's mean
    gain, its share, and skillgrad's score less the system's per seed both ran (None: skillgrad)."""

    gain: float
    share: float | None
    differences: list[float] | None


def _versus_cell(differences: Sequence[float]) -> str:
    better, worse, p = sign_test(differences)
    return f"{better} / {worse} ({p:.3f})"


def _bar_table(over_bar: Mapping[tuple[str, str], list[BarEntry]]) -> list[str]:
    """Per target and system over the benchmarks with headroom: the mean gain and share, and
    skillgrad against the system over every seed pair of those benchmarks (the mean difference of
    the scores reached and the sign test of the pairs: one seed of one benchmark is one pair)."""
    lines = [
        f"| target | system | benchmarks with headroom >= {HEADROOM_BAR:.2f} | mean test gain | mean share "
        "| seed pairs | skillgrad - system, mean | skillgrad better / worse (p) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    order = {name: i for i, name in enumerate(SYSTEMS)}
    for (model, system), values in sorted(
        over_bar.items(), key=lambda kv: (kv[0][0], order.get(kv[0][1], 9))
    ):
        shares = [v.share for v in values if v.share is not None]
        mean_share = sum(shares) / len(shares) if shares else None
        pairs = [d for v in values for d in v.differences or []]
        compared = (
            f"{len(pairs)} | {sum(pairs) / len(pairs):+.3f} | {_versus_cell(pairs)}" if pairs else "- | - | -"
        )
        lines.append(
            f"| {model} | {system} | {len(values)} | {sum(v.gain for v in values) / len(values):+.3f} | "
            f"{_num(mean_share, 2)} | {compared} |"
        )
    return lines


def change_table(now: Iterable[Mapping[str, Any]], before: Iterable[Mapping[str, Any]]) -> list[str]:
    """Skillgrad's rows against an earlier set of its rows (another commit, another config) on the
    benchmarks and seeds both have with the same test settings: per benchmark the mean test score
    each reached (a row the later folder copied unchanged is no pair), the mean change, the seeds
    better / worse / equal and a two-sided sign test, and the seeds that ended with the same best
    skill text (in brackets, those of them whose test score moved: the change sends the same text
    another way, or the served model answered the same prompts otherwise, as its prompt cache
    can make it); then the same over every pair."""
    earlier = {(_key(r), r["seed"]): r for r in before if r["system"] == "skillgrad"}
    pairs: dict[str, list[tuple[float, float, bool]]] = {}
    for r in now:
        old = earlier.get((_key(r), r["seed"])) if r["system"] == "skillgrad" else None
        if old is not None and old != r:  # a row copied over unchanged measured nothing again
            same = old.get("best_skill") is not None and old.get("best_skill") == r.get("best_skill")
            pair = (float(old["test_after"]), float(r["test_after"]), same)
            pairs.setdefault(r["benchmark"], []).append(pair)
    lines = [
        "| benchmark | seeds | mean test before the change | after | change | better / worse / equal (p) "
        "| same best skill (test moved) |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    everything = [pair for key in sorted(pairs) for pair in pairs[key]]
    for name, group in [*sorted(pairs.items()), *([("all", everything)] if everything else [])]:
        old_mean, new_mean = (sum(p[i] for p in group) / len(group) for i in (0, 1))
        up, down, p = sign_test([b - a for a, b, _ in group])
        moved = [a != b for a, b, same in group if same]  # per seed that kept its skill: did test move
        lines.append(
            f"| {name} | {len(group)} | {old_mean:.3f} | {new_mean:.3f} | {new_mean - old_mean:+.3f} | "
            f"{up} / {down} / {len(group) - up - down} ({p:.3f}) | {len(moved)} ({sum(moved)}) |"
        )
    return lines
