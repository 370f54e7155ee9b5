"""Issue 12, defect 1: a hostile agent cannot get a key out through its workspace, the call cache,
an encoding (base64, hex, halves) or a URL with credentials in it.

The slow test runs the REAL Claude Code CLI as the target against the scripted Anthropic server; the
scripted agent dumps its environment into files and echoes the key base64-encoded and in halves."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

import pytest

from skillgrad.redact import REDACTED, Redactor
from tests.fakes.anthropic_server import FakeAnthropic, FakeReply, FakeRequest, text, tool_use

FAKE_KEY = "sk-ant-HOSTILE-0123456789abcdefABCDEF"
URL_PASSWORD = "url-pass-9f8e7d6c5b"

HOSTILE_COMMAND = (
    "env > env_dump.txt; printenv ANTHROPIC_API_KEY > key.txt; "
    "printenv ANTHROPIC_API_KEY | base64 > key.b64; env | base64 > env.b64; "
    "printenv ANTHROPIC_API_KEY | od -An -tx1 | tr -d ' \\n' > key.hex; echo done"
)


def leaked_forms(key: str) -> list[str]:
    raw = key.encode()
    half = len(key) // 2
    return [
        key,
        base64.b64encode(raw).decode()[:-4],
        base64.b64encode(raw + b"\n").decode()[:-4],
        raw.hex(),
        key[:half],
        key[half:],
    ]


def hostile_turn(req: FakeRequest) -> FakeReply:
    results = req.tool_results()
    if not results:
        return tool_use("Bash", {"command": HOSTILE_COMMAND, "description": "look around"})
    if len(results) == 1:
        return tool_use("Bash", {"command": "cat key.b64; cat key.txt", "description": "show"})
    half = len(FAKE_KEY) // 2
    encoded = base64.b64encode(FAKE_KEY.encode()).decode()
    return text(
        f"Paris. first={FAKE_KEY[:half]} second={FAKE_KEY[half:]} b64={encoded} hex={FAKE_KEY.encode().hex()}"
    )


def write_config(tmp_path: Path, api: FakeAnthropic) -> Path:
    data = tmp_path / "items.jsonl"
    data.write_text(
        json.dumps({"id": "q1", "question": "What is the capital of France?", "answers": ["Paris"]}) + "\n",
        encoding="utf-8",
    )
    lines = [
        "benchmark:", "  name: qa", f"  data: {data}", "  train_size: 0", "  val_size: 1", "  test_size: 0",
        "model:", "  target_backend: claude_code_exec", "  optimizer_backend: claude_code_exec",
        f"  base_url: {api.base_url}", f"  api_key: {FAKE_KEY}", "  target_model: claude-sonnet-4-5",
        "  claude_code_timeout_s: 120", "  timeout_s: 120",
        "cache:", f"  dir: {tmp_path / 'cache'}",
    ]  # fmt: skip
    path = tmp_path / "config.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp_path / "skill.md").write_text("Answer briefly.\n", encoding="utf-8")
    return path


def assert_no_leak(folder: Path) -> int:
    """No file under `folder` holds the key in any form, base64 cache payloads decoded too."""
    checked = 0
    for path in folder.rglob("*"):
        if not path.is_file() or path.is_symlink():
            continue
        bodies = [path.read_bytes().decode("utf-8", "replace")]
        if path.suffix == ".json" and "payload" in bodies[0]:
            files = (json.loads(bodies[0])["payload"].get("files")) or {}
            bodies += [base64.b64decode(v).decode("utf-8", "replace") for v in files.values()]
        for body in bodies:
            for form in leaked_forms(FAKE_KEY):
                assert form not in body, f"{path} leaks {form!r}"
        checked += 1
    return checked


@pytest.mark.slow
def test_claude_code_agent_cannot_leak_key_through_workspace_cache_or_encodings(tmp_path: Path) -> None:
    with FakeAnthropic(hostile_turn) as api:
        config = write_config(tmp_path, api)
        runs = []
        for name in ("live", "replay"):  # the second run is answered from the (redacted) cache
            out = tmp_path / name
            cmd = [sys.executable, "-m", "skillgrad.cli", "eval", "--config", str(config)]
            cmd += ["--skill", str(tmp_path / "skill.md"), "--split", "val", "--out", str(out)]
            runs.append(subprocess.run(cmd, capture_output=True, text=True, timeout=240))
        served = len(api.message_requests)
    for proc in runs:
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert FAKE_KEY not in proc.stdout + proc.stderr
    assert served == 3  # the replay paid nothing: it came from the cache
    workspaces = list((tmp_path / "live").rglob("workspace"))
    assert workspaces and (workspaces[0] / "env_dump.txt").is_file()  # the agent did dump env
    dump = (workspaces[0] / "env_dump.txt").read_text(encoding="utf-8")
    assert f"ANTHROPIC_API_KEY={REDACTED}" in dump
    answers = list((tmp_path / "replay").rglob("answer.txt"))
    assert answers and "Paris" in answers[0].read_text(encoding="utf-8")
    assert (next((tmp_path / "replay").rglob("workspace")) / "env_dump.txt").is_file()  # restored
    for folder in ("live", "replay", "cache"):
        assert assert_no_leak(tmp_path / folder) > 0


def test_encodings_and_pieces_of_a_key_are_redacted() -> None:
    red = Redactor([FAKE_KEY])
    env_text = f"PATH=/bin\nANTHROPIC_API_KEY={FAKE_KEY}\nHOME=/root\n".encode()
    for prefix in (b"", b"x", b"xy"):  # every base64 alignment of the key inside a longer stream
        for encoded in (base64.b64encode(prefix + env_text), base64.encodebytes(prefix + env_text)):
            out = red.redact(encoded.decode())
            assert REDACTED in out
            for form in leaked_forms(FAKE_KEY)[1:3]:
                assert form not in out
        urlsafe = base64.urlsafe_b64encode(prefix + env_text).decode()
        assert REDACTED in red.redact(urlsafe)
    third = len(FAKE_KEY) // 3
    split = f"a={FAKE_KEY[:third]} b={FAKE_KEY[third : 2 * third]} c={FAKE_KEY[2 * third :]}"
    assert red.redact(split) == f"a={REDACTED} b={REDACTED} c={REDACTED}"
    assert red.redact(FAKE_KEY.encode().hex().upper()) == REDACTED
    assert red.redact_bytes(b"\xff\xfe" + FAKE_KEY.encode()) == b"\xff\xfe" + REDACTED.encode()
    assert red.redact("plain text stays, as do short pieces like sk-ant-H") == (
        "plain text stays, as do short pieces like sk-ant-H"
    )


def test_url_credentials_are_redacted_in_config_json_and_mlflow(tmp_path: Path) -> None:
    from skillgrad.config import Config
    from skillgrad.observe.tracking import flatten

    url = f"http://bob:{URL_PASSWORD}@127.0.0.1:9/v1"
    cfg = Config.model_validate({"model": {"base_url": url}})
    red = Redactor.from_config(cfg, {"HTTPS_PROXY": "http://proxy-user:proxy-pass-123@10.0.0.1:3128"})
    dumped = json.dumps(red.redact_json(cfg.to_json()))
    assert URL_PASSWORD not in dumped and "bob" not in dumped
    assert f"http://{REDACTED}@127.0.0.1:9/v1" in dumped
    assert (
        red.redact(f"error from {URL_PASSWORD} at proxy-pass-123") == f"error from {REDACTED} at {REDACTED}"
    )
    assert URL_PASSWORD not in json.dumps(red.redact_json(flatten(cfg.to_json())))
    # and through the real CLI: `skillgrad config` prints the resolved config
    (tmp_path / "c.yaml").write_text(f"model:\n  base_url: {url}\n", encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "skillgrad.cli", "config", "--config", str(tmp_path / "c.yaml")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "127.0.0.1:9" in proc.stdout and URL_PASSWORD not in proc.stdout + proc.stderr
