"""Run untrusted Python (model-written code, agent-edited files) in a limited subprocess.

Limits: a wall-clock timeout, an address-space limit, no core files, a CPU-time limit, a scrubbed
environment (no API keys, no proxy settings) and a private writable working directory chosen by the
caller. Where the kernel allows unprivileged namespaces (`unshare`), the code also runs:
- without network (a new network namespace);
- in its own PID namespace with a fresh /proc: it sees no other process (not the trainer's command
  line, not its environment), and every process it starts, `setsid` daemons included, is killed when
  the run ends (the kernel kills a PID namespace with its first process);
- with the whole file system read-only except its working directory, and the user's home hidden;
- with every capability dropped (`setpriv`), so it cannot undo any of that by remounting.
`Sandbox.isolation` says which level the machine gave: "full", "network" (only `unshare -rn`), or
"none" (only the scrubbed environment and the process group kill).

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
sys.path[:0] = {path!r}
if sys.argv[0] == "-m":
    sys.argv = sys.argv[1:]
    runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
else:
    runpy.run_path(sys.argv[0], run_name="__main__")
"""

REPORT_FD_ENV = "SKILLGRAD_REPORT_FD"
_OUTPUT_CAP = 20_000  # characters of stdout/stderr kept (the tail: errors come last)
_REPORT_CAP = 1_000_000  # bytes of the report kept (the head: what trusted code wrote first)


@dataclass(frozen=True)
class RunResult:
    returncode: int
    stdout: str
    stderr: str
    timed_out: bool
    report: str = ""  # what the run wrote to its private report file (see `run_python`)

    @property
    def signal_name(self) -> str | None:
        if self.returncode >= 0:
            return None
        try:
            return signal.Signals(-self.returncode).name
        except ValueError:
            return f"signal {-self.returncode}"


# Runs as root of the new user namespace: $1 the writable folder, then the paths to hide up to a
# "--", then the command. Every mount becomes read-only but $1; capabilities go before the command.
_CONTAIN = """\
set -e
mount --bind "$1" "$1"
for m in $(awk '{print $5}' /proc/self/mountinfo | sort -u); do
  mount -o remount,bind,ro "$m" 2>/dev/null || true
done
mount -o remount,bind,rw "$1"
cd "$1"  # re-enter: the working directory was taken before the writable mount covered it
shift
while [ "$1" != "--" ]; do
  # a path that vanished meanwhile (a lock file) needs no hiding; any other failure stops the run
  if [ -d "$1" ]; then mount -t tmpfs -o ro,size=4k hidden "$1" || [ ! -e "$1" ]
  elif [ -e "$1" ]; then mount --bind /dev/null "$1" || [ ! -e "$1" ]; fi
  shift
done
shift
# Not exec: this shell stays the namespace's init, so the code is an ordinary process that signals
# can kill; its death by signal N comes back as exit status 128+N.
"$@" || exit $?
"""
_DROP_CAPS = (
    "--bounding-set=-all",
    "--inh-caps=-all",
    "--securebits=+noroot,+noroot_locked,+no_setuid_fixup,+no_setuid_fixup_locked,+keep_caps_locked",
)


def _works(cmd: list[str], cwd: str) -> bool:
    try:
        done = subprocess.run(cmd, capture_output=True, timeout=10, check=False, cwd=cwd)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def _tail(handle: IO[bytes]) -> str:
    handle.seek(0)
    text = handle.read().decode("utf-8", "replace")
    return text[-_OUTPUT_CAP:]


def _head(handle: IO[bytes]) -> str:
    handle.seek(0)
    return handle.read(_REPORT_CAP).decode("utf-8", "replace")


class _Isolation:
    """The strongest containment this machine allows, probed once per Sandbox."""

    def __init__(self) -> None:
        unshare, setpriv, sh = shutil.which("unshare"), shutil.which("setpriv"), shutil.which("sh")
        self.level = "none"
        self._unshare = unshare or ""
        self._setpriv = setpriv or ""
        self._sh = sh or ""
        if not unshare:
            return
        with tempfile.TemporaryDirectory(prefix="skillgrad-probe-") as probe:
            if setpriv and sh and _works(self.command(probe, [], ["true"], level="full"), probe):
                self.level = "full"
            elif _works([unshare, "-rn", "true"], probe):
                self.level = "network"

    def command(self, cwd: str, hide: list[str], cmd: list[str], *, level: str | None = None) -> list[str]:
        level = level or self.level
        if level == "full":
            namespaces = [self._unshare, "-r", "-n", "-p", "-m", "--fork", "--mount-proc", "--kill-child"]
            script = [self._sh, "-c", _CONTAIN, "sh", cwd, *hide, "--"]
            return [*namespaces, *script, self._setpriv, *_DROP_CAPS, *cmd]
        if level == "network":
            return [self._unshare, "-rn", *cmd]
        return cmd


def _hidden_paths(cwd: Path) -> list[str]:
    """What in the user's home the code must not read (keys, CLI logins, ~/.cache/skillgrad): every
    entry of it except those holding the Python that runs the code, its import path (skillgrad
    itself included) or the work folder."""
    home = Path.home()
    # Python, its libraries and ours (an editable install may live in the home), and the folder.
    needed: list[str | Path] = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.executable, cwd]
    needed.append(Path(__file__).parent)
    if not home.is_dir() or home.resolve() == Path("/"):
        return []
    # (the home itself on the import path, as when run from there, must not unhide all of it)
    keep = {Path(p).resolve() for p in [*needed, *(e for e in sys.path if e)]} - {home.resolve()}
    hidden = []
    for entry in sorted(home.iterdir()):
        real = entry.resolve()
        if entry.is_symlink() or any(k.is_relative_to(real) for k in keep):
            continue
        hidden.append(str(entry))
    return hidden


class Sandbox:
    """One per benchmark instance; probes once whether a network namespace is available."""

    def __init__(self, *, timeout_s: float, memory_mb: int) -> None:
        self.timeout_s = timeout_s
        self.memory_mb = memory_mb
        self._isolation = _Isolation()

    @property
    def isolation(self) -> str:
        return self._isolation.level

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

    def run_python(
        self,
        argv: list[str],
        cwd: Path,
        env: dict[str, str] | None = None,
        *,
        path: tuple[str, ...] = (),
        stdin: bytes = b"",
    ) -> RunResult:
        """Run `python argv...` (argv[0] a script path, or `-m module ...`) in `cwd` under the limits.
        `env` adds variables to the scrubbed environment; `path` is prepended to `sys.path`.
        `stdin` is readable once (a pipe: nothing can reread it later), and a private report file
        is open on the descriptor named by `REPORT_FD_ENV` (an unlinked file, reachable by no path);
        whatever was written to it comes back as `RunResult.report`. Trusted code that runs first
        (a judge, a test plugin) can thus take a secret and write a result the rest cannot forge."""
        memory = self.memory_mb * 1024 * 1024
        cpu = int(self.timeout_s) + 1
        code = _BOOTSTRAP.format(memory=memory, cpu=cpu, argv=argv, path=list(path))
        cmd = self._isolation.command(str(cwd), _hidden_paths(cwd), [sys.executable, "-I", "-c", code])
        read_end, write_end = os.pipe()
        try:
            os.write(write_end, stdin[:60_000])  # fits the pipe buffer: never blocks
        finally:
            os.close(write_end)
        with (
            tempfile.TemporaryFile() as out,
            tempfile.TemporaryFile() as err,
            tempfile.TemporaryFile() as rep,
        ):
            try:
                proc = subprocess.Popen(
                    cmd,
                    cwd=cwd,
                    env={**self._env(cwd), **(env or {}), REPORT_FD_ENV: str(rep.fileno())},
                    stdin=read_end,
                    stdout=out,
                    stderr=err,
                    pass_fds=(rep.fileno(),),
                    start_new_session=True,  # own process group: a timeout kills every child too
                )
            finally:
                os.close(read_end)
            timed_out = False
            try:
                proc.wait(timeout=self.timeout_s)
            except subprocess.TimeoutExpired:
                timed_out = True
                _kill_group(proc)
            _kill_group(proc)  # leftovers the code may have spawned
            status = proc.returncode
            if self.isolation == "full" and 128 < status < 128 + 65:  # killed by a signal, per the init
                status = 128 - status
            return RunResult(status, _tail(out), _tail(err), timed_out, _head(rep))


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
