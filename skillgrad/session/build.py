"""Build the run's components from a config: benchmark, roles, run folder, events, ledger.

Everything that can fail on user input (config, data, skill file, backend availability) is
resolved here BEFORE the run folder is created, so bad input never leaves a half-written run.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillgrad.activation.description import check_description
from skillgrad.activation.world import ActivationPlan, input_paths, plan_activation
from skillgrad.backend_specs import spec_for
from skillgrad.backends.interface import Agent, CallMeter, ChatModel
from skillgrad.backends.registry import Backends
from skillgrad.benchmarks.catalog import load_benchmark
from skillgrad.benchmarks.contract import Benchmark
from skillgrad.benchmarks.splits import FIXED_SIZES, MIN_VAL, MOST_SIZES, SHARES, sizes_given
from skillgrad.budget import Ledger, PaidJournal
from skillgrad.cache import CachedAgent, CachedChatModel, CallCache
from skillgrad.cache.keys import chat_settings, rollout_settings
from skillgrad.config import Config
from skillgrad.errors import UserError
from skillgrad.evidence.mode import reads_workspace
from skillgrad.executors.executor import Executor
from skillgrad.executors.threads import ThreadExecutor
from skillgrad.loop.custom_strategies import Custom, UserAgent, cache_identity
from skillgrad.loop.event_bus import Events, Observer
from skillgrad.loop.trainer import Roles
from skillgrad.observe.progress import LogFileObserver
from skillgrad.observe.tracking import make_tracking_observer
from skillgrad.package.folder import load_package
from skillgrad.package.model import is_package
from skillgrad.package.wiring import check_initial_package
from skillgrad.redact import Redactor
from skillgrad.run_folder import RunDir, RunFiles
from skillgrad.session.paths import check_input
from skillgrad.values import SPLITS, Split


def read_skill(path: Path, name: str = "skill.init") -> str:
    """A skill file's markdown, or a skill folder as its package text (see skillgrad.package);
    `name` is how the user gave the path (skill.init, --skill), for the error."""
    check_input(name, path)
    if path.is_dir():
        return load_package(path).encode()
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: skill file is not UTF-8 (byte {exc.start}); save it as UTF-8") from None
    except OSError as exc:
        raise UserError(f"{name} {path}: cannot read the skill ({exc.strerror}); check the file") from None
    if is_package(text):
        raise UserError(f"{path}: begins with skillgrad's package header; pass the skill's folder instead")
    return text


def initial_skill(cfg: Config) -> str:
    if not cfg.skill.init:
        return ""
    path = cfg.resolve_path(cfg.skill.init)
    text = read_skill(path)
    check_initial_package(cfg, path, text)
    check_description(cfg, path, text)
    return text


def checked_benchmark(cfg: Config, splits: tuple[Split, ...]) -> Benchmark:
    """Load the benchmark (its sizes settled) and every needed split now, so data errors surface
    before any work."""
    benchmark = load_benchmark(cfg)
    settle_sizes(cfg, benchmark)
    check_splits(benchmark, cfg, splits)
    return benchmark


def settle_sizes(cfg: Config, benchmark: Benchmark | None) -> str | None:
    """With no split size given, set the three in `cfg` to those the benchmark cuts its data to
    (`planned_sizes`: sizes that adapt to the data, splits.py), so the run's config.json and every
    later reader see numbers; the line that says so, or None. A benchmark that generates or splits
    its own tasks gets the fixed sizes (train 40, val 20, no test) and no line."""
    b = cfg.benchmark
    if benchmark is None or sizes_given(b):
        return None
    planned = getattr(benchmark, "planned_sizes", None)
    sizes, n = planned() if callable(planned) else (FIXED_SIZES, None)
    b.train_size, b.val_size, b.test_size = sizes["train"], sizes["val"], sizes["test"]
    if n is None:
        return None
    return (
        f"splits: {sizes['train']} train, {sizes['val']} val, {sizes['test']} test of the {n} tasks "
        f"(no sizes given: {SHARES}, val at least {MIN_VAL}, each at most {MOST_SIZES['train']}/"
        f"{MOST_SIZES['val']}/{MOST_SIZES['test']}; set benchmark.train_size, val_size, test_size to choose)"
    )


def check_splits(benchmark: Benchmark, cfg: Config, splits: tuple[str, ...]) -> None:
    """Every split a command needs loads (UserError naming the file otherwise) and is not empty."""
    for split in splits:
        if split not in SPLITS:
            raise UserError(f"--split {split!r}: allowed values: {', '.join(SPLITS)}")
        if not benchmark.load(split):
            raise UserError(
                f"benchmark '{cfg.benchmark.name}': the {split} split is empty; "
                f"set benchmark.{split}_size to at least 1"
            )


DEFAULT_CACHE_DIR = Path("~/.cache/skillgrad/calls")


def redactor_for(cfg: Config) -> Redactor:
    """Every secret of this config and of the environment, hidden by value wherever it appears."""
    return Redactor.from_config(cfg, os.environ)


def call_cache(cfg: Config, redactor: Redactor, enabled: bool = True) -> CallCache:
    """The shared call cache; what it stores is redacted too, as it outlives the run."""
    root = cfg.resolve_path(cfg.cache.dir) if cfg.cache.dir else DEFAULT_CACHE_DIR.expanduser()
    return CallCache(root, enabled=enabled and cfg.cache.enabled, redact=redactor.redact_json)


def proposal_samplers(cfg: Config, backends: Backends, chat: CachedChatModel) -> list[ChatModel]:
    """The optimizer at optimizer.proposal_temperature, once per extra proposal of a minibatch;
    each has its own cache salt, so the samples are cached apart instead of answering as one."""
    extra = cfg.optimizer.proposals_per_minibatch - 1
    if extra < 1:
        return []
    hot = cfg.optimizer.proposal_temperature
    inner = backends.chat("optimizer", temperature=hot)
    sampling = chat_settings(cfg, "optimizer", temperature=hot)
    salts = [f"{cfg.cache.salt}|proposal {k}" for k in range(1, extra + 1)]
    return [
        CachedChatModel(inner, chat.cache, salt=s, sampling=sampling, stats=chat.stats, on_paid=chat.on_paid)
        for s in salts
    ]


def checked_activation(cfg: Config, benchmark: Benchmark | None) -> ActivationPlan | None:
    """The run's trigger splits and distractors (optimizer.target description | both; None for
    body), the paths they come from checked first as every path argument is (UserError)."""
    for key, path, folder in input_paths(cfg):
        check_input(key, path, folder_ok=folder, file_ok=not folder)
    return plan_activation(cfg, benchmark)


def cached_target(
    cfg: Config,
    cache: CallCache,
    redactor: Redactor,
    journal: PaidJournal | None,
    inner: Agent,
    settings: dict[str, Any],
) -> CachedAgent:
    """The target `inner` behind the call cache, `settings` in its key, each paid run journaled."""
    return CachedAgent(
        inner,
        cache,
        salt=cfg.cache.salt,
        settings=settings,
        snapshot_workspace=spec_for(cfg.model.backend_for("target")).harness,
        redact_file=redactor.redact_bytes,
        on_paid=(lambda usage: journal.add("target", None, usage)) if journal else None,
    )


def object_target(
    cfg: Config, cache: CallCache, redactor: Redactor, journal: PaidJournal | None, custom: Custom
) -> CachedAgent:
    """An Agent object the caller handed in (`agent=`), as the target: in this process, each paid
    run journaled, behind the call cache only when it names a `cache_identity` (nothing else says
    what shapes its answers: its code, its model, its settings); else every run is paid."""
    assert custom.agent is not None
    name = custom.labels["agent"]
    identity = cache_identity(custom.agent)
    store = cache if identity is not None else CallCache(cache.root, enabled=False)
    return CachedAgent(
        UserAgent(custom.agent, name),
        store,
        salt=cfg.cache.salt,
        settings={"agent": name, "cache_identity": identity},
        snapshot_workspace=True,
        redact_file=redactor.redact_bytes,
        on_paid=(lambda usage: journal.add("target", None, usage)) if journal else None,
    )


def build_roles(
    cfg: Config,
    cache: CallCache,
    redactor: Redactor,
    *,
    optimizer: bool = True,
    judge: bool = False,
    journal: PaidJournal | None = None,
    meter: CallMeter | None = None,
    executor: Executor | None = None,
    activation: Callable[[Agent], tuple[Agent, dict[str, Any]]] | None = None,
    custom: Custom | None = None,
) -> Roles:
    """Both roles, wrapped in the call cache; everything that shapes a reply is in its key
    (`skillgrad.cache.keys`). Each paid call goes to `journal` as it returns (usage across
    crashes, see skillgrad.budget), and every retry of a chat model is reserved through `meter`,
    the run's ledger, before it is sent. A
    judge (for a JudgedBenchmark) is the optimizer role's backend, cached the same way. The
    target runs where `executor` puts it; the cache around it stays in the driver. `activation`
    makes the same target into the one that measures when the skill is loaded (with what else
    shapes its runs): `Roles.trigger_agent` (skillgrad.activation). An Agent object of `custom`
    is the target instead of the configured backend's (`object_target`), run as a harness's
    (its own workspace, its trace steps kept) under its label."""
    backends = Backends(cfg, meter)
    target = spec_for(cfg.model.backend_for("target"))
    chat, samplers = None, []
    if optimizer or judge:
        chat = CachedChatModel(
            backends.chat("optimizer"),
            cache,
            salt=cfg.cache.salt,
            sampling=chat_settings(cfg),
            on_paid=(lambda stage, usage: journal.add("optimizer", stage, usage)) if journal else None,
        )
        samplers = proposal_samplers(cfg, backends, chat)
        if optimizer:
            reads_workspace(cfg, chat)  # optimizer.reflection refused now, before any folder exists
    chats = (chat if optimizer else None, chat if judge else None, samplers if optimizer else [])
    if custom is not None and custom.agent is not None:  # the caller's: no backend is built for it
        agent = object_target(cfg, cache, redactor, journal, custom)
        return Roles(chats[0], agent, True, agent.name, judge=chats[1], samplers=chats[2],
                     agent_label=custom.labels["agent"])  # fmt: skip
    cached = functools.partial(cached_target, cfg, cache, redactor, journal)
    raw = backends.agent()  # built first: a local model file is in place before it is keyed
    settings = rollout_settings(cfg)
    agent = cached((executor or ThreadExecutor()).agent(raw), settings)
    trigger_agent = None
    if activation is not None:  # in the driver: an executor's workers build the plain target
        adapted, shaping = activation(raw)
        trigger_agent = cached(adapted, {**settings, **shaping})
    return Roles(
        chats[0],
        agent,
        target.harness,
        target.trace_name,
        target.trace_file,
        judge=chats[1],
        samplers=chats[2],
        trigger_agent=trigger_agent,
    )


def default_out(cfg: Config, kind: str) -> Path:
    return Path("runs") / f"{time.strftime('%Y%m%d-%H%M%S')}-{kind}-{cfg.benchmark.name.replace(':', '_')}"


@dataclass
class Session:
    run: RunDir
    events: Events
    ledger: Ledger


def open_session(
    cfg: Config,
    out: Path,
    redactor: Redactor,
    observers: Sequence[Observer] = (),
    *,
    resume: bool = False,
    journal: PaidJournal | None = None,
    ledger: Ledger | None = None,
) -> Session:
    """The run folder, created, and the run's events: to `observers`, to `<out>/train.log` and to
    MLflow when `tracking.mlflow` is on; `ledger` (the one the roles are metered by) or a new one."""
    tracker = make_tracking_observer(cfg, out, redactor)  # may refuse (no mlflow): before anything is written
    run = RunDir(out, redactor)
    run.create(allow_existing=resume)
    kept: list[Observer] = [*observers, LogFileObserver(out / RunFiles.LOG)]
    if tracker is not None:
        kept.append(tracker)
    return Session(run, Events(kept), ledger or Ledger(cfg.budget, journal))
