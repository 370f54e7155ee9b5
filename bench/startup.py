"""Start-up of the `skillgrad` CLI: what a user waits for before anything happens.

    python bench/startup.py --data ../shared/data/searchqa_sample/searchqa_256.jsonl
    python bench/startup.py --data FILE --other /path/to/another/checkout   # side by side

Figures (medians of `--reps` runs, seconds):
- `train -> first request`: from spawning `skillgrad train` (openai_chat on a local scripted server)
  to the server reading its first request; everything a run does before its first model call.
- `train, whole process`: the same command from spawn to exit; the server refuses that first
  request, so this is start-up plus shutdown (the interpreter's exit included).
- `backends`: the whole `skillgrad backends` command (availability of every backend).
- `config`: the whole `skillgrad config` command (load, validate and print a config).
With `--other`, the same commands run with that checkout first on PYTHONPATH, interleaved with
this one's runs, so both see the same machine load. Python's bytecode cache is on for both (as on
a user's machine; some sandboxes turn it off with PYTHONDONTWRITEBYTECODE).
"""

from __future__ import annotations

import argparse
import json
import os
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


class FirstRequest:
    def __init__(self) -> None:
        self.at: float | None = None
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        httpd.daemon_threads = True
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        self.httpd = httpd

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
                pass

            def do_POST(self) -> None:  # noqa: N802 - stdlib naming
                if owner.at is None:
                    owner.at = time.perf_counter()
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.send_response(400)  # the run fails fast: only its start-up is measured
                self.send_header("Content-Length", "0")
                self.end_headers()

        return Handler


def config(folder: Path, data: Path, port: int) -> Path:
    cfg = {
        "benchmark": {"name": "qa", "data": str(data), "train_size": 8, "val_size": 4},
        "model": {
            "backend": "openai_chat",
            "base_url": f"http://127.0.0.1:{port}/v1",
            "api_key": "sk-bench",
            "max_retries": 0,
        },
        "train": {"epochs": 1},
        "cache": {"enabled": False},
    }
    path = folder / "config.yaml"
    path.write_text(json.dumps(cfg), encoding="utf-8")
    return path


def env_for(tree: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "PYTHONPATH": str(tree)}


def first_request(tree: Path, cfg: Path, out: Path, server: FirstRequest) -> tuple[float, float]:
    """(seconds to the first request, seconds the whole process took: the run fails at once)."""
    server.at = None
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "skillgrad.cli", "train", "--config", str(cfg), "--out", str(out)],
        env=env_for(tree),
        capture_output=True,
        timeout=300,
        check=False,
    )
    ended = time.perf_counter()
    if server.at is None:
        sys.exit(f"{tree}: skillgrad train made no request")
    return server.at - started, ended - started


def whole(tree: Path, *args: str) -> float:
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "skillgrad.cli", *args], env=env_for(tree), capture_output=True, timeout=300
    )
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, required=True, help="a QA JSONL with at least 12 items")
    parser.add_argument("--other", type=Path, help="another checkout to measure side by side")
    parser.add_argument("--reps", type=int, default=7)
    args = parser.parse_args()
    trees = {"this checkout": REPO, **({f"other ({args.other})": args.other} if args.other else {})}
    server = FirstRequest()
    figures: dict[str, dict[str, list[float]]] = {name: {} for name in trees}
    with tempfile.TemporaryDirectory(prefix="sg-startup-") as tmp:
        cfg = config(Path(tmp), args.data.resolve(), server.httpd.server_address[1])
        for rep in range(args.reps):
            for name, tree in trees.items():
                out = Path(tmp) / f"run-{rep}-{len(figures[name].get('train', []))}-{abs(hash(name))}"
                to_first, whole_train = first_request(tree, cfg, out, server)
                measured = {
                    "train -> first request": to_first,
                    "train, whole process (fails at its first request)": whole_train,
                    "backends": whole(tree, "backends"),
                    "config": whole(tree, "config", "--config", str(cfg)),
                }
                for key, value in measured.items():
                    figures[name].setdefault(key, []).append(value)
    server.httpd.shutdown()
    keys = list(next(iter(figures.values())))
    print(f"medians of {args.reps} runs, seconds\n")
    print("| command | " + " | ".join(trees) + " |")
    print("|---|" + "---|" * len(trees))
    for key in keys:
        print(f"| {key} | " + " | ".join(f"{statistics.median(figures[n][key]):.2f}" for n in trees) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
