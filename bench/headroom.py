"""Headroom, measured: per target model, benchmark and seed, the test score of the empty skill and
of reference skills that need no optimizer, on the test items bench/vs_peers.py uses.

    python bench/headroom.py --data-root ../shared/data --target-model Q15.gguf --model-label qwen15 \\
        --benchmarks all --seeds 0 1 2 --references empty rule+demos3
    python bench/headroom.py --table-only                 # the stored rows' table

References (each a skill that skillgrad itself can write, from its own pieces):

    empty         the empty skill
    rule          the format rule that the train answers' common form implies
                  (skillgrad.loop.shapes.form_rule: the rule the form fix adds); where they share
                  no form a rule can state, there is no rule and this is the empty skill
    demosK        K = 1..8 worked train examples: skillgrad.demos' examples section, each entry the
                  task as the chat target sees it and its expected answer, the tasks picked as the
                  form fix picks them (loop/formfix.pick_examples: one per expected answer first)
    rule+demosK   both

The items and the target are the peers bench's: its config (bench/peers_bench.py: 12 train / 12 val
/ 32 test items by `benchmark.seed`, backend openai_chat at the served target, temperature 0, the
benchmark's output cap, call cache off), the target served by bench/peers_server.py (--threads each,
one by default; no optimizer is served). Each reference is scored with `skillgrad.evaluate` on the
test split; one identical to a reference already scored on the seed (a `rule` where there is none)
is not scored again (`same_as`). A reference's calls and tokens are counted at the router. A
reference with worked examples records how the target was shown them (`examples_shown_as`:
backends/chat_agent.EXAMPLES_SHOWN_AS of model.chat_examples' default); one scored another way (rows
made before that key: as text) is scored again, its earlier score kept as `score_as_<that way>`
(`score_as_text`, `score_as_turns`: turns that each repeated the closing instruction).

Rows: OUT/<model-label>/<benchmark>/seed<N>.json (OUT: docs/headroom), one per model, benchmark and
seed, written again after each reference; a reference already in its row is not run again, so a
scan can run `empty rule+demos3` first and the other references later. A row made with other
settings (items, model, caps) stops the run: pass another --out. `--smoke N` scores N test items
only, for a check that the script runs end to end; its rows go to bench/out/headroom_smoke, never
under docs/ (rows kept there have at least 32 test items), and no table reads them.

Prints per model and benchmark: the seeds, each reference's mean test score, the best reference
and the headroom (its mean less the empty skill's), and the headroom of each seed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from peers_bench import (  # noqa: E402
    BENCHMARKS,
    GROUPS,
    NAMES,
    NOWHERE,
    SIZES,
    Spec,
    add_serving_options,
    context_chars,
    data_file,
    expand,
    model_name,
    seed_config,
)
from peers_server import Router, Served, usage  # noqa: E402
from peers_tables import headroom, read_row, sign_test, write_row  # noqa: E402

from skillgrad import evaluate  # noqa: E402
from skillgrad.backends.chat_agent import EXAMPLES_SHOWN_AS  # noqa: E402
from skillgrad.benchmarks.catalog import load_benchmark  # noqa: E402
from skillgrad.demos import demo_from_task, with_demos  # noqa: E402
from skillgrad.errors import UserError  # noqa: E402
from skillgrad.loop.formfix import pick_examples  # noqa: E402
from skillgrad.loop.shapes import form_rule  # noqa: E402
from skillgrad.values import AgentResult, Rollout, Score, Task  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
MAX_DEMOS = 8  # past skill.max_examples' default (4): what more examples would buy
REFERENCES = ("empty", "rule", *(f"{p}demos{k}" for p in ("", "rule+") for k in range(1, MAX_DEMOS + 1)))


def fail(message: str) -> SystemExit:
    print(message, file=sys.stderr)
    return SystemExit(2)


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def demo_tasks(train: Sequence[Task], k: int = MAX_DEMOS) -> list[Task]:
    """Up to `k` train tasks for worked examples, as the form fix picks them from tasks not yet
    run (none passed): one per expected answer first, in split order."""
    unscored = [Rollout(t, AgentResult(answer=""), Score(0.0, False, "")) for t in train]
    by_id = {t.id: t for t in train}
    return [by_id[i] for i in pick_examples(unscored, k, set())]


def reference_skills(
    train: Sequence[Task], example_chars: int
) -> tuple[str | None, list[str], dict[str, str]]:
    """(the format rule or None, the demo tasks' ids, each reference's skill text)."""
    rule = form_rule([t.answers[0] for t in train if t.answers])
    tasks = demo_tasks(train)
    demos = [demo_from_task(t, max_chars=example_chars) for t in tasks]
    head = rule + "\n" if rule else ""
    skills = {"empty": "", "rule": head}
    for k in range(1, MAX_DEMOS + 1):
        skills[f"demos{k}"] = with_demos("", demos[:k])
        skills[f"rule+demos{k}"] = with_demos(head, demos[:k])
    return rule, [t.id for t in tasks], skills


@dataclass
class Job:
    """One model, benchmark and seed: where its row is, what it holds, what is left to score."""

    key: str
    seed: int
    spec: Spec
    data: Path
    path: Path
    row: dict[str, Any]
    skills: dict[str, str]
    todo: list[str]
    shown: str  # how the chat target is shown worked examples (EXAMPLES_SHOWN_AS)


def row_settings(spec: Spec, key: str, args: argparse.Namespace) -> dict[str, Any]:
    """What decides a test score besides the skill (peers_bench.TEST_SETTINGS' keys)."""
    return {
        "benchmark": key,
        "data": spec.data,
        **SIZES,
        "test_size": args.test_size,
        "target_model": model_name(args.target_model),
        "target_cap": spec.target_cap,
        "ctx": args.ctx,
        "context_chars": context_chars(spec, args),
    }


def stale(stored: Mapping[str, Any], fresh: Mapping[str, Any], skills: Mapping[str, str]) -> str | None:
    """Why a stored row cannot be extended by this run (None when it can)."""
    theirs, ours = stored["settings"], fresh["settings"]
    for key in sorted(set(theirs) | set(ours)):
        if theirs.get(key) != ours.get(key):
            return f"settings.{key} is {theirs.get(key)!r} there, {ours.get(key)!r} here"
    if stored["test_ids"] != fresh["test_ids"]:
        return "its test items are not this run's"
    for name, ref in stored["references"].items():
        if name in skills and ref["skill_sha"] != sha(skills[name]):
            return f"its {name} skill is not the one skillgrad writes now"
    return None


def plan(args: argparse.Namespace, key: str, seed: int) -> Job:
    spec = BENCHMARKS[key]
    data = data_file(spec, args)
    folder = args.work / args.model_label / key / f"seed{seed}"
    folder.mkdir(parents=True, exist_ok=True)
    cfg = seed_config(spec, data, NOWHERE, folder / "config.yaml", seed, args, args.test_size)
    bench = load_benchmark(cfg)
    rule, ids, skills = reference_skills(bench.load("train"), cfg.skill.example_chars)
    fresh = {
        "model": args.model_label,
        "benchmark": key,
        "seed": seed,
        "smoke": args.smoke is not None,
        "settings": row_settings(spec, key, args),
        "rule": rule,
        "demo_tasks": ids,
        "test_ids": [t.id for t in bench.load("test")],
        "references": {},
    }
    path = args.out / args.model_label / key / f"seed{seed}.json"
    stored = read_row(path)
    if stored is not None and (problem := stale(stored, fresh, skills)):
        raise fail(f"{path}: made with other settings ({problem}); pass another --out")
    row = {**stored, "demo_tasks": ids} if stored else fresh  # a row of fewer demos: its prefix
    shown = EXAMPLES_SHOWN_AS[cfg.model.chat_examples]
    todo = [
        r for r in args.references if r not in row["references"] or outdated(r, row["references"][r], shown)
    ]
    return Job(key, seed, spec, data, path, row, skills, todo, shown)


def outdated(name: str, ref: Mapping[str, Any], shown: str) -> bool:
    """A reference with worked examples scored when the chat target was shown them another way
    (EXAMPLES_SHOWN_AS; rows made before that key were scored with the examples as text): it is
    scored again. A skill without examples is sent alike both ways."""
    return "demos" in name and ref.get("examples_shown_as", "text") != shown


def commit() -> str:
    done = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    return done.stdout.strip()


def score(job: Job, ref: str, args: argparse.Namespace, router: Router) -> dict[str, Any]:
    """One reference's test score and what it cost (or `same_as` a reference with its skill)."""
    text = job.skills[ref]
    for name, done in job.row["references"].items():
        if done["skill_sha"] == sha(text) and not outdated(name, done, job.shown):
            return {**done, "same_as": done.get("same_as", name)}
    folder = args.work / args.model_label / job.key / f"seed{job.seed}" / ref.replace("+", "_")
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    (folder / "skill.md").write_text(text, encoding="utf-8")
    config = folder.parent / "config.yaml"  # the same file `plan` wrote, now at the router
    cfg = seed_config(job.spec, job.data, router.base_url, config, job.seed, args, args.test_size)
    mark, start = router.log.mark(), time.perf_counter()
    try:
        result = evaluate(cfg, folder / "skill.md", split="test", out=folder / "eval", use_cache=False)
    except UserError as exc:
        raise fail(f"{job.key} seed {job.seed} {ref}: {exc}") from None
    counted = usage(router.log.since(mark))
    return {
        "score": result.mean_score,
        "n": result.n,
        "passed": result.passed,
        "errors": result.errors,
        "target_calls": counted["target_calls"],
        "target_tokens": counted["target_tokens"],
        "wall_s": round(time.perf_counter() - start, 1),
        "skill_sha": sha(text),
        **({"examples_shown_as": job.shown} if "demos" in ref else {}),
    }


def run(args: argparse.Namespace, jobs: list[Job], router: Router) -> None:
    """Score every job's references left to score, through `router`, writing each row as it grows."""
    for job in jobs:
        router.caps["target"] = job.spec.target_cap
        for ref in job.todo:
            print(f"{args.model_label} {job.key} seed {job.seed}: {ref} ...", file=sys.stderr, flush=True)
            before = job.row["references"].get(ref)
            job.row["references"][ref] = score(job, ref, args, router)
            if before is not None and "same_as" not in before:  # kept: the scores shown older ways
                earlier = {k: v for k, v in before.items() if k.startswith("score_as_")}
                way = re.sub(r"\W+", "_", before.get("examples_shown_as", "text"))
                job.row["references"][ref].update({**earlier, f"score_as_{way}": before["score"]})
            job.row["commit"] = commit()
            write_row(job.path, job.row)
            print(json.dumps({"benchmark": job.key, "seed": job.seed, ref: job.row["references"][ref]}))


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def headroom_table(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """Per model and benchmark: seeds, each reference's mean test score, the best, the headroom."""
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["model"], r["benchmark"]), []).append(r)
    refs = [n for n in REFERENCES if any(n in r["references"] for g in groups.values() for r in g)]
    lines = [
        f"| model | benchmark | seeds | {' | '.join(refs)} | best | headroom | per seed |",
        "| --- | --- | --- | " + "--- | " * len(refs) + "--- | --- | --- |",
    ]
    for (model, bench), group in sorted(groups.items()):
        group = sorted(group, key=lambda r: r["seed"])
        means = []
        for name in refs:
            have = [r["references"][name]["score"] for r in group if name in r["references"]]
            means.append(_cell(sum(have) / len(have)) if len(have) == len(group) else "-")
        room = headroom(group)
        seeds = [headroom([r]) for r in group]
        per_seed = " / ".join(f"{s[0]:.2f}" if s else "-" for s in seeds)
        best = f"{room[1]} | {room[0]:+.3f}" if room else "- | -"
        model = f"{model} (smoke)" if any(r.get("smoke") for r in group) else model
        lines.append(f"| {model} | {bench} | {len(group)} | {' | '.join(means)} | {best} | {per_seed} |")
    return lines


# The ways a row's reference may have been scored before (`score_as_<way>`), as its tables name them.
EARLIER_WAYS = {"text": "as text", "turns": "as turns, each with the instruction"}


def shown_table(rows: Iterable[Mapping[str, Any]], way: str = "text") -> list[str]:
    """The same reference with its worked examples shown an earlier way (`score_as_<way>`) and its
    latest score (the way it was shown then in the last column), where a row kept both, and a
    two-sided sign test over the pairs; [] where none did."""
    key = f"score_as_{way}"
    pairs = [
        (r, name, ref[key], ref["score"]) for r in rows for name, ref in r["references"].items() if key in ref
    ]
    if not pairs:
        return []
    lines = [
        f"| model | benchmark | seed | reference | {EARLIER_WAYS[way]} | latest | latest shown as |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r, name, before, now in sorted(pairs, key=lambda p: (p[0]["benchmark"], p[0]["seed"], p[1])):
        shown = r["references"][name].get("examples_shown_as", "text")
        cells = f"{r['seed']} | {name} | {before:.3f} | {now:.3f} | {shown}"
        lines.append(f"| {r['model']} | {r['benchmark']} | {cells} |")
    up, down, p = sign_test([now - before for _, _, before, now in pairs])
    mean = sum(now - before for _, _, before, now in pairs) / len(pairs)
    ties = len(pairs) - up - down
    summary = f"mean {mean:+.3f}; better {up}, worse {down}, equal {ties} (sign test p {p:.3f})"
    lines.append(f"\nlatest - {EARLIER_WAYS[way].removeprefix('as ')}, over {len(pairs)} pairs: {summary}")
    return lines


def stored(args: argparse.Namespace) -> list[dict[str, Any]]:
    labels = (
        [args.model_label] if args.model_label else sorted(p.name for p in args.out.glob("*") if p.is_dir())
    )
    rows = []
    for label in labels:
        for key in args.benchmarks:
            for path in sorted((args.out / label / key).glob("seed*.json")):
                row = read_row(path)
                if row is not None and int(path.stem.removeprefix("seed")) in args.seeds:
                    rows.append(row)
    return rows


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data-root", type=Path, help="folder of the benchmark files (../shared/data here)")
    parser.add_argument("--target-model", type=Path, help="GGUF of the target")
    parser.add_argument("--model-label", help="the rows' folder under --out (default: the GGUF's name)")
    parser.add_argument(
        "--benchmarks",
        nargs="+",
        choices=NAMES,
        default=["all"],
        metavar="NAME",
        help=f"benchmarks, or a group: {', '.join(GROUPS)} (default all); names: {', '.join(BENCHMARKS)}",
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument(
        "--references", nargs="+", choices=REFERENCES, default=list(REFERENCES), help="the skills to score"
    )
    add_serving_options(parser, "the target", "bench/out/headroom_smoke")
    parser.add_argument(
        "--out", type=Path, help="rows (default docs/headroom; with --smoke bench/out/headroom_smoke)"
    )
    parser.add_argument("--work", type=Path, default=REPO / "bench" / "out" / "headroom", help="run folders")
    parser.add_argument("--table-only", action="store_true", help="print the stored rows' table, run nothing")
    args = parser.parse_args(argv)
    args.benchmarks = expand(args.benchmarks)
    default_out = (
        REPO / "bench" / "out" / "headroom_smoke" if args.smoke is not None else REPO / "docs" / "headroom"
    )
    args.out, args.work = (args.out or default_out).resolve(), args.work.resolve()
    args.test_size = SIZES["test_size"] if args.smoke is None else args.smoke
    if args.smoke is not None:
        if args.smoke < 1:
            parser.error(f"--smoke {args.smoke}: give the number of test items, 1 or more")
        if args.out.is_relative_to(REPO / "docs"):
            parser.error(f"--smoke rows never go under docs/ (--out {args.out}); drop --out or pass another")
    if args.table_only:
        return args
    for name in ("data_root", "target_model"):
        if getattr(args, name) is None:
            parser.error(f"--{name.replace('_', '-')} is needed to run (or --table-only)")
    if not args.target_model.is_file():
        parser.error(f"--target-model {args.target_model}: no such file")
    if not args.data_root.is_dir():
        parser.error(f"--data-root {args.data_root}: no such folder")
    args.model_label = args.model_label or args.target_model.stem
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if not args.table_only:
        jobs = [plan(args, key, seed) for key in args.benchmarks for seed in args.seeds]
        jobs = [j for j in jobs if j.todo]
        if jobs:
            cap = max(j.spec.target_cap for j in jobs)
            model, caps = {"target": args.target_model}, {"target": cap}
            with Served(model, caps, ctx=args.ctx, threads=args.threads) as served:
                run(args, jobs, served.router)
    rows = stored(args)
    print("\n".join(["", *headroom_table(rows)]))
    for way in EARLIER_WAYS:
        if shown := shown_table(rows, way):
            print("\n".join(["", *shown]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
