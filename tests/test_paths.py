"""Issue 32, defect 4: path arguments are checked before anything runs: one line naming the flag
and what the path is (a file, a folder, missing, unwritable), exit 2, and nothing is written."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.needs import need


def _cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "skillgrad.cli", *args], capture_output=True, text=True, timeout=120, cwd=cwd
    )


@pytest.fixture
def world(tmp_path: Path) -> Path:
    """A data file, a skill, a config (nothing listens at its base_url: no call may be needed),
    and a file the user cares about."""
    rows = [{"id": f"q{i}", "question": f"Q{i}?", "answers": ["a"]} for i in range(6)]
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (tmp_path / "skill.md").write_text("Be brief.\n", encoding="utf-8")
    settings = {
        "benchmark": {"name": "qa", "data": "items.jsonl", "train_size": 2, "val_size": 2},
        "model": {
            "backend": "openai_chat",
            "base_url": "http://127.0.0.1:9/v1",
            "api_key": "sk-test-FAKE-paths",
        },
        "cache": {"enabled": False},
    }
    (tmp_path / "config.yaml").write_text(json.dumps(settings), encoding="utf-8")
    (tmp_path / "notes.txt").write_text("precious\n", encoding="utf-8")
    return tmp_path


def _files(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


CASES = {
    # name: (arguments, what the line says)
    "train --out a file": (
        ["train", "--config", "config.yaml", "--out", "notes.txt"],
        "--out notes.txt: is a file",
    ),
    "train --out inside a file": (
        ["train", "--config", "config.yaml", "--out", "notes.txt/run"],
        "notes.txt is a file, so a run folder cannot be made inside it",
    ),
    "eval --out a file": (
        ["eval", "--config", "config.yaml", "--skill", "skill.md", "--out", "notes.txt"],
        "--out notes.txt: is a file",
    ),
    "eval --out inside a file": (
        ["eval", "--config", "config.yaml", "--skill", "skill.md", "--out", "notes.txt/x/y"],
        "notes.txt is a file",
    ),
    "eval --skill missing": (
        ["eval", "--config", "config.yaml", "--skill", "nope.md", "--out", "ev"],
        "--skill nope.md: no such file or folder",
    ),
    "harvest --out a folder": (["harvest", "--from", "items.jsonl", "--out", "."], "--out .: is a folder"),
    "harvest --out inside a file": (
        ["harvest", "--from", "items.jsonl", "--out", "notes.txt/tasks.jsonl"],
        "notes.txt is a file",
    ),
    "harvest --from missing": (
        ["harvest", "--from", "nowhere", "--out", "t.jsonl"],
        "--from nowhere: no such",
    ),
    "report --out a folder": (["report", ".", "--out", "."], "--out .: is a folder"),
    "resume a file": (["train", "--resume", "notes.txt"], "--resume notes.txt: is a file, not a run folder"),
    "resume missing": (["train", "--resume", "gone"], "--resume gone: no such folder"),
    "resume a folder that is no run": (
        ["train", "--resume", "."],
        "not a skillgrad run folder (no config.json)",
    ),
    "--data missing": (
        ["train", "--config", "config.yaml", "--data", "nope.jsonl"],
        "--data nope.jsonl: no such",
    ),
    "--data a folder for a JSONL benchmark": (
        ["train", "--config", "config.yaml", "--data", "."],
        "a folder, not a data file",
    ),
    "skill.init missing": (
        ["train", "--config", "config.yaml", "--set", "skill.init=missing.md", "--out", "run"],
        "skill.init",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_bad_path_is_one_line_and_nothing_is_written(world: Path, name: str) -> None:
    args, says = CASES[name]
    before = _files(world)
    proc = _cli(*args, cwd=world)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
    assert says in proc.stderr, proc.stderr
    assert _files(world) == before  # nothing overwritten, nothing created
    assert sorted(p.name for p in world.iterdir()) == sorted({*(k.split("/")[0] for k in before)})


def test_an_unwritable_out_is_refused_up_front(world: Path) -> None:
    """A read-only folder (a read-only bind mount in a user namespace: refused to root as well)."""
    unshare = shutil.which("unshare")
    probe = subprocess.run([unshare or "unshare", "-rm", "true"], capture_output=True) if unshare else None
    need(probe is not None and probe.returncode == 0, "this kernel gives no unprivileged user namespaces")
    locked = world / "locked"
    locked.mkdir()
    script = (
        f'mount --bind -o ro "{locked}" "{locked}" && mount -o remount,bind,ro "{locked}" && '
        f'exec "{sys.executable}" -m skillgrad.cli "$@"'
    )
    for args in (
        ["train", "--config", "config.yaml", "--out", "locked/run"],
        ["harvest", "--from", "items.jsonl", "--out", "locked/tasks.jsonl"],
    ):
        proc = subprocess.run(
            [unshare or "unshare", "-rm", "sh", "-c", script, "sh", *args],
            capture_output=True, text=True, timeout=120, cwd=world,
        )  # fmt: skip
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.count("\n") == 1 and "locked is not writable" in proc.stderr, proc.stderr
    assert list(locked.iterdir()) == []
