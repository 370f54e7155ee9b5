"""Issue 12, defect 7: scored code is contained in files and processes, not only network and memory.

Hostile model-written code tries to write outside its folder, plant a file in the run folder, read
the trainer's command line from /proc, read the user's home, and leave a `setsid` child running."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from skillgrad.benchmarks.sandbox import Sandbox
from tests.needs import need

HOSTILE = r"""
import glob, json, os, subprocess, sys
report = {}
def attempt(name, fn):
    try:
        fn()
        report[name] = "done"
    except Exception as exc:
        report[name] = type(exc).__name__
def plant():
    with open(sys.argv[1], "w") as f:
        f.write("planted")
attempt("plant", plant)
def outside_tmp():
    with open(sys.argv[2], "w") as f:
        f.write("x")
attempt("outside", outside_tmp)
found = []
for path in glob.glob("/proc/[0-9]*/cmdline"):
    try:
        with open(path, "rb") as f:
            if open("marker.txt").read().encode() in f.read():
                found.append(path)
    except OSError:
        pass
report["cmdline_seen"] = found
report["processes"] = len(glob.glob("/proc/[0-9]*"))
def read_home():
    report["netrc"] = open(os.path.join(sys.argv[4], ".netrc")).read()
    report["aws"] = os.listdir(os.path.join(sys.argv[4], ".aws"))
attempt("home", read_home)
with open("mine.txt", "w") as f:  # its own folder stays writable
    f.write("ok")
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", sys.argv[5]],
                 start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(json.dumps(report))
"""


def processes_with(marker: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    pids.append(int(entry.name))
            except OSError:
                pass
    return pids


def test_scored_code_cannot_touch_files_see_the_trainer_or_outlive_its_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    (home / ".aws").mkdir(parents=True)
    (home / ".aws" / "credentials").write_text("aws_secret_access_key = abc", encoding="utf-8")
    (home / ".netrc").write_text("machine api login me password hunter2", encoding="utf-8")
    monkeypatch.setenv("HOME", str(home))
    sandbox = Sandbox(timeout_s=20, memory_mb=512)
    need(
        sandbox.isolation == "full",
        f"this kernel gives no unprivileged namespaces (isolation: {sandbox.isolation})",
    )
    run_folder = tmp_path / "run"
    run_folder.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    (work / "code.py").write_text(HOSTILE, encoding="utf-8")
    secret_arg = f"--set=model.api_key=sk-{uuid.uuid4().hex}"
    (work / "marker.txt").write_text(secret_arg, encoding="utf-8")  # not in its own argv
    trainer = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", secret_arg])
    child_marker = f"skillgrad-orphan-{uuid.uuid4().hex}"
    try:
        argv = ["code.py", str(run_folder / "planted.txt"), str(tmp_path / "outside.txt"), "-"]
        argv += [str(home), child_marker]
        result = sandbox.run_python(argv, work)
    finally:
        trainer.kill()
        trainer.wait()
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["plant"] == "OSError" and not (run_folder / "planted.txt").exists()
    assert report["outside"] == "OSError" and not (tmp_path / "outside.txt").exists()
    assert report["cmdline_seen"] == [] and report["processes"] <= 4  # only its own processes
    assert report.get("netrc", "") == "" and report.get("aws", []) == []  # the user's home is hidden
    assert (work / "mine.txt").read_text() == "ok"
    deadline = time.monotonic() + 5
    while processes_with(child_marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert processes_with(child_marker) == []  # the setsid child died with the run


def test_environment_reaches_nothing_of_the_trainer(tmp_path: Path) -> None:
    """Neither its own environment nor /proc/<trainer>/environ shows the trainer's keys."""
    secret = f"sk-should-never-be-seen-{uuid.uuid4().hex}"
    trainer = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"], env={**os.environ, "OPENAI_API_KEY": secret}
    )
    (tmp_path / "marker.txt").write_text(secret, encoding="utf-8")
    (tmp_path / "env.py").write_text(
        "import glob, os\nsecret = open('marker.txt', 'rb').read()\nseen = []\n"
        "for p in glob.glob('/proc/*/environ'):\n"
        "    try:\n        seen.append(secret in open(p, 'rb').read())\n    except OSError:\n        pass\n"
        "print(any(seen) or 'OPENAI_API_KEY' in os.environ)\n",
        encoding="utf-8",
    )
    try:
        result = Sandbox(timeout_s=20, memory_mb=512).run_python(["env.py"], tmp_path)
    finally:
        trainer.kill()
        trainer.wait()
    assert result.stdout.strip() == "False", result.stderr
