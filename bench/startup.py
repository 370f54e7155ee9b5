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
- the floor: a bare script that imports the openai SDK and sends one chat completion
  (bench/first_request.py), from spawn to its first request; no program on the SDK starts faster.
skillgrad runs from a fresh venv of this checkout with its `openai` extra (bench/fresh_venv.py),
as a user's install has it; `--dev-env` uses this interpreter's packages instead. With `--other`,
the same commands run with that checkout first on PYTHONPATH, interleaved with this one's runs,
so both see the same machine load. Python's bytecode cache is on for both (as on a user's
machine; some sandboxes turn it off with PYTHONDONTWRITEBYTECODE).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

import fresh_venv  # noqa: E402
from first_request import FirstRequest  # noqa: E402
from skillopt_side import clean_env  # noqa: E402

FLOOR = "bare openai-SDK script -> first request (the floor)"


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
    return {**clean_env(), "PYTHONPATH": str(tree)}


def skillgrad(python: str, *args: str) -> list[str]:
    return [python, "-m", "skillgrad.cli", *args]


def measure(python: str, tree: Path, cfg: Path, out: Path, server: FirstRequest) -> dict[str, float]:
    """Every command once, run in `cfg`'s folder: not in a checkout, which `python -m` would put
    first on sys.path, ahead of the tree on PYTHONPATH."""
    env, cwd = env_for(tree), cfg.parent
    train = skillgrad(python, "train", "--config", str(cfg), "--out", str(out))
    to_first, whole_train = server.time(train, env, cwd)
    return {
        "train -> first request": to_first,
        "train, whole process (fails at its first request)": whole_train,
        "backends": server_free(skillgrad(python, "backends"), env, cwd),
        "config": server_free(skillgrad(python, "config", "--config", str(cfg)), env, cwd),
        FLOOR: server.sdk_floor(python, env, cwd),
    }


def server_free(command: list[str], env: dict[str, str], cwd: Path) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, timeout=300, check=False)
    if done.returncode != 0:
        sys.exit(f"{' '.join(command[1:4])} failed ({done.returncode}): {done.stderr.decode()[-400:]}")
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, required=True, help="a QA JSONL with at least 12 items")
    parser.add_argument("--other", type=Path, help="another checkout to measure side by side")
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument(
        "--dev-env", action="store_true", help="use this interpreter and its packages, not a fresh venv"
    )
    args = parser.parse_args()
    trees = {"this checkout": REPO, **({f"other ({args.other})": args.other} if args.other else {})}
    server = FirstRequest()
    figures: dict[str, dict[str, list[float]]] = {name: {} for name in trees}
    with tempfile.TemporaryDirectory(prefix="sg-startup-") as tmp:
        python = sys.executable if args.dev_env else str(fresh_venv.install(Path(tmp), REPO))
        cfg = config(Path(tmp), args.data.resolve(), server.port)
        for rep in range(args.reps):
            for index, (name, tree) in enumerate(trees.items()):
                out = Path(tmp) / f"run-{rep}-{index}"
                for key, value in measure(python, tree, cfg, out, server).items():
                    figures[name].setdefault(key, []).append(value)
    server.close()
    where = "this interpreter's packages" if args.dev_env else "a fresh venv of this checkout[openai]"
    print(f"medians of {args.reps} runs, seconds, {where}\n")
    print("| command | " + " | ".join(trees) + " |")
    print("|---|" + "---|" * len(trees))
    for key in next(iter(figures.values())):
        print(f"| {key} | " + " | ".join(f"{statistics.median(figures[n][key]):.2f}" for n in trees) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
