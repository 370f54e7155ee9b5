"""The call cache keys a call on what is actually sent (issue 37, item 3).

The walk changes every key of the config model and every prompt template of the package, one at
a time, under every backend, and asserts that the change alters a key (`skillgrad.cache.keys`) or
is declared in `UNKEYED`, never both: a key or template added later cannot escape it. The other
tests show the class through the public API: what a stale entry would have answered is asked again.
"""

from __future__ import annotations

import fnmatch
import os
import typing
from pathlib import Path
from string import Template
from typing import Any

import pytest
from pydantic import BaseModel, SecretStr

import skillgrad
import skillgrad.templates as templates
from skillgrad.activation.agents import activation_settings
from skillgrad.activation.distractors import load_distractors
from skillgrad.backend_specs import BACKENDS
from skillgrad.backends.reading import ReadingBounds
from skillgrad.cache import CachedAgent, CallCache
from skillgrad.cache.keys import UNKEYED, chat_settings, rollout_settings
from skillgrad.config import Config
from skillgrad.values import AgentResult, Task
from tests.fakes.openai_server import Request, ScriptedOpenAI, text

PACKAGE = Path(skillgrad.__file__).resolve().parent
TEMPLATE_FILES = sorted(p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("prompts/*.md"))


def fake_gguf(path: Path, size: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"GGUF" + b"\0" * size)
    return path


def fake_cli(path: Path, version: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\necho '{version}'\n", encoding="utf-8")
    path.chmod(0o755)
    return path


class World:
    """Two of each thing a key must tell apart: model files of one name, CLIs of two versions."""

    def __init__(self, root: Path) -> None:
        self.gguf = [fake_gguf(root / "a" / "model.gguf", 8), fake_gguf(root / "b" / "model.gguf", 16)]
        self.claude = [
            fake_cli(root / "claude-a", "2.1.1 (Claude Code)"),
            fake_cli(root / "claude-b", "2.1.2"),
        ]
        self.codex = [fake_cli(root / "codex-a", "codex-cli 0.169.0"), fake_cli(root / "codex-b", "0.170.0")]
        skill = root / "distractors" / "team-notes"
        skill.mkdir(parents=True)
        (skill / "SKILL.md").write_text("---\nname: team-notes\ndescription: Notes.\n---\nRead them.\n")
        self.distractors = skill.parent
        self.root = root

    def base(self, backend: str) -> Config:
        cfg = Config.model_validate(
            {
                "model": {
                    "backend": backend,
                    "optimizer_backend": backend,
                    "target_backend": backend,
                    "local_model": str(self.gguf[0]),
                    "claude_code_cli_path": str(self.claude[0]),
                    "codex_cli_path": str(self.codex[0]),
                }
            }
        )
        cfg.base_dir = self.root
        return cfg

    def special(self, key: str, value: Any) -> Any:
        """A valid other value for the keys whose values must exist or follow a pattern."""
        backends = [b for b in BACKENDS if b != value]
        return {
            "model.local_model": str(self.gguf[1]),
            "model.optimizer_model": str(self.gguf[1]),
            "model.target_model": str(self.gguf[1]),
            "model.claude_code_cli_path": str(self.claude[1]),
            "model.codex_cli_path": str(self.codex[1]),
            "model.backend": backends[0],
            "model.optimizer_backend": backends[0],
            "model.target_backend": backends[0],
            "benchmark.distractor_skills": str(self.distractors),
            "benchmark.trigger_split": (0.4, 0.4, 0.2),
            "skill.name": "another-skill",
            "ray.address": "auto" if value != "auto" else "",
        }.get(key, Ellipsis)


def leaves(model: type[BaseModel] = Config, prefix: str = "") -> list[tuple[str, Any]]:
    out = []
    for name, field in model.model_fields.items():
        if field.exclude:
            continue
        kind = field.annotation
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            out += leaves(kind, f"{prefix}{name}.")
        else:
            out.append((f"{prefix}{name}", field))
    return out


def _literal_choices(annotation: Any) -> list[str]:
    """The strings a Literal annotation allows (inside an Optional too)."""
    if typing.get_origin(annotation) is typing.Literal:
        return [a for a in typing.get_args(annotation) if isinstance(a, str)]
    return [c for arg in typing.get_args(annotation) for c in _literal_choices(arg)]


def other_value(key: str, field: Any, value: Any, world: World) -> Any:
    special = world.special(key, value)
    if special is not Ellipsis:
        return special
    literals = _literal_choices(field.annotation)
    if literals and value in [*literals, None]:
        return next((c for c in literals if c != value), Ellipsis)  # one choice: nothing to change
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):  # (bounded above: the one below)
        return value * 2 if value * 2 <= _upper(field, value * 2) else value - 1
    if isinstance(value, float):
        return value / 2 if value else 0.5
    if isinstance(value, str):
        return value + "x"
    if isinstance(value, list):
        return [*value, "Extra"]
    if isinstance(value, dict):
        return {**value, "extra": 1}
    if isinstance(value, SecretStr):
        return SecretStr("sk-other")
    kinds = typing.get_args(field.annotation)  # None: a value of the first type it may take
    for kind, sample in ((int, 512), (float, 1.5), (str, "x"), (SecretStr, SecretStr("sk-x"))):
        if kind in kinds:
            return sample
    if any(typing.get_origin(k) is list for k in kinds):
        return ["pkg"]
    raise AssertionError(f"no other value for {key} ({field.annotation})")


def _upper(field: Any, default: int) -> float:
    return min([m.le for m in field.metadata if hasattr(m, "le") and m.le is not None] or [default])


def changed(cfg: Config, key: str, value: Any) -> Config:
    data = cfg.model_dump()
    section, name = key.split(".")
    data[section][name] = value
    other = Config.model_validate(data)
    other.base_dir = cfg.base_dir
    return other


def bundle(cfg: Config) -> dict[str, Any]:
    """Everything of a config that enters a key of the run's calls."""
    bounds = ReadingBounds(cfg.optimizer.reflection_turns, cfg.optimizer.reflection_timeout_s)
    return {
        "chat": chat_settings(cfg),
        "proposal": chat_settings(cfg, temperature=cfg.optimizer.proposal_temperature),
        "rollout": rollout_settings(cfg),
        "activation": activation_settings(cfg, load_distractors(cfg)),
        "salt": cfg.cache.salt,
        "reflection_turns": bounds.turns,
    }


def declared(name: str) -> list[str]:
    return [pattern for pattern in UNKEYED if fnmatch.fnmatchcase(name, pattern)]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return World(tmp_path_factory.mktemp("keys"))


@pytest.mark.timeout(300)
def test_every_config_key_alters_a_key_or_is_declared_unkeyed(world: World) -> None:
    bases = [world.base(name) for name in BACKENDS]
    before = [bundle(base) for base in bases]
    escaped, keyed_but_declared = [], []
    for key, field in leaves():
        section, name = key.split(".")
        alters = False
        for base, seen in zip(bases, before, strict=True):
            other = other_value(key, field, getattr(getattr(base, section), name), world)
            if other is not Ellipsis and bundle(changed(base, key, other)) != seen:
                alters = True
                break
        if not alters and not declared(key):
            escaped.append(key)
        if alters and declared(key):
            keyed_but_declared.append(f"{key} ({declared(key)})")
    assert not escaped, f"these keys change no cache key: key them or declare them in UNKEYED: {escaped}"
    assert not keyed_but_declared, f"UNKEYED declares keys that do change a key: {keyed_but_declared}"


@pytest.mark.timeout(300)
def test_every_prompt_template_alters_a_key_or_is_declared_unkeyed(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert len(TEMPLATE_FILES) > 30
    bases = [world.base(name) for name in BACKENDS]
    before = [bundle(base) for base in bases]
    original = templates._load
    escaped, keyed_but_declared = [], []
    for path in TEMPLATE_FILES:
        package = "skillgrad." + ".".join(Path(path).parent.parent.parts)
        name = Path(path).stem

        def edited(pkg: str, stem: str, package: str = package, name: str = name) -> Template:
            found = original(pkg, stem)
            is_it = (pkg, stem) == (package, name)
            return Template(found.template + "\nOne more sentence.") if is_it else found

        monkeypatch.setattr(templates, "_load", edited)
        alters = any(bundle(base) != seen for base, seen in zip(bases, before, strict=True))
        monkeypatch.setattr(templates, "_load", original)
        if not alters and not declared(path):
            escaped.append(path)
        if alters and declared(path):
            keyed_but_declared.append(f"{path} ({declared(path)})")
    assert not escaped, f"these templates change no cache key: key them or declare them in UNKEYED: {escaped}"
    assert not keyed_but_declared, f"UNKEYED declares templates that do change a key: {keyed_but_declared}"


def test_every_declaration_still_names_something() -> None:
    """A pattern left over after its key or template went would hide the next one of that name."""
    names = [key for key, _ in leaves()] + TEMPLATE_FILES
    stale = [pattern for pattern in UNKEYED if not any(fnmatch.fnmatchcase(n, pattern) for n in names)]
    assert not stale, f"UNKEYED names nothing that exists: {stale}"


class Answering:
    name, model = "local", "model.gguf"

    def run(self, task: Task, skill: str, workspace: Path) -> AgentResult:
        return AgentResult(answer="42")


def test_two_model_files_of_one_name_and_two_context_sizes_never_share_an_entry(
    world: World, tmp_path: Path
) -> None:
    cache = CallCache(tmp_path / "cache")
    task, workspace = Task("t1", "What is six times seven?"), tmp_path / "ws"
    keys = []
    for cfg in (
        world.base("local"),
        changed(world.base("local"), "model.local_model", str(world.gguf[1])),
        changed(world.base("local"), "model.local_ctx", 8192),
    ):
        agent = CachedAgent(Answering(), cache, settings=rollout_settings(cfg), snapshot_workspace=False)
        keys.append(agent._key(task, "skill", workspace))
    assert len(set(keys)) == 3
    # a file replaced in place (a new download under the same path) is another model too
    os.utime(world.gguf[0], ns=(1, 1))
    settings = rollout_settings(world.base("local"))
    again = CachedAgent(Answering(), cache, settings=settings, snapshot_workspace=False)
    assert again._key(task, "skill", workspace) != keys[0]


FAKE_KEY = "sk-test-FAKE-keys-0123456789abcdef"


def test_a_changed_target_template_is_asked_again_not_replayed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The chat target is sent `chat_target_system.md` around the skill: with it changed, the same
    skill and tasks are new calls (a cache keyed on the raw skill replayed the old answers)."""
    asked: list[str] = []

    def handler(request: Request):
        asked.append(request.system)
        return text("Paris", 10, 2)

    tasks = [Task(id=f"q{i}", question=f"Capital number {i}?", answers=("Paris",)) for i in range(4)]
    with ScriptedOpenAI(handler) as server:
        config = {
            "model": {
                "backend": "openai_chat",
                "base_url": server.base_url,
                "api_key": FAKE_KEY,
                "target_model": "fake-target",
                "optimizer_model": "fake-optimizer",
            },
            "benchmark": {"test_size": 3, "val_size": 1, "train_size": 0},
            "cache": {"dir": str(tmp_path / "cache")},
        }

        def evaluate(name: str) -> None:
            skill = "Answer with the city."
            skillgrad.evaluate(config, skill, benchmark=tasks, scorer="exact", out=tmp_path / name)

        evaluate("first")
        paid = len(asked)
        assert paid >= 3
        evaluate("again")
        assert len(asked) == paid  # the same requests: answered from the cache
        original = templates._load

        def edited(package: str, name: str) -> Template:
            found = original(package, name)
            if (package, name) == ("skillgrad.backends", "chat_target_system"):
                return Template("Follow the house skill.\n<skill>\n$skill\n</skill>\n")
            return found

        monkeypatch.setattr(templates, "_load", edited)
        evaluate("edited")
    assert len(asked) == 2 * paid  # every task asked again, with the new prompt
    assert all(system.startswith("Follow the house skill.") for system in asked[paid:])
