"""bench/vs_peers.py's four systems, each run as its user runs it against the one served address:
skillgrad (`skillgrad train`, then `skillgrad eval --split test`), GEPA 0.1.4 (bench/gepa_run.py in
its own venv), SkillOpt 0.2.0 (`skillopt-train` in its own venv, its SearchQA env unchanged) and
DSPy 3.4.1 (bench/dspy_run.py in its own venv; its prompts scored by bench/peers_dspy.py).

Every function returns one result row (see vs_peers.py's docstring for its fields) and counts
calls and tokens at the router, the same way for all four.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from peers_dspy import score_prompt
from peers_server import CallLog, usage
from skillopt_side import SkillOpt, clean_env, write_split

from skillgrad.benchmarks.catalog import load_benchmark
from skillgrad.config import load_config
from skillgrad.values import AgentResult, Task

REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class SeedRun:
    """One benchmark and seed: its config, folders, served address and what all systems share."""

    benchmark: str
    seed: int
    config: Path  # skillgrad's config for this benchmark (both roles at the router)
    work: Path  # run folders of this seed
    log: CallLog
    base_url: str
    budget: int  # target calls of the search, the same for every system
    target_cap: int
    sets: tuple[str, ...]  # the user's --set, for skillgrad only
    test_tasks: tuple[Task, ...]
    settings_key: str = ""  # a hash of what decides a test score besides the skill (models, caps)
    search_tasks: tuple[Task, ...] = ()  # train and val: what the search may call the target on

    @property
    def seed_sets(self) -> list[str]:
        return [f"benchmark.seed={self.seed}", f"train.seed={self.seed}"]

    def usage_since(self, mark: int) -> dict[str, int]:
        """The router's calls since `mark` by role, those about test items apart (`usage`)."""
        return usage(
            self.log.since(mark),
            [t.question for t in self.test_tasks],
            [t.question for t in self.search_tasks],
        )


def env() -> dict[str, str]:
    """The bench's environment without provider credentials, with this checkout first on the path."""
    base = clean_env()
    path = base.get("PYTHONPATH", "")
    base["PYTHONPATH"] = f"{REPO}{os.pathsep}{path}" if path else str(REPO)
    return base


def run(cmd: list[str], log: Path, cwd: Path | None = None) -> float:
    """Run `cmd` (its output into `log`); exit with its tail if it fails. Returns wall seconds."""
    log.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    with log.open("w", encoding="utf-8") as out:
        proc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, env=env(), cwd=cwd, check=False)
    if proc.returncode != 0:
        tail = log.read_text(encoding="utf-8", errors="replace")[-3000:]
        sys.exit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{tail}")
    return time.perf_counter() - start


def skill_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


class TestScores:
    """Test scores of skills already evaluated on one seed's test split by skillgrad's chat
    target, by the skill's text: at temperature 0 the same skill gets the same answers, so a skill
    is evaluated once (an unchanged best skill is the initial one, whose score is known)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.scores: dict[str, float] = json.loads(path.read_text()) if path.is_file() else {}

    def get(
        self,
        skill: str,
        evaluate: Callable[[Path], float],
        folder: Path,
        name: str = "skill.md",
        kind: str = "",
    ) -> float:
        """`skill`'s score (written to folder/name and evaluated once); `kind` keeps texts that
        are not skills (DSPy's prompts) apart from skills."""
        key = skill_key(kind + skill)
        if key not in self.scores:
            folder.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text(skill, encoding="utf-8")
            self.scores[key] = evaluate(folder / name)
            self.path.write_text(json.dumps(self.scores, indent=2), encoding="utf-8")
        return self.scores[key]


def test_folder(work: Path, skill: str) -> Path:
    """Where one seed's test evaluation of `skill` is kept: `test_initial` for the empty skill."""
    return work / ("test_initial" if skill == "" else f"test_{skill_key(skill)}")


def eval_test(config: Path, seed: int, skill: Path, *overrides: str) -> float:
    """`skillgrad eval --split test` of the skill file with `config` on `seed`'s split (and the
    `--set` overrides), run in the skill's folder; a failed eval exits with its log's tail."""
    out = skill.parent / "eval"
    cmd = [sys.executable, "-m", "skillgrad.cli", "eval", "--config", str(config), "--skill", str(skill)]
    cmd += ["--split", "test", "--out", str(out), "--set", f"benchmark.seed={seed}"]
    for override in overrides:
        cmd += ["--set", override]
    run(cmd, skill.parent / "eval.log")
    return float(json.loads((out / "eval.json").read_text(encoding="utf-8"))["mean_score"])


def skillgrad_eval(sr: SeedRun, skill: Path) -> float:
    return eval_test(sr.config, sr.seed, skill)


def test_pair(sr: SeedRun, best: str) -> tuple[float, float, float, dict[str, int]]:
    """Test score of the empty initial skill and of `best` (skillgrad's chat target); wall; usage."""
    scores = TestScores(sr.work / f"test_scores{sr.settings_key}.json")
    mark, start = sr.log.mark(), time.perf_counter()
    before = scores.get("", lambda p: skillgrad_eval(sr, p), test_folder(sr.work, ""))
    after = scores.get(best, lambda p: skillgrad_eval(sr, p), test_folder(sr.work, best))
    return before, after, time.perf_counter() - start, sr.usage_since(mark)


def row_of(
    sr: SeedRun, system: str, search: dict[str, Any], test: tuple[float, float, float, dict[str, int]]
) -> dict[str, Any]:
    before, after, test_wall, test_usage = test
    return {
        "benchmark": sr.benchmark,
        "seed": sr.seed,
        "system": system,
        "budget": sr.budget,
        **search,
        "test_before": before,
        "test_after": after,
        "test_calls": test_usage["test_calls"],
        "test_wall_s": round(test_wall, 1),
    }


def _search_usage(sr: SeedRun, mark: int) -> dict[str, int]:
    counted = sr.usage_since(mark)
    if counted["test_calls"]:  # a search that reads the test split is a broken comparison
        sys.exit(
            f"{sr.benchmark} seed {sr.seed}: the search made {counted['test_calls']} calls on test items"
        )
    return {k: counted[k] for k in ("target_calls", "optimizer_calls", "target_tokens", "optimizer_tokens")}


def run_skillgrad(sr: SeedRun) -> dict[str, Any]:
    folder = sr.work / "skillgrad"
    sets = [*sr.sets, *sr.seed_sets, "benchmark.test_size=0"]
    cmd = [
        sys.executable,
        "-m",
        "skillgrad.cli",
        "train",
        "--config",
        str(sr.config),
        "--out",
        str(folder / "run"),
    ]
    mark = sr.log.mark()
    wall = run([*cmd, *[a for s in sets for a in ("--set", s)]], folder / "train.log")
    summary = json.loads((folder / "run" / "summary.json").read_text(encoding="utf-8"))
    best = (folder / "run" / "best_skill.md").read_text(encoding="utf-8")
    search = {
        "baseline_val": summary["baseline_val_score"],
        "best_val": summary["best_val_score"],
        **_search_usage(sr, mark),
        "wall_s": round(wall, 1),
        "accepted": summary.get("accepted"),
        "best_skill": best,
        "sets": list(sr.sets),
    }
    return row_of(sr, "skillgrad", search, test_pair(sr, best))


def run_gepa(sr: SeedRun, python: Path) -> dict[str, Any]:
    folder = sr.work / "gepa"
    cmd = [
        str(python),
        str(REPO / "bench" / "gepa_run.py"),
        "--config",
        str(sr.config),
        "--seed",
        str(sr.seed),
    ]
    cmd += ["--budget", str(sr.budget), "--out", str(folder / "run")]
    mark = sr.log.mark()
    wall = run([*cmd, *[a for s in sr.seed_sets for a in ("--set", s)]], folder / "gepa.log")
    own = json.loads((folder / "run" / "gepa.json").read_text(encoding="utf-8"))
    best = (folder / "run" / "best_skill.md").read_text(encoding="utf-8")
    search = {
        "baseline_val": own["baseline_val_score"],
        "best_val": own["best_val_score"],
        **_search_usage(sr, mark),
        "wall_s": round(wall, 1),
        "candidates": own["candidates"],
        "best_skill": best,
        "version": own["gepa_version"],
    }
    return row_of(sr, "gepa", search, test_pair(sr, best))


def skillopt_items(tasks: list[Task]) -> list[dict[str, Any]]:
    """skillgrad's tasks as SkillOpt SearchQA items: {id, question, context, answers}."""
    return [
        {"id": t.id, "question": t.question, "context": t.context or "", "answers": list(t.answers)}
        for t in tasks
    ]


def skillopt_config(so: SkillOpt, sr: SeedRun, folder: Path, split_dir: Path) -> Path:
    """SkillOpt's own SearchQA config, with the bench's items, models, budget and seed on top."""
    c = load_config(sr.config, sr.seed_sets)
    cfg = {
        "_base_": str(so.checkout / "configs" / "searchqa" / "default.yaml"),
        "model": {
            "backend": "azure_openai",  # both roles openai_chat; the endpoint is OpenAI-compatible
            "optimizer": "optimizer",
            "target": "target",
            "azure_openai_endpoint": sr.base_url,
            "azure_openai_auth_mode": "openai_compatible",
            "azure_openai_api_key": "sk-bench",
        },
        "train": {
            "num_epochs": c.train.epochs,
            "train_size": c.benchmark.train_size,
            "batch_size": c.train.batch_size,
            "accumulation": 1,
            "seed": sr.seed,
        },
        "gradient": {"minibatch_size": c.train.minibatch_size, "analyst_workers": 1},
        "optimizer": {
            "learning_rate": c.optimizer.learning_rate,
            "min_learning_rate": c.optimizer.min_learning_rate,
            "lr_scheduler": "constant",
        },
        "evaluation": {"use_gate": True, "sel_env_num": 0, "test_env_num": 0, "eval_test": True},
        "env": {
            "name": "searchqa",
            "skill_init": str(so.site / "skillopt" / "envs" / "searchqa" / "skills" / "initial.md"),
            "split_mode": "split_dir",
            "split_dir": str(split_dir),
            "workers": 1,  # one slot per model: more workers only queue at the server
            "exec_timeout": 1800,
            "max_completion_tokens": sr.target_cap,
            "out_root": str(folder / "run"),
        },
    }
    path = folder / "skillopt.yaml"
    path.write_text(json.dumps(cfg, indent=2), encoding="utf-8")  # JSON is YAML
    return path


def _rescored(sr: SeedRun, results: Path) -> float:
    """SkillOpt's test answers (its own <answer> extraction) scored by the benchmark's scorer."""
    bench = load_benchmark(load_config(sr.config, sr.seed_sets))
    by_id = {t.id: t for t in sr.test_tasks}
    rows = [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines() if line.strip()]
    scores = [
        bench.score(by_id[str(r["id"])], AgentResult(answer=str(r.get("predicted_answer", "")))).value
        for r in rows
    ]
    if len(scores) != len(by_id):
        sys.exit(f"{results}: {len(scores)} test answers for {len(by_id)} test items")
    return sum(scores) / len(scores)


def run_skillopt(sr: SeedRun, so: SkillOpt) -> dict[str, Any]:
    folder = sr.work / "skillopt"
    bench = load_benchmark(load_config(sr.config, sr.seed_sets))
    splits = {s: skillopt_items(bench.load(s)) for s in ("train", "val")}
    split_dir = write_split(folder / "split", {**splits, "test": skillopt_items(list(sr.test_tasks))})
    cfg = skillopt_config(so, sr, folder, split_dir)
    mark, start = sr.log.mark(), time.perf_counter()
    run([str(so.venv / "bin" / "skillopt-train"), "--config", str(cfg)], folder / "train.log", cwd=folder)
    wall = time.perf_counter() - start
    summary = json.loads((folder / "run" / "summary.json").read_text(encoding="utf-8"))
    counted = sr.usage_since(mark)  # its test rollouts are told apart here
    test_dirs = [folder / "run" / d for d in ("test_eval_baseline", "test_eval")]
    search = {
        "baseline_val": summary["baseline_selection_hard"],
        "best_val": summary["best_selection_hard"],
        "target_calls": counted["target_calls"],
        "optimizer_calls": counted["optimizer_calls"],
        "target_tokens": counted["target_tokens"],
        "optimizer_tokens": counted["optimizer_tokens"],
        "wall_s": round(wall, 1),  # its search and its two test rollouts: one process
        "accepted": summary["total_accepts"],
        "own_test_hard": [summary["baseline_test_hard"], summary["test_hard"]],
        "best_skill": (folder / "run" / "best_skill.md").read_text(encoding="utf-8"),
        "version": "0.2.0",
    }
    before = _rescored(sr, test_dirs[0] / "results.jsonl")
    after = _rescored(sr, test_dirs[1] / "results.jsonl")
    return row_of(sr, "skillopt", search, (before, after, 0.0, counted))


def dspy_test(sr: SeedRun, program: dict[str, Any]) -> tuple[float, float, float, dict[str, int]]:
    """Test score of DSPy's initial and best program's prompts (bench/peers_dspy.py); wall; usage,
    with `test_errors`, the test calls that failed (each scored 0). A prompt already scored on this
    seed is not scored again (its JSON text is the key)."""
    scores = TestScores(sr.work / f"test_scores{sr.settings_key}.json")
    bench = load_benchmark(load_config(sr.config, sr.seed_sets))
    failed = []

    def scored(path: Path) -> float:
        prompt = json.loads(path.read_text(encoding="utf-8"))
        mean, errors = score_prompt(prompt, sr.test_tasks, bench, sr.base_url, sr.target_cap)
        failed.append(errors)
        return mean

    mark, start = sr.log.mark(), time.perf_counter()
    texts = [json.dumps(program[k], sort_keys=True, ensure_ascii=False) for k in ("initial", "best")]
    before, after = (
        scores.get(t, scored, sr.work / f"test_dspy_{skill_key(t)}", "prompt.json", "dspy:") for t in texts
    )
    counted = sr.usage_since(mark) | {"test_errors": sum(failed)}
    return before, after, time.perf_counter() - start, counted


def run_dspy(sr: SeedRun, python: Path) -> dict[str, Any]:
    folder = sr.work / "dspy"
    cmd = [str(python), str(REPO / "bench" / "dspy_run.py"), "--config", str(sr.config)]
    cmd += ["--seed", str(sr.seed), "--budget", str(sr.budget), "--out", str(folder / "run")]
    mark = sr.log.mark()
    wall = run([*cmd, *[a for s in sr.seed_sets for a in ("--set", s)]], folder / "dspy.log")
    own = json.loads((folder / "run" / "dspy.json").read_text(encoding="utf-8"))
    program = json.loads((folder / "run" / "program.json").read_text(encoding="utf-8"))
    search = {
        "baseline_val": own["baseline_val_score"],
        "best_val": own["best_val_score"],
        **_search_usage(sr, mark),
        "wall_s": round(wall, 1),
        "candidates": len(own["candidates"]),
        "demos": own["demos"],
        "best_skill": json.dumps(program["best"]["messages"], ensure_ascii=False),
        "version": own["dspy_version"],
    }
    test = dspy_test(sr, program)
    return row_of(sr, "dspy", {**search, "test_errors": test[3]["test_errors"]}, test)
