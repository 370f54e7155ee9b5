"""Issue 12, defects 5 and 6: a refused key or exhausted quota stops a run at once with one line
naming the key to fix (openai, anthropic and the real Claude Code CLI); `model.timeout_s` bounds a
whole HTTP attempt, against servers that trickle or never end their body or headers."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from skillgrad.backends.anthropic_api import AnthropicChat
from skillgrad.backends.interface import Message
from skillgrad.backends.openai_compat import OpenAIChat
from skillgrad.errors import BackendError, FatalBackendError
from tests.fakes.anthropic_server import FakeAnthropic, http_error
from tests.fakes.openai_server import ScriptedOpenAI, Status, unauthorized

BAD_KEY = "sk-bad-0123456789abcdef"


def write_items(tmp_path: Path, n: int = 6) -> Path:
    data = tmp_path / "items.jsonl"
    rows = [{"id": f"q{i}", "question": f"Question {i}?", "answers": ["a"]} for i in range(n)]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return data


def run_cli(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "skillgrad.cli", *args], capture_output=True, text=True, timeout=timeout
    )


def config(tmp_path: Path, backend: str, base_url: str, *extra: str) -> Path:
    lines = [
        "benchmark:", "  name: qa", f"  data: {write_items(tmp_path)}", "  train_size: 3", "  val_size: 3",
        "  test_size: 0", "model:", f"  backend: {backend}", f"  base_url: {base_url}",
        f"  api_key: {BAD_KEY}", "  max_retries: 2", *extra,
        "train:", "  epochs: 1", "  batch_size: 3", "  minibatch_size: 3", "  concurrency: 2",
        "cache:", "  enabled: false",
    ]  # fmt: skip
    path = tmp_path / "config.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp_path / "skill.md").write_text("Be brief.\n", encoding="utf-8")
    return path


def assert_one_line_naming_the_key(proc: subprocess.CompletedProcess[str]) -> None:
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and BAD_KEY not in proc.stderr + proc.stdout
    first = proc.stderr.strip().splitlines()[0]
    assert "authentication failed" in first or "quota" in first
    assert "fix model.api_key" in first


def test_openai_eval_with_a_bad_key_stops_at_once(tmp_path: Path) -> None:
    with ScriptedOpenAI(lambda request: unauthorized()) as server:
        cfg = config(tmp_path, "openai_chat", server.base_url)
        out = tmp_path / "eval"
        proc = run_cli("eval", "--config", str(cfg), "--skill", str(tmp_path / "skill.md"), "--split", "val",
                       "--out", str(out))  # fmt: skip
        asked = len(server.requests)
    assert_one_line_naming_the_key(proc)
    assert "mean score" not in proc.stdout  # no score that measured nothing
    assert asked <= 2  # the tasks in flight; no queued task started after the refusal
    assert "authentication failed" in json.loads((out / "eval.json").read_text(encoding="utf-8"))["error"]


def test_openai_train_out_of_quota_stops_with_an_error_summary(tmp_path: Path) -> None:
    quota = Status(429, "You exceeded your current quota, please check your plan and billing details.",
                   type="insufficient_quota")  # fmt: skip
    with ScriptedOpenAI(lambda request: quota) as server:
        out = tmp_path / "run"
        proc = run_cli(
            "train", "--config", str(config(tmp_path, "openai_chat", server.base_url)), "--out", str(out)
        )
        asked = len(server.requests)
    assert_one_line_naming_the_key(proc)
    assert asked <= 2  # out of quota is not retried like a rate limit
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["stopped"] == "error" and "quota" in summary["error"]


def test_anthropic_bad_key_is_fatal_and_names_the_setting() -> None:
    with FakeAnthropic(lambda req: http_error(401)) as api:
        chat = AnthropicChat(model="claude-sonnet-5-5", base_url=api.base_url, api_key=BAD_KEY,
                             key_name="model.optimizer_api_key", max_retries=3)  # fmt: skip
        with pytest.raises(FatalBackendError) as info:
            chat.complete([Message("user", "Q")], stage="reflect")
        assert len(api.message_requests) == 1
    assert "fix model.optimizer_api_key" in str(info.value) and BAD_KEY not in str(info.value)


@pytest.mark.slow
def test_claude_code_bad_key_fails_fast_instead_of_waiting_out_the_timeout(tmp_path: Path) -> None:
    with FakeAnthropic(lambda req: http_error(401)) as api:
        cfg = config(tmp_path, "claude_code_exec", api.base_url, "  claude_code_timeout_s: 150")
        start = time.monotonic()
        proc = run_cli("eval", "--config", str(cfg), "--skill", str(tmp_path / "skill.md"), "--split", "val",
                       "--out", str(tmp_path / "eval"))  # fmt: skip
        elapsed = time.monotonic() - start
    assert_one_line_naming_the_key(proc)
    assert elapsed < 60  # the CLI's own ten retries (minutes) are cut at the first refusal


# ------------------------------------------------------------------------------- defect 6


@pytest.fixture
def hostile_http() -> Iterator[tuple[str, dict[str, str]]]:
    """A raw HTTP server on 127.0.0.1 whose behaviour per request path is chosen by the test."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    mode = {"kind": "trickle"}
    stop = threading.Event()

    def serve(conn: socket.socket) -> None:
        with conn:
            try:
                conn.recv(65536)
                if mode["kind"] == "headers":  # headers one byte at a time, for ever
                    for byte in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 10_000:
                        if stop.is_set():
                            return
                        conn.sendall(bytes([byte]))
                        time.sleep(0.2)
                    return
                head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                if mode["kind"] == "trickle":  # a valid body, one byte every 0.3 s
                    body = json.dumps({"choices": [{"message": {"content": "x" * 200}}]}).encode()
                    conn.sendall(head + f"Content-Length: {len(body)}\r\n\r\n".encode())
                    for byte in body:
                        if stop.is_set():
                            return
                        conn.sendall(bytes([byte]))
                        time.sleep(0.3)
                else:  # endless: a chunked body that never ends
                    conn.sendall(head + b"Transfer-Encoding: chunked\r\n\r\n")
                    while not stop.is_set():
                        conn.sendall(b"1\r\n \r\n")
                        time.sleep(0.05)
            except OSError:
                return

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1", mode
    finally:
        stop.set()
        thread.join(5)
        listener.close()


@pytest.mark.parametrize("kind", ["trickle", "endless", "headers"])
def test_timeout_bounds_the_whole_call(hostile_http: tuple[str, dict[str, str]], kind: str) -> None:
    base_url, mode = hostile_http
    mode["kind"] = kind
    chat = OpenAIChat(model="m", base_url=base_url, api_key="k", timeout_s=2, max_retries=0)
    start = time.monotonic()
    with pytest.raises(BackendError, match="timed out"):
        chat.complete([Message("user", "Q")], stage="rollout")
    assert time.monotonic() - start < 6
