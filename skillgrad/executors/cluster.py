"""`skillgrad cluster` and the executor line of `skillgrad backends`: is Ray here, is the cluster
of `ray.address` reachable, and what it has (nodes, CPUs, GPUs, memory)."""

from __future__ import annotations

import os
from importlib import metadata
from typing import Any

from skillgrad.config import Config
from skillgrad.errors import UserError


def ray_version() -> str | None:
    try:
        return metadata.version("ray")
    except metadata.PackageNotFoundError:
        return None


def executor_line(cfg: Config) -> str:
    """One line, no network: whether `--executor ray` can work here."""
    version = ray_version()
    if version is None:
        return f"{'executor ray':<18} not usable: Ray is not installed: pip install 'skillgrad[ray]'"
    where = f"cluster {cfg.ray.address!r}" if cfg.ray.address else "a local cluster per run"
    return f"{'executor ray':<18} usable (ray {version}; {where}; check it with `skillgrad cluster`)"


def describe_resources(nodes: list[dict[str, Any]]) -> list[str]:
    alive = [n for n in nodes if n.get("Alive")]
    lines = [
        f"nodes: {len(alive)} alive"
        + (f", {len(nodes) - len(alive)} dead" if len(alive) < len(nodes) else "")
    ]
    for node in alive:
        res = node.get("Resources", {})
        gib = res.get("memory", 0) / 2**30
        lines.append(
            f"  {node.get('NodeManagerAddress', '?')}: {res.get('CPU', 0):g} CPU, "
            f"{res.get('GPU', 0):g} GPU, {gib:.1f} GiB memory"
        )
    total_cpu = sum(n.get("Resources", {}).get("CPU", 0) for n in alive)
    total_gpu = sum(n.get("Resources", {}).get("GPU", 0) for n in alive)
    lines.append(f"total: {total_cpu:g} CPU, {total_gpu:g} GPU")
    return lines


def cluster_report(cfg: Config) -> tuple[bool, list[str]]:
    """(reachable, lines). An empty `ray.address` starts nothing: each run starts its own."""
    if ray_version() is None:
        return False, ["ray: not installed: pip install 'skillgrad[ray]'"]
    if not cfg.ray.address:
        cpus = cfg.ray.local_cpus or os.cpu_count() or 1
        return True, [
            f"ray.address is empty: each run starts a local Ray cluster on this machine ({cpus} CPU); "
            "set ray.address (auto, host:port or ray://host:port) to use a running cluster"
        ]
    from skillgrad.executors.ray_cluster import connect, import_ray

    ray = import_ray()
    try:
        connect(ray, cfg, runtime_env_for_run=False)
    except UserError as exc:
        return False, [f"not reachable: {exc}"]
    try:
        lines = [f"ray cluster at {cfg.ray.address!r}: reachable (ray {ray_version()})"]
        return True, lines + describe_resources(ray.nodes())
    finally:
        ray.shutdown()
