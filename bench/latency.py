"""Calls, sequential rounds and wall time per point gained, against a fixed-latency scripted server.

    python bench/latency.py --data ../shared/data/searchqa_sample/searchqa_256.jsonl
    python bench/latency.py --data FILE --latency 0.5 --seeds 0 1 --reps 1 --variants default full

One scripted OpenAI-compatible server (this file, 127.0.0.1 only) serves both roles and answers
every request exactly L seconds after reading it. The target is right on a share of the items that
grows with the good rules the skill has learned (and shrinks with a harmful one); the analyst
proposes the next rules it has not seen in the skill or among the rejected edits, so steps are
accepted and rejected as in a real run. Configuration (the issue's): the 256 items shuffled with
seed 0 -> train 64 / val 16, 1 epoch, batch 8, minibatch 4, learning rate 4 -> 2 cosine, strict
gate, concurrency 24, cache off; `train.seed` is the training seed.

Variants (skillgrad config on top of that): `default` (racing in 2 waves, overlap), `full`
(one-wave validation), `sequential` (train.overlap=false), `full-sequential` (the order of the
previous release: one wave, no overlap). For each: calls by stage, observed rounds, wall, final
val score and accepted steps; medians over `--reps` repetitions.

SkillOpt 0.2.0: `--skillopt` installs it from the registry into a temporary venv and checks that
it can run; the 0.2.0 wheel and sdist ship no prompt templates (`skillopt/prompts/*.md`), so its
trainer cannot start (FileNotFoundError in `load_prompt`), and the script says so instead of
inventing figures.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
ANALYST = "You improve a SKILL document"
GOOD = [
    f"Rule {n}: {text}"
    for n, text in enumerate(
        [
            "Answer with the shortest span that names the entity.",
            "Drop leading articles (a, an, the).",
            "Prefer the name as the clue's category spells it.",
            "Give a person's surname only when the clue asks who.",
            "Copy the answer's spelling from the context.",
            "Answer years as four digits.",
            "Never add an explanation after the answer.",
            "Resolve wordplay clues to the punchline's noun.",
        ],
        start=1,
    )
]
HARMFUL = "Rule X: Always answer with a full sentence."
ORDER = [GOOD[0], GOOD[1], HARMFUL, *GOOD[2:]]  # what analysts propose, first missing first
BASE_DECILES, PER_RULE, HARM = 4, 2, 3  # right on 40% of items, +20 points per good rule


class Scripted:
    """The scripted roles; `calls` counts requests by kind."""

    def __init__(self, latency: float) -> None:
        self.latency = latency
        self.lock = threading.Lock()
        self.calls: dict[str, int] = {}

    def count(self, kind: str) -> None:
        with self.lock:
            self.calls[kind] = self.calls.get(kind, 0) + 1

    def reply(self, body: dict[str, Any]) -> str:
        messages = body.get("messages", [])
        system = str(messages[0].get("content", "")) if messages else ""
        user = str(messages[-1].get("content", "")) if messages else ""
        if ANALYST in system:
            self.count("analyst")
            skill = user.split("<skill>")[1].split("</skill>")[0] if "<skill>" in user else ""
            rejected = user.split("## Rejected edits")[1] if "## Rejected edits" in user else ""
            missing = [r for r in ORDER if r not in skill and r not in rejected]
            edits = [{"op": "add", "target": "", "content": r, "rationale": "misses"} for r in missing[:2]]
            return json.dumps({"edits": edits})
        self.count("target")
        good = sum(rule in system for rule in GOOD)
        deciles = BASE_DECILES + PER_RULE * good - (HARM if HARMFUL in system else 0)
        question = user.rsplit("\n\nReply with the answer only.", 1)[0]
        bucket = int(hashlib.sha256(question.encode()).hexdigest(), 16) % 10
        return ANSWERS.get(question_key(question), "") if bucket < deciles else "I do not know."


ANSWERS: dict[str, str] = {}  # question text -> gold answer, filled from the data file


def question_key(text: str) -> str:
    return text.strip().splitlines()[-1].strip() if text.strip() else ""


def serve(world: Scripted) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
            pass

        def do_POST(self) -> None:  # noqa: N802 - stdlib naming
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            started = time.monotonic()
            content = world.reply(body)
            time.sleep(max(0.0, world.latency - (time.monotonic() - started)))
            payload = json.dumps(
                {
                    "id": "chatcmpl-bench",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": body.get("model", "bench"),
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": content},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
                }
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


VARIANTS: dict[str, list[str]] = {
    "default": [],
    "full": ["optimizer.validation=full"],
    "sequential": ["train.overlap=false"],
    "full-sequential": ["optimizer.validation=full", "train.overlap=false"],
}


def config(folder: Path, data: Path, port: int, seed: int) -> Path:
    cfg = {
        "benchmark": {
            "name": "qa",
            "data": str(data),
            "train_size": 64,
            "val_size": 16,
            "seed": 0,
            "options": {"metric": "em"},
        },
        "model": {
            "backend": "openai_chat",
            "base_url": f"http://127.0.0.1:{port}/v1",
            "api_key": "sk-bench",
            "optimizer_model": "scripted-optimizer",
            "target_model": "scripted-target",
            "max_retries": 0,
        },
        "train": {"epochs": 1, "batch_size": 8, "minibatch_size": 4, "concurrency": 24, "seed": seed},
        "optimizer": {"learning_rate": 4, "min_learning_rate": 2, "lr_schedule": "cosine", "gate": "strict"},
        "cache": {"enabled": False},
    }
    path = folder / "config.yaml"
    path.write_text(json.dumps(cfg), encoding="utf-8")
    return path


def run_skillgrad(data: Path, latency: float, seed: int, variant: str) -> dict[str, Any]:
    world = Scripted(latency)
    httpd = serve(world)
    try:
        with tempfile.TemporaryDirectory(prefix="sg-latency-") as tmp:
            cfg = config(Path(tmp), data, httpd.server_address[1], seed)
            out = Path(tmp) / "run"
            sets = [arg for item in VARIANTS[variant] for arg in ("--set", item)]
            started = time.perf_counter()
            proc = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "skillgrad.cli",
                    "train",
                    "--config",
                    str(cfg),
                    "--out",
                    str(out),
                    *sets,
                ],
                capture_output=True,
                text=True,
                timeout=600,
                check=False,
            )
            wall = time.perf_counter() - started
            if proc.returncode != 0:
                sys.exit(f"skillgrad failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
            summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    finally:
        httpd.shutdown()
        httpd.server_close()
    stages = summary["calls"]["by_stage"]
    return {
        "calls": summary["calls"]["total"],
        "rollout": stages.get("target/rollout", 0),
        "val": stages.get("target/baseline", 0) + stages.get("target/validate", 0),
        "analyst": stages.get("optimizer/reflect", 0),
        "rounds": summary["rounds"],
        "wall": wall,
        "val_score": summary["best_val_score"],
        "accepted": summary["accepted"],
        "stopped": summary["stopped"],
        "server_calls": sum(world.calls.values()),
    }


def median_run(data: Path, latency: float, seed: int, variant: str, reps: int) -> dict[str, Any]:
    runs = [run_skillgrad(data, latency, seed, variant) for _ in range(reps)]
    out: dict[str, Any] = {}
    for key in runs[0]:
        values = [r[key] for r in runs]
        out[key] = statistics.median(values) if isinstance(values[0], int | float) else values[0]
    return out


def check_skillopt() -> str:
    """Install SkillOpt 0.2.0 from the registry into a temporary venv; say whether it can train."""
    with tempfile.TemporaryDirectory(prefix="skillopt-venv-") as tmp:
        venv = Path(tmp) / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        pip = subprocess.run(
            [str(venv / "bin" / "pip"), "install", "-q", "skillopt==0.2.0"], capture_output=True, text=True
        )
        if pip.returncode != 0:
            return f"pip install skillopt==0.2.0 failed: {pip.stderr.strip()[-300:]}"
        probe = (
            "from skillopt.prompts import load_prompt\n"
            "try:\n    load_prompt('rollout_system', env='searchqa'); print('ok')\n"
            "except FileNotFoundError as exc:\n    print(f'cannot train: {exc}')\n"
        )
        python = str(venv / "bin" / "python")
        return subprocess.run([python, "-c", probe], capture_output=True, text=True).stdout.strip()


def load_answers(data: Path) -> None:
    for line in data.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            ANSWERS[question_key(row["question"])] = row["answers"][0]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--data", type=Path, required=True, help="SearchQA JSONL (id, question, context, answers)"
    )
    parser.add_argument("--latency", type=float, nargs="+", default=[0.2, 0.5, 1.0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--skillopt", action="store_true", help="install SkillOpt 0.2.0 and check it")
    parser.add_argument("--json", type=Path, help="also write every figure here")
    args = parser.parse_args()
    load_answers(args.data)
    if args.skillopt:
        print(f"SkillOpt 0.2.0 from the registry: {check_skillopt()}\n")
    print(
        "| L (s) | seed | variant | calls | rollout | val | analyst | rounds | wall (s) "
        "| wall / (L x rounds) | val score | accepted | stopped |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    figures = []
    for latency in args.latency:
        for seed in args.seeds:
            for variant in args.variants:
                r = median_run(args.data, latency, seed, variant, args.reps)
                figures.append({"latency": latency, "seed": seed, "variant": variant, **r})
                print(
                    f"| {latency} | {seed} | {variant} | {r['calls']} | {r['rollout']} | {r['val']} | "
                    f"{r['analyst']} | {r['rounds']} | {r['wall']:.2f} | "
                    f"{r['wall'] / (latency * r['rounds']):.2f} | {r['val_score']:.3f} | {r['accepted']} | "
                    f"{r['stopped']} |",
                    flush=True,
                )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
