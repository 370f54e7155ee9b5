"""Rollout throughput, threads vs Ray: a 2,000-task eval against a scripted OpenAI-compatible
server that takes `--latency` seconds per call, on this machine.

Threads run `--per-worker` rollouts at once; Ray runs W worker processes (a local cluster of W
CPUs started for each run) with `--per-worker` rollouts each, so the ideal throughput is
per_worker * W / latency tasks/s. Figures come from the eval stage's progress events (an observer
of `skillgrad.evaluate`: train.log writes no line per task):
- seconds: the whole stage, worker start-up included; tasks/s = tasks / seconds;
- start-up: from the stage's start to the first finished task, minus one latency;
- overhead per task = concurrency / steady rate - latency, the steady rate being the tasks finished
  between the first and the last completion per second: the time each rollout slot spends per task
  beyond the server's latency (driver, cache, run folder, Ray).

    python bench/scale.py                      # 2,000 tasks, 1 s latency, workers 1 2 4
    python bench/scale.py --tasks 400 --workers 1 2
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fakes.openai_server import Request, ScriptedOpenAI, text  # noqa: E402


def token_of(request: Request) -> str:
    return request.user.split("Reply with ")[1].split(".")[0]


def write_eval(folder: Path, server: ScriptedOpenAI, tasks: int) -> tuple[Path, Path]:
    data = folder / "tokens.jsonl"
    rows = [
        {"id": f"t{i:05d}", "question": f"Reply with token-{i}.", "answers": [f"token-{i}"]}
        for i in range(tasks + 1)
    ]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    settings = {
        "benchmark": {"name": "qa", "data": str(data), "train_size": 0, "val_size": 1, "test_size": tasks},
        "model": {"backend": "openai_chat", "base_url": server.base_url, "api_key": "sk-bench-FAKE"},
    }
    config, skill = folder / "eval.yaml", folder / "skill.md"
    config.write_text(json.dumps(settings), encoding="utf-8")
    skill.write_text("Reply with the token only.\n", encoding="utf-8")
    return config, skill


# `skillgrad eval` as the API call, in its own process (a Ray cluster each), printing the times
# (seconds since the run started) of the stage's start and end and of each finished task
EVAL_TIMES = """
import json, sys
from pathlib import Path
import skillgrad
from skillgrad.config import load_config
config, skill, out, *sets = sys.argv[1:]
marks = {}
def note(event):
    if event.kind in ("stage_start", "stage_end", "task_done"):
        marks.setdefault(event.kind, []).append(event.time)
cfg = load_config(config, sets)
skillgrad.evaluate(cfg, Path(skill), out=out, observers=[note], use_cache=False, quiet=True)
print(json.dumps(marks))
"""


def stage_times(marks: dict[str, list[float]]) -> dict[str, float]:
    """The eval stage's start, end, first and last task completion (elapsed s)."""
    done = marks["task_done"]
    return {
        "start": marks["stage_start"][0],
        "end": marks["stage_end"][0],
        "first": done[0],
        "last": done[-1],
    }


def run_one(
    config: Path, skill: Path, out: Path, executor: str, concurrency: int, workers: int
) -> dict[str, float]:
    sets = [f"train.executor={executor}", f"train.concurrency={concurrency}"]
    if executor == "ray":
        sets += [f"ray.local_cpus={workers}", f"ray.workers={workers}"]
    cmd = [sys.executable, "-c", EVAL_TIMES, str(config), str(skill), str(out), *sets]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        raise SystemExit(f"{executor} x{workers}: exit {proc.returncode}: {proc.stderr[-2000:]}")
    report = json.loads((out / "eval.json").read_text(encoding="utf-8"))
    assert report["n"] == report["passed"], report
    return stage_times(json.loads(proc.stdout.strip().splitlines()[-1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=2000)
    parser.add_argument("--latency", type=float, default=1.0, help="seconds the server takes per call")
    parser.add_argument("--per-worker", type=int, default=16, help="rollouts in flight per worker process")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    args = parser.parse_args()

    def slow(request: Request):
        time.sleep(args.latency)
        return text(token_of(request))

    rows = []
    with tempfile.TemporaryDirectory() as tmp, ScriptedOpenAI(slow) as server:
        config, skill = write_eval(Path(tmp), server, args.tasks)
        for executor, workers in [("threads", 1)] + [("ray", w) for w in args.workers]:
            concurrency = args.per_worker * workers
            t = run_one(config, skill, Path(tmp) / f"{executor}-{workers}", executor, concurrency, workers)
            seconds = t["end"] - t["start"]
            steady = (args.tasks - 1) / max(t["last"] - t["first"], 1e-9)
            rows.append(
                {
                    "executor": executor,
                    "workers": workers,
                    "concurrency": concurrency,
                    "seconds": round(seconds, 1),
                    "tasks_per_s": round(args.tasks / seconds, 2),
                    "ideal_tasks_per_s": round(concurrency / args.latency, 2),
                    "startup_s": round(t["first"] - t["start"] - args.latency, 2),
                    "overhead_ms_per_task": round((concurrency / steady - args.latency) * 1000, 1),
                }
            )
            print(json.dumps(rows[-1]), flush=True)
    print(f"\n{args.tasks} tasks, {args.latency:g} s per call, {args.per_worker} rollouts per worker process")
    header = ("executor", "workers", "in flight", "seconds", "tasks/s", "ideal", "start-up", "overhead/task")
    widths = (8, 10, 9, 9, 8, 10, 15)
    print(f"{header[0]:<10}" + "".join(f"{h:>{w}}" for h, w in zip(header[1:], widths, strict=True)))
    for r in rows:
        print(
            f"{r['executor']:<10}{r['workers']:>8}{r['concurrency']:>10}{r['seconds']:>9}{r['tasks_per_s']:>9}"
            f"{r['ideal_tasks_per_s']:>8}{r['startup_s']:>8} s{r['overhead_ms_per_task']:>12} ms"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
