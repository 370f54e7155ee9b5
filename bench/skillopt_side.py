"""SkillOpt 0.2.0 beside skillgrad in bench/latency.py: install, complete, configure, run.

SkillOpt is installed from the registry (`pip install skillopt==0.2.0`) into a temporary venv.
The 0.2.0 wheel (and sdist) ship no markdown files, so its trainer cannot start: every prompt
(`skillopt/prompts/*.md`, `skillopt/envs/<env>/prompts/*.md`) and the SearchQA initial skill
are missing. They are copied from a checkout of the same release, which is checked first: every
Python file of the installed package must be byte-identical to the checkout's, so the code that
runs is the registry's and only the missing templates come from the checkout. Make one with

    mkdir -p /tmp/so && git --git-dir=SKILLOPT_GIT_DIR archive v0.2.0 | tar -x -C /tmp/so

(the tag: the branch head of the repository is newer than the release and its files differ).
When the registry cannot be reached, the checkout itself is installed (`pip install PATH`) and
the script says so. Nothing of SkillOpt is copied into this repository.
"""

from __future__ import annotations

import filecmp
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from latency_world import Scripted, serve

REQUIREMENT = "skillopt==0.2.0"


@dataclass(frozen=True)
class SkillOpt:
    """An installed SkillOpt: its venv, its site-packages and where it came from."""

    venv: Path
    site: Path
    source: str  # a sentence: registry or checkout, and why
    prompts_added: int
    checkout: Path


def site_packages(venv: Path) -> Path:
    found = sorted(venv.glob("lib/python*/site-packages"))
    if not found:
        sys.exit(f"{venv}: no site-packages in the venv")
    return found[0]


def pip_install(venv: Path, what: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(venv / "bin" / "pip"), "install", "-q", what], capture_output=True, text=True, check=False
    )


def mismatched_sources(site: Path, checkout: Path) -> list[str]:
    """Python files of the installed package that the checkout lacks or has otherwise."""
    bad = []
    for root in ("skillopt", "scripts"):
        for path in sorted((site / root).rglob("*.py")):
            relative = path.relative_to(site)
            theirs = checkout / relative
            if not theirs.is_file() or not filecmp.cmp(path, theirs, shallow=False):
                bad.append(str(relative))
    return bad


def add_templates(site: Path, checkout: Path) -> int:
    """Copy every markdown file of the checkout's package that the installation lacks."""
    added = 0
    for path in sorted((checkout / "skillopt").rglob("*.md")):
        target = site / path.relative_to(checkout)
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
            added += 1
    return added


def install(folder: Path, checkout: Path) -> SkillOpt:
    """SkillOpt 0.2.0 in a fresh venv under `folder`, completed with the checkout's templates."""
    if not (checkout / "skillopt" / "prompts").is_dir():
        sys.exit(f"--skillopt-src {checkout}: no skillopt/prompts/ there; pass a checkout of SkillOpt v0.2.0")
    venv = folder / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    done = pip_install(venv, REQUIREMENT)
    source = f"`pip install {REQUIREMENT}` from the registry"
    if done.returncode != 0:
        reason = done.stderr.strip().splitlines()[-1:] or ["no output"]
        done = pip_install(venv, str(checkout))
        if done.returncode != 0:
            sys.exit(f"SkillOpt could not be installed: {done.stderr.strip()[-400:]}")
        source = f"the checkout {checkout} (the registry install failed: {reason[0]})"
    site = site_packages(venv)
    bad = mismatched_sources(site, checkout)
    if bad:
        sys.exit(
            f"--skillopt-src {checkout} is not the installed release: {len(bad)} Python files differ "
            f"(first: {bad[0]}); make it with `git archive v0.2.0`"
        )
    return SkillOpt(venv, site, source, add_templates(site, checkout), checkout)


def write_split(folder: Path, splits: dict[str, list[dict[str, Any]]]) -> Path:
    """SkillOpt's split_dir layout: train/, val/, test/, each with one JSON array."""
    for name in ("train", "val", "test"):
        (folder / name).mkdir(parents=True, exist_ok=True)
        rows = splits.get(name, [])
        (folder / name / "items.json").write_text(json.dumps(rows, ensure_ascii=False), encoding="utf-8")
    return folder


def config(so: SkillOpt, folder: Path, split_dir: Path, port: int, seed: int) -> Path:
    """SkillOpt's own SearchQA config with the bench's settings on top (see bench/latency.py)."""
    cfg = {
        "_base_": str(so.checkout / "configs" / "searchqa" / "default.yaml"),
        "model": {
            "backend": "azure_openai",  # both roles openai_chat; the endpoint is OpenAI-compatible
            "optimizer": "scripted-optimizer",
            "target": "scripted-target",
            "azure_openai_endpoint": f"http://127.0.0.1:{port}/v1",
            "azure_openai_auth_mode": "openai_compatible",
            "azure_openai_api_key": "sk-bench",
        },
        "train": {"num_epochs": 1, "train_size": 64, "batch_size": 8, "accumulation": 1, "seed": seed},
        "gradient": {"minibatch_size": 4, "analyst_workers": 24},
        "optimizer": {"learning_rate": 4, "min_learning_rate": 2, "lr_scheduler": "cosine"},
        "evaluation": {"use_gate": True, "sel_env_num": 0, "test_env_num": 0, "eval_test": False},
        "env": {
            "name": "searchqa",
            "skill_init": str(so.site / "skillopt" / "envs" / "searchqa" / "skills" / "initial.md"),
            "split_mode": "split_dir",
            "split_dir": str(split_dir),
            "workers": 24,
            "out_root": str(folder / "run"),
        },
    }
    path = folder / "skillopt.yaml"
    path.write_text(json.dumps(cfg, indent=2), encoding="utf-8")  # JSON is YAML
    return path


def clean_env() -> dict[str, str]:
    """The bench's environment without provider credentials or endpoints, and with Python's
    bytecode cache on (as on a user's machine; some sandboxes turn it off), for both systems."""
    prefixes = ("AZURE_", "OPENAI_", "OPTIMIZER_", "TARGET_", "ANTHROPIC_")
    return {
        k: v for k, v in os.environ.items() if not k.startswith(prefixes) and k != "PYTHONDONTWRITEBYTECODE"
    }


def run_once(so: SkillOpt, world: Scripted, folder: Path, split_dir: Path, seed: int) -> dict[str, Any]:
    """One SkillOpt training run on the scripted server; its figures, counted at the server."""
    httpd = serve(world)
    try:
        cfg = config(so, folder, split_dir, httpd.server_address[1], seed)
        log = folder / "train.log"
        started = time.perf_counter()
        with log.open("w", encoding="utf-8") as out:
            proc = subprocess.run(
                [str(so.venv / "bin" / "skillopt-train"), "--config", str(cfg)],
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=folder,
                env=clean_env(),
                timeout=1200,
                check=False,
            )
        wall = time.perf_counter() - started
    finally:
        httpd.shutdown()
        httpd.server_close()
    if proc.returncode != 0:
        sys.exit(f"SkillOpt failed ({proc.returncode}):\n{log.read_text(encoding='utf-8')[-2000:]}")
    summary = json.loads((folder / "run" / "summary.json").read_text(encoding="utf-8"))
    return {
        "wall": wall,
        "val_score": float(summary["best_selection_hard"]),
        "accepted": int(summary["total_accepts"]),
        "own_calls": {k: v["calls"] for k, v in summary["token_summary"].items() if k != "_total"},
    }
