"""Process containment for agent harnesses (the Claude Code CLI): a launcher the SDK runs instead
of the CLI itself.

The launcher starts the CLI in a new PID namespace with a fresh /proc (`unshare`, util-linux):
- every process the agent starts (a `setsid` daemon, a background server) ends with the task: it
  is asked to stop when the CLI ends and killed by the kernel at most 3 s later;
- the agent sees no process but its own: not the trainer's command line, not its environment;
- credential variables of the trainer's environment (an `OPENAI_API_KEY` meant for another role, a
  cloud token) are removed; what the CLI itself needs (its endpoint and key, `CLAUDE_*`) stays.
The network stays (the CLI must reach its API), and so do the files: the agent works in its
workspace with the user's rights, like Claude Code itself; what it writes is scrubbed of secrets
before the run keeps it (see `skillgrad.snapshot.scrub_tree`).

Where the kernel refuses unprivileged namespaces the CLI runs directly (`ContainedCli.contained`
is False) and only the environment scrub applies.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
import weakref
from collections.abc import Mapping
from pathlib import Path

from skillgrad.redact import is_credential_env

_NAMESPACES = ("--map-current-user", "--pid", "--mount", "--fork", "--mount-proc", "--kill-child")
_KEEP_PREFIXES = ("ANTHROPIC_", "CLAUDE_")
_GRACE_TENTHS = 30
# The namespace's first process: runs the CLI; when it ends, asks every process left to stop
# (SIGTERM: a shell still updating shared state, e.g. `pyenv rehash` from a login profile, runs
# its cleanup traps) and waits up to 3 s for the living (zombies aside); leaving, it takes the rest
# with it (the kernel SIGKILLs a PID namespace whose first process exits). Globs and `read` are
# builtins: counting forks nothing.
_INIT = f"""\
"$@"
status=$?
kill -TERM -1 2>/dev/null
tries=0
while [ $tries -lt {_GRACE_TENTHS} ]; do
  alive=0
  for stat in /proc/[0-9]*/stat; do
    [ "$stat" = /proc/1/stat ] && continue
    read -r line < "$stat" 2>/dev/null || continue
    case "$line" in *") Z "*) ;; *) alive=1 ;; esac
  done
  [ $alive = 0 ] && break
  sleep 0.1
  tries=$((tries + 1))
done
exit $status
"""


def _namespaces_work(unshare: str) -> bool:
    try:
        done = subprocess.run(
            [unshare, *_NAMESPACES, "--", "true"], capture_output=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def credential_names(environ: Mapping[str, str]) -> list[str]:
    """Credential variables of `environ` the agent must not inherit."""
    return sorted(
        name for name in environ if is_credential_env(name) and not name.upper().startswith(_KEEP_PREFIXES)
    )


class ContainedCli:
    """A launcher script for `cli` (deleted with this object). `path` is what to give the SDK."""

    def __init__(self, cli: str, environ: Mapping[str, str]) -> None:
        unshare = shutil.which("unshare")
        self.contained = bool(unshare) and _namespaces_work(unshare or "")
        self._folder = tempfile.mkdtemp(prefix="skillgrad-cli-")
        weakref.finalize(self, shutil.rmtree, self._folder, True)
        unset = " ".join(f"-u {shlex.quote(name)}" for name in credential_names(environ))
        if self.contained:
            init = f"{shlex.quote(unshare or '')} {' '.join(_NAMESPACES)} -- sh -c {shlex.quote(_INIT)} sh "
        else:
            init = ""
        script = f'#!/bin/sh\nexec env {unset} {init}{shlex.quote(cli)} "$@"\n'
        self.path = str(Path(self._folder) / "claude")
        Path(self.path).write_text(script, encoding="utf-8")
        os.chmod(self.path, 0o700)
