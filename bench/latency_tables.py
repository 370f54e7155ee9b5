"""The tables bench/latency.py prints: skillgrad's variants, and skillgrad beside SkillOpt 0.2.0
with the ratios and the issue's targets (calls <= 0.5x, rounds <= 0.35x, the same or a better
final val score, skillgrad's wall within 1.1x of L x its rounds). Beside the wall: the same ratio
net of the SDK floor (bench/first_request.py), what any program on the openai SDK spends from its
spawn to its first call, measured next to each run."""

from __future__ import annotations

from typing import Any

CALLS_TARGET, ROUNDS_TARGET, WALL_TARGET = 0.5, 0.35, 1.1


def per_round(r: dict[str, Any], floor: float = 0.0) -> float:
    return (float(r["wall"]) - floor) / (float(r["latency"]) * max(float(r["rounds"]), 1.0))


def net_of_floor(r: dict[str, Any]) -> float:
    return per_round(r, float(r["floor"]))


def print_variants(rows: list[dict[str, Any]]) -> None:
    print(
        "| L (s) | seed | variant | calls | rollout | val | analyst | rounds | wall (s) "
        "| wall / (L x rounds) | SDK floor (s) | (wall - floor) / (L x rounds) "
        "| val score | accepted | stopped |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        counts = " | ".join(f"{r[k]:g}" for k in ("calls", "rollout", "val", "analyst", "rounds"))
        print(
            f"| {r['latency']} | {r['seed']} | {r['variant']} | {counts} | {r['wall']:.2f} | "
            f"{per_round(r):.2f} | {r['floor']:.2f} | {net_of_floor(r):.2f} | {r['val_score']:.3f} | "
            f"{r['accepted']:g} | {r['stopped']} |"
        )
    print()


def targets(sg: dict[str, Any], so: dict[str, Any]) -> dict[str, bool]:
    return {
        "calls": sg["calls"] <= CALLS_TARGET * so["calls"],
        "rounds": sg["rounds"] <= ROUNDS_TARGET * so["rounds"],
        "val": sg["val_score"] >= so["val_score"],
        "wall": per_round(sg) <= WALL_TARGET,
    }


def pairs(figures: list[dict[str, Any]]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    sides: dict[tuple[float, int], dict[str, dict[str, Any]]] = {}
    for f in figures:
        if f["system"] == "skillopt" or f["variant"] == "default":
            sides.setdefault((f["latency"], f["seed"]), {})[f["system"]] = f
    return [(s["skillgrad"], s["skillopt"]) for s in sides.values() if len(s) == 2]


def print_side_by_side(figures: list[dict[str, Any]]) -> None:
    both = pairs(figures)
    print(
        "| L (s) | seed | system | calls | rollout | val | analyst | merge | rank | rounds | wall (s) "
        "| wall / (L x rounds) | final val | accepted |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for sg, so in both:
        for name, r in (("skillgrad", sg), ("SkillOpt 0.2.0", so)):
            counts = " | ".join(f"{r[k]:g}" for k in ("calls", "rollout", "val", "analyst", "merge", "rank"))
            print(
                f"| {r['latency']} | {r['seed']} | {name} | {counts} | {r['rounds']:g} | {r['wall']:.2f} | "
                f"{per_round(r):.2f} | {r['val_score']:.3f} | {r['accepted']:g} |"
            )
    print()
    print(
        "| L (s) | seed | calls sg/SO (<= 0.5) | rounds sg/SO (<= 0.35) | final val sg - SO (>= 0) "
        "| wall sg/SO | sg wall / (L x rounds) (<= 1.1) | sg (wall - SDK floor) / (L x rounds) "
        "| targets missed |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for sg, so in both:
        missed = [name for name, ok in targets(sg, so).items() if not ok]
        print(
            f"| {sg['latency']} | {sg['seed']} | {sg['calls'] / so['calls']:.3f} | "
            f"{sg['rounds'] / so['rounds']:.3f} | {sg['val_score'] - so['val_score']:+.3f} | "
            f"{sg['wall'] / so['wall']:.2f} | {per_round(sg):.2f} | {net_of_floor(sg):.2f} | "
            f"{', '.join(missed) or 'none'} |"
        )
    print()
    print(agreement(figures))


def own_counts(run: dict[str, Any]) -> dict[str, int]:
    """A run's calls by kind as the system itself counted them (its summary.json)."""
    own = run["own_calls"]
    if run["system"] == "skillopt":  # SkillOpt's target stage "rollout" covers train and val items
        return {
            "rollout+val": own.get("rollout", 0),
            "analyst": own.get("analyst", 0),
            "merge": own.get("merge", 0),
            "rank": own.get("ranking", 0),
        }
    return {
        "rollout+val": own.get("target/rollout", 0)
        + own.get("target/baseline", 0)
        + own.get("target/validate", 0),
        "analyst": own.get("optimizer/reflect", 0),
        "merge": 0,
        "rank": 0,
    }


def agreement(figures: list[dict[str, Any]]) -> str:
    """Whether the server's counts match each system's own, run by run (and nothing unknown)."""
    bad = []
    for f in figures:
        for run in f["reps"]:
            seen = {
                "rollout+val": run["rollout"] + run["val"],
                **{k: run[k] for k in ("analyst", "merge", "rank")},
            }
            if run["unknown"] or seen != own_counts({**run, "system": f["system"]}):
                bad.append(f"L={f['latency']} seed={f['seed']} {f['system']} {f['variant']}: server {seen}")
    if not bad:
        runs = sum(len(f["reps"]) for f in figures)
        return f"Server counts agree with each system's own counts on all {runs} runs; no unknown request."
    return "WARNING: server counts differ from the systems' own counts:\n" + "\n".join(bad)
