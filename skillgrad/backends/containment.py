"""Process containment for agent harnesses (the Claude Code CLI): a launcher the SDK runs instead
of the CLI itself.

The launcher starts the CLI in a new PID namespace with a fresh /proc (`unshare`, util-linux):
- every process the agent starts (a `setsid` daemon, a background server) is killed by the kernel
  when the CLI ends, so nothing outlives its task;
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
        prefix = f"{shlex.quote(unshare or '')} {' '.join(_NAMESPACES)} -- " if self.contained else ""
        script = f'#!/bin/sh\nexec env {unset} {prefix}{shlex.quote(cli)} "$@"\n'
        self.path = str(Path(self._folder) / "claude")
        Path(self.path).write_text(script, encoding="utf-8")
        os.chmod(self.path, 0o700)
