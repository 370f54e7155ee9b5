"""A fresh venv holding one checkout of skillgrad as a user's `pip install "PATH[openai]"` makes it.

The benches that time whole processes run skillgrad from here, as bench/skillopt_side.py runs
SkillOpt from its own fresh venv: neither system then imports what the development environment
happens to hold besides (here trio, which httpcore picks up when installed, and aiohttp, which
mlflow brings and the openai SDK imports when present: about 0.25 s of start-up together).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

# What a build of the package reads; copied so that a stale build/ or egg-info in the checkout
# never reaches the venv.
SOURCES = ("pyproject.toml", "README.md", "skillgrad")


def install(folder: Path, checkout: Path, extras: str = "openai") -> Path:
    """Make a venv under `folder` with `checkout[extras]` installed (not editable); its python."""
    source = folder / "skillgrad-source"
    source.mkdir(parents=True)
    for name in SOURCES:
        if (checkout / name).is_dir():
            shutil.copytree(checkout / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copyfile(checkout / name, source / name)
    venv = folder / "skillgrad-venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    done = subprocess.run(
        [str(venv / "bin" / "pip"), "install", "-q", f"{source}[{extras}]"],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        sys.exit(
            f"skillgrad could not be installed from {checkout} into a fresh venv (pass --dev-env to "
            f"use this interpreter's packages instead): {done.stderr.strip()[-400:]}"
        )
    return venv / "bin" / "python"
