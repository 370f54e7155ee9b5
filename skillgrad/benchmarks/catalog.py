"""Benchmark name -> module, in one place. Modules are imported lazily (only the one asked for),
so a benchmark's optional dependencies never load for another.

Every built-in module exposes `create(cfg: Config) -> Benchmark`. `benchmark.name` may also be a
`module:function` factory with the same signature (a module next to the config file is found too).
A benchmark handed to `skillgrad.train` as a Python object is recorded as `python:<its name>`: a
run folder says where its tasks came from, and a resume from the command line says to pass it again.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

from skillgrad.benchmarks.contract import Benchmark
from skillgrad.config import Config
from skillgrad.errors import UserError

BUILTINS: dict[str, str] = {
    "qa": "skillgrad.benchmarks.qa",
    "searchqa": "skillgrad.benchmarks.searchqa",
    "gsm8k": "skillgrad.benchmarks.gsm8k",
    "bbh": "skillgrad.benchmarks.bbh",
    "humaneval": "skillgrad.benchmarks.humaneval",
    "coding_tasks": "skillgrad.benchmarks.coding_tasks",
    "custom": "skillgrad.benchmarks.custom",
    "housestyle": "skillgrad.benchmarks.housestyle",
    "housefacts": "skillgrad.benchmarks.housefacts",
    "harvested": "skillgrad.benchmarks.harvested",
    "housecli": "skillgrad.benchmarks.housecli",
}


IN_PYTHON = "python:"  # benchmark.name of a benchmark given to the API as an object or a task list


def benchmark_names() -> tuple[str, ...]:
    return tuple(BUILTINS)


def import_object(spec: str, key: str, base_dir: Path | None = None) -> Any:
    """Resolve `package.module:attr`. `key` names the config key in errors. `base_dir` (the config's
    folder) is tried as an import root when the module is not importable otherwise."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise UserError(f"{key} {spec!r}: expected 'module:function', e.g. mypkg.bench:create")
    try:
        module = _import_module(module_name, base_dir)
    except ModuleNotFoundError as exc:
        raise UserError(
            f"{key} {spec!r}: module '{exc.name}' not found; check the name or install it"
        ) from None
    except Exception as exc:  # the user's module failed while importing: show why, one line
        raise UserError(
            f"{key} {spec!r}: importing '{module_name}' failed ({type(exc).__name__}: {exc})"
        ) from None
    try:
        return getattr(module, attr)
    except AttributeError:
        raise UserError(f"{key} {spec!r}: module '{module_name}' has no attribute '{attr}'") from None


def _import_module(name: str, base_dir: Path | None) -> Any:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if base_dir is None or exc.name != name.split(".")[0]:
            raise
    # Temporarily, so the import path does not leak into the rest of the process.
    sys.path.insert(0, str(base_dir))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(base_dir))


def load_benchmark(cfg: Config) -> Benchmark:
    """The benchmark named by `cfg.benchmark.name`; UserError for an unknown name or bad data."""
    name = cfg.benchmark.name
    check_benchmark_name(name)
    if name in BUILTINS:
        module = importlib.import_module(BUILTINS[name])
        bench: Benchmark = module.create(cfg)
        return bench
    # a module:function factory
    factory = import_object(name, "benchmark.name", cfg.base_dir)
    if not callable(factory):
        raise UserError(f"benchmark.name {name!r}: not a callable factory; define create(cfg) -> Benchmark")
    bench = factory(cfg)
    check_benchmark_object(bench, f"benchmark.name {name!r}: the factory's result")
    return bench


def check_benchmark_object(bench: object, what: str) -> None:
    """UserError unless `bench` has the Benchmark protocol's `name`, `load` and `score`."""
    missing = [m for m in ("load", "score") if not callable(getattr(bench, m, None))]
    if missing or not isinstance(getattr(bench, "name", None), str):
        lacks = ", ".join(missing) or "name"
        raise UserError(
            f"{what} lacks {lacks} (see the Benchmark protocol, skillgrad/benchmarks/contract.py)"
        )


def check_benchmark_name(name: str) -> None:
    """UserError unless `name` is a built-in benchmark or a `module:function` factory."""
    if name.startswith(IN_PYTHON):
        raise UserError(
            f"benchmark.name {name!r}: this run's benchmark was given in Python, not by name; pass it "
            "again: skillgrad.train(config, benchmark=..., out=RUN, resume=True)"
        )
    if name in BUILTINS or ":" in name:
        return
    allowed = ", ".join(BUILTINS)
    raise UserError(f"benchmark.name {name!r}: unknown benchmark; allowed: {allowed}, or module:function")
