"""One GEPA run on a skillgrad benchmark, with skillgrad's own target and optimizer models.

Run by `bench/vs_gepa.py` with the Python of a temporary venv that has GEPA from the registry
(created with --system-site-packages, so skillgrad and its local runtime import too):

    VENV/bin/python bench/gepa_run.py --config CFG.yaml --budget 84 --seed 0 --out DIR [--set k=v]

Both systems see the same thing: the target is skillgrad's chat Agent (the same system-prompt
template around the candidate, the same task prompt, the same sampling), GEPA's `Inputs` are
that task prompt, its feedback is the benchmark's own `Score.feedback`, and its reflection LM is
skillgrad's optimizer ChatModel. `gepa.optimize` with the DefaultAdapter, `max_metric_calls` =
the budget of target calls. Writes DIR/gepa.json and DIR/best_skill.md.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from collections.abc import Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any

import gepa
from gepa.adapters.default_adapter.default_adapter import EvaluationResult

from skillgrad.backends.chat_agent import task_prompt
from skillgrad.backends.registry import Backends
from skillgrad.benchmarks.catalog import load_benchmark
from skillgrad.config import load_config
from skillgrad.values import AgentResult, Message, Task


class Counted:
    """Call counts of the two roles (GEPA calls them from one thread; the lock is cheap)."""

    def __init__(self) -> None:
        self.target = 0
        self.optimizer = 0
        self._lock = threading.Lock()

    def add(self, role: str) -> None:
        with self._lock:
            setattr(self, role, getattr(self, role) + 1)


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--config", type=Path, required=True)
    parser.add_argument("--budget", type=int, required=True, help="max target calls (max_metric_calls)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--minibatch", type=int, default=3, help="GEPA's reflection_minibatch_size")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--set", action="append", default=[])
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    cfg = load_config(args.config, args.set)
    benchmark = load_benchmark(cfg)
    backends = Backends(cfg)
    agent, reflector = backends.agent(), backends.chat("optimizer")
    counts = Counted()
    tasks: dict[str, Task] = {}

    def inst(task: Task) -> dict[str, Any]:
        prompt = task_prompt(task)
        tasks[prompt] = task
        return {"input": prompt, "additional_context": {}, "answer": task.answers[0]}

    trainset = [inst(t) for t in benchmark.load("train")]
    valset = [inst(t) for t in benchmark.load("val")]

    def task_lm(messages: Sequence[dict[str, str]]) -> str:
        system = next((m["content"] for m in messages if m["role"] == "system"), "")
        user = next(m["content"] for m in messages if m["role"] == "user")
        counts.add("target")
        return agent.run(tasks[user], system, args.out).answer

    def evaluator(data: dict[str, Any], response: str) -> EvaluationResult:
        score = benchmark.score(tasks[data["input"]], AgentResult(answer=response))
        return EvaluationResult(score=score.value, feedback=score.feedback)

    def reflection_lm(prompt: str) -> str:
        counts.add("optimizer")
        return reflector.complete([Message("user", prompt)], stage="reflect").text

    args.out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    result = gepa.optimize(
        seed_candidate={"skill": ""},
        trainset=trainset,
        valset=valset,
        task_lm=task_lm,
        evaluator=evaluator,
        reflection_lm=reflection_lm,
        reflection_minibatch_size=args.minibatch,
        max_metric_calls=args.budget,
        seed=args.seed,
        run_dir=str(args.out / "gepa_state"),
        display_progress_bar=False,
    )
    summary = _write_results(args.out, result, counts, time.perf_counter() - start)
    print(json.dumps(summary))
    return 0


def _write_results(out: Path, result: Any, counts: Counted, wall: float) -> dict[str, Any]:
    """Writes the best skill and gepa.json (the summary the bench reads) under `out`."""
    (out / "best_skill.md").write_text(result.best_candidate["skill"], encoding="utf-8")
    scores = list(result.val_aggregate_scores)
    summary = {
        "baseline_val_score": scores[0],
        "best_val_score": scores[result.best_idx],
        "candidates": len(scores),
        "target_calls": counts.target,
        "optimizer_calls": counts.optimizer,
        "wall_s": round(wall, 1),
        "gepa_version": version("gepa"),
    }
    (out / "gepa.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    return summary


if __name__ == "__main__":
    raise SystemExit(main())
