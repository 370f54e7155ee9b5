"""A real local Ray cluster for tests: a head on 127.0.0.1 (loopback only) with token auth, its
worker processes, and the environment a driver needs to join it. Stopped by process group, so it
never touches any other Ray on the machine."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def ray_env(**extra: str) -> dict[str, str]:
    """Environment for `ray start` and for drivers: loopback only, a private auth token."""
    return {
        **os.environ,
        "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",  # Ray's switch for a single-machine, loopback cluster
        "RAY_USAGE_STATS_ENABLED": "0",
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN": os.environ.get("SKILLGRAD_TEST_RAY_TOKEN") or secrets.token_hex(16),
        **extra,
    }


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# A driver that joins the cluster and waits until the head's node is alive with its CPUs: the GCS
# answers before the raylet has registered the node, so an open port alone is not a ready cluster.
_READY = """
import sys, time, ray
ray.init(address=sys.argv[1], log_to_driver=False, logging_level="ERROR")
deadline = time.monotonic() + float(sys.argv[3])
while ray.cluster_resources().get("CPU", 0) < float(sys.argv[2]):
    if time.monotonic() > deadline:
        sys.exit(f"the node has {ray.cluster_resources()} after {sys.argv[3]}s")
    time.sleep(0.2)
ray.shutdown()
"""


def _wait_for(
    address: str, timeout_s: float, proc: subprocess.Popen[bytes], env: dict[str, str], cpus: int
) -> None:
    host, port = address.split(":")
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"ray start exited with {proc.returncode}")
        try:
            socket.create_connection((host, int(port)), timeout=1).close()
            break
        except OSError:
            time.sleep(0.3)  # polling under a deadline: the head is still starting
    else:
        raise TimeoutError(f"no Ray head at {address} after {timeout_s}s")
    left = max(deadline - time.monotonic(), 10.0)
    ready = subprocess.run(
        [sys.executable, "-c", _READY, address, str(cpus), str(left)],
        env=env, capture_output=True, text=True, timeout=left + 30,
    )  # fmt: skip
    if ready.returncode != 0:
        raise TimeoutError(f"the Ray head at {address} is up but not ready: {ready.stderr.strip()[-500:]}")


@contextmanager
def local_ray_cluster(num_cpus: int = 2) -> Iterator[tuple[str, dict[str, str]]]:
    """(address, driver environment) of a fresh head with `num_cpus` CPUs."""
    port = free_port()
    env = ray_env()
    temp = tempfile.mkdtemp(prefix="sgray-", dir="/tmp")  # short: Ray's socket paths are length-limited
    log = open(Path(temp) / "head.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ray.scripts.scripts",
            "start",
            "--head",
            "--block",
            f"--port={port}",
            f"--num-cpus={num_cpus}",
            f"--temp-dir={temp}",
            "--include-dashboard=false",
            "--disable-usage-stats",
        ],  # fmt: skip
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    address = f"127.0.0.1:{port}"
    try:
        _wait_for(address, 60, proc, env, num_cpus)
        yield address, env
    finally:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(proc.pid, sig)
                proc.wait(timeout=5)
                break
            except (ProcessLookupError, subprocess.TimeoutExpired):
                continue
        log.close()
        shutil.rmtree(temp, ignore_errors=True)


def rollout_worker_pids(env: dict[str, str]) -> list[int]:
    """Processes whose title says they are skillgrad's Ray rollout workers, of the cluster whose
    driver environment is `env` only: its private auth token is in their environment, so another
    Ray on the machine (another test session's) is never counted or killed."""
    token = f"RAY_AUTH_TOKEN={env['RAY_AUTH_TOKEN']}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            title = (entry / "cmdline").read_bytes().split(b"\0")[0]
            if title.startswith(b"ray::RolloutWorker") and token in (entry / "environ").read_bytes().split(
                b"\0"
            ):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def rollout_workers_gone(env: dict[str, str], timeout_s: float) -> bool:
    """Whether `env`'s cluster has no rollout worker left within `timeout_s` (a killed driver's
    workers live on until Ray sees the driver is gone)."""
    deadline = time.monotonic() + timeout_s
    while rollout_worker_pids(env):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)  # polling under a deadline: Ray reaps them on its own schedule
    return True
