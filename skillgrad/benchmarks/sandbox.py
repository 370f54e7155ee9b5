"""Run untrusted Python (model-written code, agent-edited files) in a limited subprocess.

Limits: a wall-clock timeout (the whole process group is killed), an address-space limit, no core
files, a CPU-time limit, a scrubbed environment (no API keys, no proxy settings), a private temp
working directory chosen by the caller, and no network where the kernel allows an unprivileged
network namespace (`unshare -rn`); where it does not, only the scrubbed environment stands between
the code and the network, which `Sandbox.isolated_network` reports.

The limits are set by a tiny bootstrap inside the child rather than with `preexec_fn`, because
`preexec_fn` is unsafe when rollouts score tasks from several threads at once.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO

_BOOTSTRAP = """\
import resource, runpy, sys
_mem = {memory}
resource.setrlimit(resource.RLIMIT_AS, (_mem, _mem))
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
resource.setrlimit(resource.RLIMIT_CPU, ({cpu}, {cpu}))
sys.argv = {argv!r}
if sys.argv[0] == "-m":
    sys.argv = sys.argv[1:]
    runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
else:
    runpy.run_path(sys.argv[0], run_name="__main__")
"""

_OUTPUT_CAP = 20_000  # characters of stdout/stderr kept (the tail: errors come last)


@dataclass(frozen=True)
class RunResult:
    returncode: int
    stdout: str
    stderr: str
    timed_out: bool

    @property
    def signal_name(self) -> str | None:
        if self.returncode >= 0:
            return None
        try:
            return signal.Signals(-self.returncode).name
        except ValueError:
            return f"signal {-self.returncode}"


def _probe_unshare() -> list[str]:
    exe = shutil.which("unshare")
    if exe is None:
        return []
    try:
        done = subprocess.run([exe, "-rn", "true"], capture_output=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return []
    return [exe, "-rn"] if done.returncode == 0 else []


def _tail(handle: IO[bytes]) -> str:
    handle.seek(0)
    text = handle.read().decode("utf-8", "replace")
    return text[-_OUTPUT_CAP:]


class Sandbox:
    """One per benchmark instance; probes once whether a network namespace is available."""

    def __init__(self, *, timeout_s: float, memory_mb: int) -> None:
        self.timeout_s = timeout_s
        self.memory_mb = memory_mb
        self._prefix = _probe_unshare()

    @property
    def isolated_network(self) -> bool:
        return bool(self._prefix)

    def _env(self, cwd: Path) -> dict[str, str]:
        # Deliberately not inherited: keys and proxies must not reach untrusted code.
        return {
            "PATH": os.defpath,
            "HOME": str(cwd),
            "TMPDIR": str(cwd),
            "LANG": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONHASHSEED": "0",
            "PYTHONIOENCODING": "utf-8",
        }

    def run_python(self, argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> RunResult:
        """Run `python argv...` (argv[0] a script path, or `-m module ...`) in `cwd` under the limits;
        `env` adds variables to the scrubbed environment."""
        memory = self.memory_mb * 1024 * 1024
        cpu = int(self.timeout_s) + 1
        code = _BOOTSTRAP.format(memory=memory, cpu=cpu, argv=argv)
        cmd = [*self._prefix, sys.executable, "-I", "-c", code]
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            proc = subprocess.Popen(
                cmd,
                cwd=cwd,
                env={**self._env(cwd), **(env or {})},
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,  # own process group: a timeout kills every child too
            )
            timed_out = False
            try:
                proc.wait(timeout=self.timeout_s)
            except subprocess.TimeoutExpired:
                timed_out = True
                _kill_group(proc)
            _kill_group(proc)  # leftovers the code may have spawned
            return RunResult(proc.returncode, _tail(out), _tail(err), timed_out)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
