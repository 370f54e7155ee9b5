"""A CLI session that ends with the trainer: a launcher that runs the CLI under the kernel's
parent-death signal (util-linux `setpriv --pdeathsig KILL`), so a trainer killed with SIGKILL (or
crashing) takes its analyst's CLI with it. Without it, the Claude Code CLI, whose output pipe has
nobody left to read it, carries on with the session and pays for every turn up to its end
(measured: 7 more turns after a SIGKILL). Where setpriv is missing the CLI runs as it is.

The signal goes to the CLI when the thread that started it ends; a session runs to its end inside
the thread that started it (`claude_session.run_session`), so it never fires early.
"""

from __future__ import annotations

import os
import shlex
import shutil
import tempfile
import weakref
from pathlib import Path


class ParentBoundCli:
    """A launcher script for `cli` (deleted with this object). `path` is what to give the SDK."""

    def __init__(self, cli: str) -> None:
        setpriv = shutil.which("setpriv")
        self.bound = setpriv is not None
        self.path = cli
        if setpriv is None:
            return
        folder = tempfile.mkdtemp(prefix="skillgrad-cli-")
        weakref.finalize(self, shutil.rmtree, folder, True)
        script = f'#!/bin/sh\nexec {shlex.quote(setpriv)} --pdeathsig KILL -- {shlex.quote(cli)} "$@"\n'
        self.path = str(Path(folder) / "claude")
        Path(self.path).write_text(script, encoding="utf-8")
        os.chmod(self.path, 0o700)
