"""Atomic writes, torn JSONL tails, and the run lock across processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from skillgrad.atomic import RunLock, append_jsonl, read_jsonl_repairing, write_json_atomic, write_text_atomic
from skillgrad.errors import UserError


def test_atomic_writes_utf8_and_leave_no_temp(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "summary.json"
    write_json_atomic(path, {"name": "café", "n": 1})
    assert json.loads(path.read_text(encoding="utf-8")) == {"name": "café", "n": 1}
    assert "café" in path.read_text(encoding="utf-8")  # ensure_ascii=False
    write_text_atomic(path, "replaced\r\n")
    assert path.read_bytes() == b"replaced\r\n"
    assert [p.name for p in path.parent.iterdir()] == ["summary.json"]
    with pytest.raises(ValueError):
        write_json_atomic(path, {"x": float("nan")})  # never write invalid JSON
    assert path.read_bytes() == b"replaced\r\n" and len(list(path.parent.iterdir())) == 1


def test_torn_tail_is_dropped_and_file_truncated(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    append_jsonl(path, {"step": 1})
    append_jsonl(path, {"step": 2})
    good = path.read_bytes()
    with open(path, "ab") as handle:
        handle.write(b'{"step": 3, "sco')  # a crash mid-write
    assert read_jsonl_repairing(path) == [{"step": 1}, {"step": 2}]
    assert path.read_bytes() == good
    append_jsonl(path, {"step": 3})
    assert read_jsonl_repairing(path) == [{"step": 1}, {"step": 2}, {"step": 3}]


def test_append_cuts_torn_tail_first(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    path.write_bytes(b'{"a": 1}\n{"a": 2')
    append_jsonl(path, {"a": 3})
    assert read_jsonl_repairing(path) == [{"a": 1}, {"a": 3}]


def test_garbage_last_line_with_newline_and_unterminated_good_line(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    path.write_bytes(b'{"a": 1}\n\x00\x00\x00\n')
    assert read_jsonl_repairing(path) == [{"a": 1}]
    assert path.read_bytes() == b'{"a": 1}\n'
    path.write_bytes(b'{"a": 1}\n{"a": 2}')
    assert read_jsonl_repairing(path) == [{"a": 1}, {"a": 2}]
    assert path.read_bytes().endswith(b"}\n")
    assert read_jsonl_repairing(tmp_path / "missing.jsonl") == []


def test_damage_in_the_middle_is_a_user_error(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    path.write_bytes(b'{"a": 1}\nbroken\n{"a": 2}\n')
    with pytest.raises(UserError, match="line 2"):
        read_jsonl_repairing(path)


HOLDER = """
import sys, time
from pathlib import Path
from skillgrad.atomic import RunLock
lock = RunLock(Path(sys.argv[1]))
lock.acquire()
print("locked", flush=True)
time.sleep(60)
"""


def start_holder(lock_path: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(lock_path)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "locked"
    return proc


def test_lock_refused_while_held_then_taken_over_after_sigkill(tmp_path: Path) -> None:
    lock_path = tmp_path / "run" / ".lock"
    proc = start_holder(lock_path)
    try:
        with pytest.raises(UserError, match=f"pid {proc.pid}"):
            RunLock(lock_path).acquire()
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        assert json.loads(lock_path.read_text())["pid"] == proc.pid  # a stale lock file remains
        with RunLock(lock_path) as lock:
            assert lock.held
            assert json.loads(lock_path.read_text())["pid"] == os.getpid()
        assert not lock_path.exists()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_lock_is_exclusive_within_one_process(tmp_path: Path) -> None:
    lock_path = tmp_path / ".lock"
    with RunLock(lock_path), pytest.raises(UserError, match="another skillgrad trainer"):
        RunLock(lock_path).acquire()
    start = time.monotonic()
    with RunLock(lock_path):
        pass
    assert time.monotonic() - start < 1


def test_a_trainer_that_finds_its_out_held_names_the_live_run_and_never_says_resume(tmp_path: Path) -> None:
    """Issue 40, item 5: two trainers started at the same instant on one --out. The loser (the
    folder is no longer empty when it creates it) and one that starts a moment later (it finds
    the folder in use and takes out-2) each say that another run holds the folder, its pid, and
    to wait or choose another; neither suggests `--resume` of a run that is still going."""
    from skillgrad.run_folder import RunDir
    from tests.fakes.openai_server import ScriptedOpenAI
    from tests.test_train_e2e import GOOD_RULE, skillgrad, world, write_config

    out = tmp_path / "run"
    proc = start_holder(out / ".lock")
    try:
        with pytest.raises(UserError) as lost:  # the instant race: fresh_out saw it empty, then this
            RunDir(out).create()
        with ScriptedOpenAI(world(GOOD_RULE)) as server:
            later = skillgrad("train", "--config", str(write_config(tmp_path, server)), "--out", str(out))
    finally:
        proc.kill()
        proc.wait()
    message = str(lost.value)
    assert f"pid {proc.pid}" in message and "wait" in message and "--resume" not in message
    assert later.returncode == 0, later.stderr
    note = next(line for line in later.stdout.splitlines() if "this run writes to" in line)
    assert (
        f"pid {proc.pid}" in note
        and "--resume" not in note
        and (tmp_path / "run-2" / "summary.json").is_file()
    )
