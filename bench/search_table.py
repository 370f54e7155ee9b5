"""Side by side: two or more `bench/vs_gepa.py` runs of skillgrad (e.g. `optimizer.search=frontier`
and `greedy`) and GEPA, test gain per seed, on the seeds every run finished.

    python bench/search_table.py frontier=OUT_FRONTIER greedy=OUT_GREEDY

Each NAME=DIR is a vs_gepa `--out`; GEPA's column is the first run's (a later run made with
`--gepa-from` of it holds the same GEPA rows). The first run is compared with each other column:
seeds up / down and the two-sided exact sign test over seeds (ties left out); then the mean target
and optimizer calls of each column. Seeds a run has not finished are left out, and said.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from peers_tables import sign_test  # noqa: E402

Column = dict[int, dict[str, Any]]  # seed -> {"gain", "target_calls", "optimizer_calls"}
GEPA = "GEPA 0.1.4"


def _cell(row: Mapping[str, Any], system: str) -> dict[str, Any]:
    r = row[system]
    return {
        "gain": r["test"] - row["test_initial"],
        "target_calls": r["target_calls"],
        "optimizer_calls": r["optimizer_calls"],
    }


def read_runs(named: Sequence[tuple[str, Path]]) -> dict[str, Column]:
    """Every run's skillgrad column by name, then GEPA's (from the first run), seed by seed."""
    columns: dict[str, Column] = {name: {} for name, _ in named} | {GEPA: {}}
    for name, out in named:
        for result in sorted(out.glob("seed*/result.json")):
            row = json.loads(result.read_text(encoding="utf-8"))
            columns[name][int(row["seed"])] = _cell(row, "skillgrad")
            if name == named[0][0]:
                columns[GEPA][int(row["seed"])] = _cell(row, "gepa")
    return columns


def table(columns: Mapping[str, Column]) -> str:
    names = list(columns)
    seeds = sorted(set.intersection(*(set(c) for c in columns.values())))
    if not seeds:
        return "no seed finished by every run"

    def mean(name: str, key: str) -> float:
        return sum(columns[name][s][key] for s in seeds) / len(seeds)

    first = names[0]
    lines = ["| seed | " + " | ".join(names) + " |", "| --- |" + " --- |" * len(names)]
    for seed in seeds:
        lines.append(f"| {seed} | " + " | ".join(f"{columns[n][seed]['gain']:+.3f}" for n in names) + " |")
    lines.append("| mean | " + " | ".join(f"{mean(n, 'gain'):+.3f}" for n in names) + " |")
    cells = []
    for name in names[1:]:
        up, down, p = sign_test([columns[first][s]["gain"] - columns[name][s]["gain"] for s in seeds])
        cells.append(f"{up} / {down} (p {p:.3f})")
    lines.append(f"| {first} vs it: seeds up / down (sign test) | | " + " | ".join(cells) + " |")
    for key in ("target_calls", "optimizer_calls"):
        lines.append(
            f"| mean {key.replace('_', ' ')} | " + " | ".join(f"{mean(n, key):.1f}" for n in names) + " |"
        )
    missing = {n: sorted(set(c).difference(seeds)) for n, c in columns.items()}
    if any(missing.values()):
        lines.append("")
        lines.append(
            "left out (not finished by every run): " + json.dumps({n: m for n, m in missing.items() if m})
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("runs", nargs="+", metavar="NAME=DIR", help="a vs_gepa --out folder, named")
    args = parser.parse_args(argv)
    named = []
    for item in args.runs:
        name, sep, folder = item.partition("=")
        if not sep or not name or not Path(folder).is_dir():
            parser.error(f"{item!r}: pass NAME=DIR, DIR a bench/vs_gepa.py --out folder")
        named.append((name, Path(folder)))
    print(table(read_runs(named)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
