"""A backend registered with one `BackendSpec` line is offered by `skillgrad backends`, accepted
by the config and the role flags, counted by the estimate, loaded through its protocol, and its
traces reach the analyst by the same decision the trainer makes. Every shipped backend module
implements the protocol its spec names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skillgrad import backend_specs
from skillgrad.backend_specs import BACKENDS, BackendSpec, spec_for
from skillgrad.backends.interface import ChatBackend, HarnessBackend
from skillgrad.backends.registry import Backends, load_backend
from skillgrad.cli import main
from skillgrad.config import ModelConfig, load_config
from skillgrad.errors import UserError
from skillgrad.values import Task

NOTES = BackendSpec(
    "notes_harness",
    "tests.fakes.notes_backend",
    ("optimizer", "target"),
    True,
    "",
    trace_name="Notes",
    trace_file="notes_trace_steps.txt",
    turns_per_task=3,
    cache_keys=(("skill_name", "skill.name"), ("turn_cap", "model.codex_max_turns")),
)


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> BackendSpec:
    monkeypatch.setitem(BACKENDS, NOTES.name, NOTES)
    return NOTES


def qa_config(tmp_path: Path) -> Path:
    rows = [{"id": f"q{i}", "question": f"what is {i}?", "answers": [str(i)]} for i in range(6)]
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    config = tmp_path / "config.yaml"
    config.write_text(
        "benchmark:\n  name: qa\n  data: items.jsonl\n  train_size: 4\n  val_size: 2\n"
        "train:\n  epochs: 1\n  batch_size: 4\n  minibatch_size: 4\n",
        encoding="utf-8",
    )
    return config


def test_offered_by_skillgrad_backends(registered: BackendSpec, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["backends"]) == 0
    line = next(row for row in capsys.readouterr().out.splitlines() if row.startswith("notes_harness"))
    assert "agent harness" in line and "usable (writes notes)" in line and "optimizer, target" in line


def test_accepted_by_the_config_and_the_role_flags(registered: BackendSpec, tmp_path: Path) -> None:
    cfg = load_config(qa_config(tmp_path), ["model.target_backend=notes_harness"])
    assert cfg.model.target_backend == "notes_harness" and cfg.model.optimizer_backend == "local"
    cfg = load_config(None, backend="notes_harness")
    assert cfg.model.backend == cfg.model.optimizer_backend == "notes_harness"
    with pytest.raises(UserError, match="'notes_harness'"):  # the listed names come from the registry
        load_config(None, ["model.backend=nope"])


def test_unregistered_it_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="unknown backend"):
        load_config(None, backend="notes_harness")
    with pytest.raises(UserError, match="model.backend: 'notes_harness' is not allowed"):
        load_config(None, ["model.backend=notes_harness"])


def test_counted_by_the_estimate(
    registered: BackendSpec, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = str(qa_config(tmp_path))
    estimate = ["--estimate", "--json"]
    assert main(["train", "--config", config, "--target-backend", "notes_harness", *estimate]) == 0
    harness = json.loads(capsys.readouterr().out)
    assert main(["train", "--config", config, "--target-backend", "local", *estimate]) == 0
    plain = json.loads(capsys.readouterr().out)
    assert harness["assumptions"]["agent_turns"] == 3 and plain["assumptions"]["agent_turns"] == 1
    rollout, baseline = harness["by_stage"], plain["by_stage"]
    assert rollout["baseline"]["input_tokens"] == 3 * baseline["baseline"]["input_tokens"]
    # a harness's traces go to the analyst: its prompt carries the trace views
    assert rollout["reflect"]["input_tokens"] > baseline["reflect"]["input_tokens"]


def test_loaded_through_its_protocol_and_run(registered: BackendSpec, tmp_path: Path) -> None:
    cfg = load_config(None, backend="notes_harness")
    backends = Backends(cfg)
    agent = backends.agent()
    result = agent.run(Task("t1", "write it", answers=("42",)), "# skill", tmp_path / "ws")
    assert result.answer == "42" and [s.kind for s in result.trace] == ["tool_call", "tool_result", "text"]
    assert (tmp_path / "ws" / "notes.md").read_text(encoding="utf-8") == "# skill\nwrite it\n"
    assert agent.state.sessions == 1  # type: ignore[attr-defined]
    chat = backends.chat("optimizer")
    assert chat.state is agent.state  # type: ignore[attr-defined]  # one run state for both roles
    assert cfg.model.analyst_sees_traces()
    assert NOTES.cache_settings(cfg) == {"skill_name": cfg.skill.name, "turn_cap": cfg.model.codex_max_turns}


def test_a_module_missing_its_protocol_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    broken = BackendSpec("broken", "tests.fakes.openai_server", ("optimizer",), False, "")
    monkeypatch.setitem(BACKENDS, "broken", broken)
    with pytest.raises(TypeError, match="does not implement ChatBackend .missing: availability"):
        load_backend(broken)


@pytest.mark.parametrize("name", list(backend_specs.BACKENDS))
def test_every_shipped_backend_implements_its_protocol(name: str) -> None:
    spec = spec_for(name)
    module = load_backend(spec)
    assert isinstance(module, HarnessBackend if spec.harness else ChatBackend)
    model_fields = ModelConfig.model_fields
    assert spec.trace_switch is None or spec.trace_switch in model_fields
    assert spec.cache_settings(load_config(None)).keys() == {key for key, _ in spec.cache_keys}
