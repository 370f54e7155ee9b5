"""Which label the last worked example gives, beside the test score a skill of examples reached.

    python bench/example_labels.py --data-root ../shared/data --out docs/vs_peers_q15_e9fc7ae

Reads the rows bench/vs_peers.py keeps (OUT/<benchmark>/seed<N>/<system>.json) of the systems
whose skills are worked examples: skillgrad (its skill's examples section, `skillgrad.demos`) and
DSPy (its compiled prompt's demos, the assistant turns' `answer` field). For each row of a
benchmark whose expected answers are option labels like (A), the examples' labels in their order
and, over the seed's 32 test items (the peers bench's items, loaded as bench/headroom.py loads
them), the share of items whose expected label is the last example's and the mean share of the
examples' labels. A small target tends to give the last example's label to most items (the
recency bias of few-shot prompts), so a skill scores more where that label is frequent on test.

Then, over the rows, with each benchmark's mean taken out (benchmarks differ in their number of
labels and in what the examples teach): the correlation of the last example's label's test share
with the test score and the slope of a least-squares line; and what ordering the same examples
could win, val-free: the test share of the last label if the example of the label most frequent
in train (in train and val) went last, against the order each row has.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peers_bench import BENCHMARKS, NOWHERE, data_file, seed_config  # noqa: E402
from peers_tables import read_row  # noqa: E402

from skillgrad.benchmarks.catalog import load_benchmark  # noqa: E402
from skillgrad.demos import parse_demos  # noqa: E402
from skillgrad.loop.formfix import task_label  # noqa: E402
from skillgrad.loop.shapes import OPTION, answer_shape  # noqa: E402
from skillgrad.skilldoc import normalize_text  # noqa: E402

SYSTEMS = ("skillgrad", "dspy")
DSPY_ANSWER = "[[ ## answer ## ]]"


@dataclass(frozen=True)
class Labels:
    """The labels of one seed's splits (normalized expected answers)."""

    train: list[str]
    val: list[str]
    test: list[str]


@dataclass(frozen=True)
class Row:
    benchmark: str
    seed: int
    system: str
    examples: list[str]  # the examples' labels, in the order the target is shown them
    test: float  # the test score the row's skill reached
    last_share: float  # test items whose label is the last example's
    mean_share: float  # mean over the examples of their label's test share
    by_train: float  # the last label's share with the train-majority example last
    by_train_val: float  # the same, train and val counted


def example_labels(row: Mapping[str, Any]) -> list[str]:
    """The expected answers the row's worked examples show, in order (normalized)."""
    skill = str(row.get("best_skill") or "")
    if row["system"] == "skillgrad":
        return [normalize_text(d.answer) for d in parse_demos(skill)]
    try:
        messages = json.loads(skill)
    except json.JSONDecodeError:
        return []
    if not isinstance(messages, list):
        return []
    replies = [
        str(m.get("content", "")) for m in messages if isinstance(m, dict) and m.get("role") == "assistant"
    ]
    return [normalize_text(r.split(DSPY_ANSWER, 1)[-1].split("[[ ##", 1)[0]) for r in replies]


def seed_labels(key: str, seed: int, args: argparse.Namespace) -> Labels:
    spec = BENCHMARKS[key]
    bench = load_benchmark(
        seed_config(spec, data_file(spec, args), NOWHERE, args.work / f"{key}.yaml", seed, args)
    )
    return Labels(*([task_label(t) for t in bench.load(split)] for split in ("train", "val", "test")))


def last_by(examples: Sequence[str], counts: Counter[str]) -> str:
    """The label that goes last when the example of the most counted label does (ties: the later)."""
    return max(reversed(examples), key=lambda label: counts[label])


def measured(row: Mapping[str, Any], labels: Labels) -> Row | None:
    examples = example_labels(row)
    if not examples or any(answer_shape(label.upper()) != OPTION for label in [*examples, *labels.test]):
        return None
    share = Counter(labels.test)
    n = len(labels.test)
    train = Counter(labels.train)
    return Row(
        row["benchmark"], int(row["seed"]), row["system"], examples, float(row["test_after"]),
        share[examples[-1]] / n, statistics.mean(share[label] / n for label in examples),
        share[last_by(examples, train)] / n, share[last_by(examples, train + Counter(labels.val))] / n,
    )  # fmt: skip


def centered(rows: Sequence[Row], value: str) -> list[float]:
    """`value` of each row less its benchmark's mean."""
    means = {
        b: statistics.mean(getattr(r, value) for r in rows if r.benchmark == b)
        for b in {r.benchmark for r in rows}
    }
    return [getattr(r, value) - means[r.benchmark] for r in rows]


def fit(x: Sequence[float], y: Sequence[float]) -> tuple[float, float]:
    """Correlation and least-squares slope of centered values (0, 0 where x does not vary)."""
    sxx, syy = sum(a * a for a in x), sum(b * b for b in y)
    sxy = sum(a * b for a, b in zip(x, y, strict=True))
    if sxx == 0 or syy == 0:
        return 0.0, 0.0
    return sxy / (sxx * syy) ** 0.5, sxy / sxx


def permutation_p(rows: Sequence[Row], value: str, draws: int = 10000) -> float:
    """One-sided Monte Carlo p of the within-benchmark correlation: the test scores shuffled
    among each benchmark's rows (seeded), how often the correlation is at least the one seen."""
    x, y = centered(rows, value), centered(rows, "test")
    seen = fit(x, y)[0]
    groups = [
        [i for i, r in enumerate(rows) if r.benchmark == b] for b in sorted({r.benchmark for r in rows})
    ]
    rng, hits = random.Random(0), 0
    for _ in range(draws):
        shuffled = list(y)
        for group in groups:
            values = [y[i] for i in group]
            rng.shuffle(values)
            for i, v in zip(group, values, strict=True):
                shuffled[i] = v
        hits += fit(x, shuffled)[0] >= seen - 1e-12
    return (hits + 1) / (draws + 1)


def table(rows: Sequence[Row]) -> list[str]:
    lines = [
        "| benchmark | seed | system | examples' labels | test share of the last one | mean share | test |"
    ]
    lines.append("| --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        lines.append(
            f"| {r.benchmark} | {r.seed} | {r.system} | {' '.join(r.examples)} | {r.last_share:.2f} "
            f"| {r.mean_share:.2f} | {r.test:.3f} |"
        )
    return lines


def summary(rows: Sequence[Row]) -> list[str]:
    if len(rows) < 3:
        return [f"{len(rows)} rows: too few for a fit"]
    test = centered(rows, "test")
    lines = []
    for value, name in (
        ("last_share", "the last example's label"),
        ("mean_share", "the examples' labels, mean"),
    ):
        corr, slope = fit(centered(rows, value), test)
        lines.append(
            f"test share of {name} against the test score, within benchmarks: r {corr:+.2f}, "
            f"slope {slope:+.2f}, p {permutation_p(rows, value):.4f} (scores shuffled within benchmarks)"
        )
    mean = {
        v: statistics.mean(getattr(r, v) for r in rows) for v in ("last_share", "by_train", "by_train_val")
    }
    benchmarks = len({r.benchmark for r in rows})
    lines.append(
        f"mean test share of the last label over {len(rows)} rows ({benchmarks} benchmarks): "
        f"as ordered {mean['last_share']:.3f}; train's most frequent label last {mean['by_train']:.3f}; "
        f"train and val's {mean['by_train_val']:.3f}"
    )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data-root", type=Path, required=True, help="folder of the benchmark files")
    parser.add_argument("--out", type=Path, required=True, help="a folder of bench/vs_peers.py's rows")
    parser.add_argument(
        "--work", type=Path, default=Path("bench/out/example_labels"), help="configs written here"
    )
    parser.add_argument("--context-chars", type=int, default=1500, help=argparse.SUPPRESS)
    parser.add_argument("--hotpot-context-chars", type=int, default=3000, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if not args.out.is_dir():
        parser.error(f"--out {args.out}: no such folder; pass a folder of bench/vs_peers.py's rows")
    args.work.mkdir(parents=True, exist_ok=True)
    rows: list[Row] = []
    splits: dict[tuple[str, int], Labels] = {}
    for path in sorted(args.out.glob("*/seed*/*.json")):
        row = read_row(path)
        if row is None or row.get("system") not in SYSTEMS or row.get("test_after") is None:
            continue
        if row["benchmark"] not in BENCHMARKS:
            continue
        key = (row["benchmark"], int(row["seed"]))
        if key not in splits:
            splits[key] = seed_labels(*key, args)
        if (found := measured(row, splits[key])) is not None:
            rows.append(found)
    print("\n".join([*table(rows), "", *summary(rows)]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
