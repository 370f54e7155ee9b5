"""One DSPy run (BootstrapFewShotWithRandomSearch) on a skillgrad benchmark, with the bench's served
target. Run by bench/vs_peers.py with the Python of DSPy's own venv, made with
--system-site-packages so that skillgrad and its scorers import too:

    python -m venv --system-site-packages VENV && VENV/bin/pip install dspy==3.4.1
    VENV/bin/python bench/dspy_run.py --config CFG.yaml --budget 48 --seed 0 --out DIR [--set k=v]

The program is `dspy.Predict("question -> answer")` (`context, question -> answer` where the
tasks have a context) as DSPy's user writes it; its LM is the config's target at the config's
address (`openai/target`, temperature 0, the benchmark's output cap, no cache, no retries). The
optimizer is BootstrapFewShotWithRandomSearch with its own metric, the benchmark's scorer (a
bootstrapped demo must pass; a validation adds up the scores), trainset the 12 train items, valset
the 12 val items; DSPy's defaults except: max_labeled_demos 4 (16 is more than the 12 train items,
and 16 contexts do not fit the window), no adapter fallback (the JSON adapter's retry is a call past
the budget: a reply without DSPy's field markers is read whole instead), and the candidates
(`restrict`) that the budget of target calls pays for (peers_dspy.plan: the zero-shot program,
labelled demos, then bootstrapped ones; with 12/12 items and 48 calls, these three). It uses no
optimizer model.

Writes DIR/program.json (the initial and the best program's prompt, peers_dspy's format: DSPy's
ChatAdapter messages with a placeholder per input) and DIR/dspy.json (val scores, candidates, the
best program's demos, the DSPy version).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from importlib.metadata import version
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm: no download at import

import dspy  # noqa: E402
from dspy.teleprompt import BootstrapFewShotWithRandomSearch  # noqa: E402
from peers_dspy import OUTPUT, input_fields, placeholder, plan, task_inputs  # noqa: E402

from skillgrad.benchmarks.catalog import load_benchmark  # noqa: E402
from skillgrad.config import load_config  # noqa: E402
from skillgrad.values import AgentResult, Task  # noqa: E402

MAX_DEMOS = 4


class WholeReplyAdapter(dspy.ChatAdapter):
    """DSPy's ChatAdapter; a reply without its field markers is the answer, whole (no retry)."""

    def parse(self, signature: Any, completion: str) -> dict[str, Any]:
        try:
            return dict(super().parse(signature, completion))
        except Exception:
            return {OUTPUT: completion.strip()}


def prompt_of(predictor: Any, fields: list[str]) -> dict[str, Any]:
    """A predictor's prompt as peers_dspy scores it: DSPy's own messages, inputs as placeholders."""
    demos = [dict(d) for d in predictor.demos]
    inputs = {name: placeholder(name) for name in fields}
    messages = WholeReplyAdapter().format(predictor.signature, demos, inputs)
    return {
        "fields": fields,
        "messages": messages,
        "instructions": predictor.signature.instructions,
        "demos": [{k: v for k, v in d.items() if k in (*fields, OUTPUT, "augmented")} for d in demos],
    }


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--config", type=Path, required=True)
    parser.add_argument("--budget", type=int, required=True, help="max target calls of the search")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--set", action="append", default=[])
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    cfg = load_config(args.config, args.set)
    bench = load_benchmark(cfg)
    train, val = bench.load("train"), bench.load("val")
    fields = input_fields([*train, *val])
    tasks: dict[tuple[str, ...], Task] = {}

    def example(task: Task) -> Any:
        values = task_inputs(task, fields)
        tasks[tuple(values.values())] = task
        return dspy.Example(**values, **{OUTPUT: task.answers[0]}).with_inputs(*fields)

    def metric(ex: Any, pred: Any, trace: Any = None) -> float | bool:
        task = tasks[tuple(str(ex[name]) for name in fields)]
        score = bench.score(task, AgentResult(answer=str(getattr(pred, OUTPUT, "") or "")))
        return score.passed if trace is not None else score.value

    lm = dspy.LM(
        "openai/target",
        api_base=cfg.model.base_url_for("target"),
        api_key="sk-bench",
        temperature=0.0,
        max_tokens=cfg.model.max_output_tokens_for("target"),
        cache=False,
        num_retries=0,
    )
    dspy.configure(lm=lm, adapter=WholeReplyAdapter(use_json_adapter_fallback=False))
    seeds = plan(args.budget, len(train), len(val))
    if not seeds:
        raise SystemExit(f"--budget {args.budget}: not even one validation of {len(val)} items fits")
    student = dspy.Predict(f"{', '.join(fields)} -> {OUTPUT}")
    optimizer = BootstrapFewShotWithRandomSearch(
        metric=metric,
        max_bootstrapped_demos=MAX_DEMOS,
        max_labeled_demos=MAX_DEMOS,
        num_candidate_programs=max(0, seeds[-1] + 1),
        num_threads=1,
        max_errors=10 * args.budget,  # a failed call scores 0; it does not end the search
    )
    start = time.perf_counter()
    best = optimizer.compile(
        student, trainset=[example(t) for t in train], valset=[example(t) for t in val], restrict=seeds
    )
    summary = _write_results(args.out, student, best, fields, time.perf_counter() - start)
    print(json.dumps(summary))
    return 0


def _write_results(out: Path, student: Any, best: Any, fields: list[str], wall: float) -> dict[str, Any]:
    """Writes program.json (the initial and compiled prompts) and dspy.json (the summary the
    bench reads) under `out`."""
    candidates = [
        {"seed": c["seed"], "val": sum(c["subscores"]) / max(1, len(c["subscores"]))}
        for c in sorted(best.candidate_programs, key=lambda c: c["seed"])
    ]
    out.mkdir(parents=True, exist_ok=True)
    initial, compiled = prompt_of(student.predictors()[0], fields), prompt_of(best.predictors()[0], fields)
    program = {"initial": initial, "best": compiled}
    (out / "program.json").write_text(json.dumps(program, indent=2, ensure_ascii=False), encoding="utf-8")
    summary = {
        "baseline_val_score": candidates[0]["val"],
        "best_val_score": max(c["val"] for c in candidates),
        "best_seed": best.candidate_programs[0]["seed"],
        "candidates": candidates,
        "demos": len(compiled["demos"]),
        "wall_s": round(wall, 1),
        "dspy_version": version("dspy"),
    }
    (out / "dspy.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    return summary


if __name__ == "__main__":
    raise SystemExit(main())
