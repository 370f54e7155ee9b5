"""The benchmarks of bench/vs_peers.py and bench/headroom.py: one registry line each, the data
each reads (under --data-root), the config every system's run starts from, and the settings that
must match for rows to stand side by side.

    searchqa   the 256-item SearchQA sample, token F1; contexts cut to --context-chars at a `[DOC]`
               boundary (the same cut for every system)
    hotpotqa   the 100 HotpotQA dev items with their 10 paragraphs (distractor setting), token F1;
               each paragraph a `[DOC] title: text` passage, cut to --hotpot-context-chars the same way
    gsm8k      test.jsonl, exact number
    bbh_<task> every BIG-Bench Hard task in bbh/, BBH's own exact match (skillgrad's `bbh`); its kind
               says what a right answer looks like: `choice` an option label like (B), `label` one
               word of a closed set (Yes/No, True/False, valid/invalid), `number` a bare number,
               `free` a sequence (Dyck closings, sorted words). date_understanding and
               object_counting keep their first names, bbh_date and bbh_count (rows stored under them)

Per seed N: `benchmark.seed=N` picks 12 train / 12 val / 32 test items; every system and every
reference skill of the headroom scan gets exactly these items.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skillgrad.config import Config, load_config

SIZES = {"train_size": 12, "val_size": 12, "test_size": 32}
MIN_TEST_ITEMS = 32  # rows kept under docs/ have at least this many test items


@dataclass(frozen=True)
class Spec:
    name: str  # skillgrad's benchmark
    data: str  # under --data-root
    target_cap: int  # max output tokens of a target call
    options: dict[str, Any] = field(default_factory=dict)
    kind: str = "free"  # what a right answer looks like (see the module docstring)
    prep: str | None = None  # the data is rewritten first: "searchqa" (context cut), "hotpotqa"


# BBH's 27 tasks and the kind of their targets (tests/test_bench_headroom.py checks it on the data)
BBH_KINDS = {
    "boolean_expressions": "label",
    "causal_judgement": "label",
    "date_understanding": "choice",
    "disambiguation_qa": "choice",
    "dyck_languages": "free",
    "formal_fallacies": "label",
    "geometric_shapes": "choice",
    "hyperbaton": "choice",
    "logical_deduction_five_objects": "choice",
    "logical_deduction_seven_objects": "choice",
    "logical_deduction_three_objects": "choice",
    "movie_recommendation": "choice",
    "multistep_arithmetic_two": "number",
    "navigate": "label",
    "object_counting": "number",
    "penguins_in_a_table": "choice",
    "reasoning_about_colored_objects": "choice",
    "ruin_names": "choice",
    "salient_translation_error_detection": "choice",
    "snarks": "choice",
    "sports_understanding": "label",
    "temporal_sequences": "choice",
    "tracking_shuffled_objects_five_objects": "choice",
    "tracking_shuffled_objects_seven_objects": "choice",
    "tracking_shuffled_objects_three_objects": "choice",
    "web_of_lies": "label",
    "word_sorting": "free",
}
BBH_FIRST_NAMES = {"date_understanding": "bbh_date", "object_counting": "bbh_count"}
HOTPOT = "hotpotqa/hotpot-qa-distractor-sample.converted.jsonl"
SEARCHQA = "searchqa_sample/searchqa_256.jsonl"


def bbh_key(task: str) -> str:
    return BBH_FIRST_NAMES.get(task, f"bbh_{task}")


BENCHMARKS = {
    "searchqa": Spec("searchqa", SEARCHQA, 128, {"metric": "f1"}, "span", "searchqa"),
    "hotpotqa": Spec("qa", HOTPOT, 128, {"metric": "f1"}, "span", "hotpotqa"),
    "gsm8k": Spec("gsm8k", "gsm8k/test.jsonl", 256, kind="number"),
    **{bbh_key(task): Spec("bbh", f"bbh/{task}.json", 128, kind=kind) for task, kind in BBH_KINDS.items()},
}
GROUPS = {"all": list(BENCHMARKS), "bbh": [k for k, s in BENCHMARKS.items() if s.name == "bbh"]}
ALIASES = {f"bbh_{task}": key for task, key in BBH_FIRST_NAMES.items()}  # bbh_<task> for every task
NAMES = [*GROUPS, *BENCHMARKS, *ALIASES]  # what --benchmarks takes


def expand(names: list[str]) -> list[str]:
    """Benchmark keys of `names` (a group, `all` or `bbh`, stands for its members; an alias for its
    benchmark), each once, in order."""
    keys: list[str] = []
    for name in names:
        for key in GROUPS.get(name, [ALIASES.get(name, name)]):
            if key not in keys:
                keys.append(key)
    return keys


def cut_context(context: str, limit: int) -> str:
    """The context's leading `[DOC]` passages that fit in `limit` characters (at least the first
    `limit` characters of the first one)."""
    if len(context) <= limit:
        return context
    kept = ""
    for i, doc in enumerate(context.split("[DOC]")):
        piece = doc if i == 0 else "[DOC]" + doc
        if len(kept) + len(piece) > limit:
            break
        kept += piece
    return kept if kept.strip() else context[:limit]


def hotpot_item(row: dict[str, Any]) -> dict[str, Any]:
    """One HotpotQA item (its 10 paragraphs as `[DOC] title: text` passages) as a `qa` item."""
    ctx = row["context"]
    docs = [f"[DOC] {t}: {''.join(s).strip()}" for t, s in zip(ctx["title"], ctx["sentences"], strict=True)]
    context = " ".join(docs)
    return {"id": row["id"], "question": row["question"], "context": context, "answers": [row["answer"]]}


def context_chars(spec: Spec, args: argparse.Namespace) -> int | None:
    if spec.prep == "searchqa":
        return int(args.context_chars)
    if spec.prep == "hotpotqa":
        return int(args.hotpot_context_chars)
    return None


def data_file(spec: Spec, args: argparse.Namespace) -> Path:
    """The benchmark's data file: the shared file itself, or its rewritten copy under --work."""
    source = (args.data_root / spec.data).resolve()
    if not source.is_file():
        sys.exit(f"--data-root {args.data_root}: no {spec.data} there")
    limit = context_chars(spec, args)
    if spec.prep is None or limit is None:
        return source
    cut = args.work / "data" / f"{spec.prep}_ctx{limit}.jsonl"
    if not cut.is_file():
        cut.parent.mkdir(parents=True, exist_ok=True)
        rows = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines() if line.strip()]
        if spec.prep == "hotpotqa":
            rows = [hotpot_item(r) for r in rows]
        lines = [json.dumps({**r, "context": cut_context(r["context"], limit)}) for r in rows]
        part = cut.with_name(f"{cut.name}.{os.getpid()}.part")  # another run may write it too
        part.write_text("\n".join(lines) + "\n", encoding="utf-8")
        part.replace(cut)
    return cut


def config_text(
    spec: Spec, data: Path, base_url: str, args: argparse.Namespace, test_size: int | None = None
) -> str:
    """skillgrad's config of one benchmark, both roles at `base_url` (JSON, which is YAML)."""
    sizes = {**SIZES, "test_size": test_size if test_size is not None else SIZES["test_size"]}
    cfg = {
        "benchmark": {"name": spec.name, "data": str(data), **sizes, "seed": 0, "options": spec.options},
        "model": {
            "backend": "openai_chat",
            "base_url": base_url,
            "api_key": "sk-bench",
            "target_model": "target",
            "optimizer_model": "optimizer",
            "temperature": 0.0,
            "target_max_output_tokens": spec.target_cap,
            "optimizer_max_output_tokens": getattr(args, "optimizer_cap", 768),
            "timeout_s": 1800,
            "max_retries": 1,
            "json_retries": 1,
        },
        "train": {"epochs": 1, "batch_size": 6, "minibatch_size": 6, "concurrency": 1, "overlap": False},
        "optimizer": {"learning_rate": 3, "min_learning_rate": 2, "lr_schedule": "constant"},
        "cache": {"enabled": False},
    }
    return json.dumps(cfg, indent=2)


NOWHERE = "http://127.0.0.1:9/v1"  # the address in a config only read for its items


def seed_config(
    spec: Spec,
    data: Path,
    base_url: str,
    path: Path,
    seed: int,
    args: argparse.Namespace,
    test_size: int | None = None,
) -> Config:
    """`config_text` written to `path` and loaded on `seed`'s split."""
    path.write_text(config_text(spec, data, base_url, args, test_size), encoding="utf-8")
    return load_config(path, [f"benchmark.seed={seed}"])


def model_name(path: Path) -> str:
    return f"{path.name} ({path.stat().st_size} bytes)"


def settings(spec: Spec, key: str, args: argparse.Namespace) -> dict[str, Any]:
    """What must match for rows to stand side by side (besides the budget)."""
    return {
        "benchmark": key,
        "data": spec.data,
        **SIZES,
        "test_size": getattr(args, "test_size", SIZES["test_size"]),
        "target_model": model_name(args.target_model),
        "optimizer_model": model_name(args.optimizer_model),
        "target_cap": spec.target_cap,
        "optimizer_cap": args.optimizer_cap,
        "ctx": args.ctx,
        "context_chars": context_chars(spec, args),
    }


# What decides a test score besides the skill: a headroom row and a peers row with these equal
# were scored on the same items by the same target.
TEST_SETTINGS = ("benchmark", "data", "train_size", "val_size", "test_size", "target_model")
TEST_SETTINGS += ("target_cap", "ctx", "context_chars")


def test_settings(stored: dict[str, Any]) -> dict[str, Any]:
    return {k: stored.get(k) for k in TEST_SETTINGS}


def add_serving_options(parser: argparse.ArgumentParser, served: str, smoke_out: str) -> None:
    """The options bench/headroom.py and bench/vs_peers.py share: the contexts' cuts, the served
    models' window and threads (`served`: which models), and --smoke (its rows go to `smoke_out`)."""
    parser.add_argument("--context-chars", type=int, default=1500, help="SearchQA context cut")
    parser.add_argument("--hotpot-context-chars", type=int, default=3000, help="HotpotQA context cut")
    parser.add_argument("--ctx", type=int, default=4096, help=f"context window of {served}")
    parser.add_argument("--threads", type=int, default=1, help=f"threads of {served}'s process")
    parser.add_argument(
        "--smoke",
        type=int,
        metavar="N",
        help=f"SMOKE TEST: N test items only, rows to {smoke_out}, out of docs/ (a check, not a figure)",
    )
