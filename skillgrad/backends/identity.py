"""What identifies the program or file that answers a backend's calls, beyond the model's name:
part of the call cache's key (`skillgrad.cache.keys`), so a new CLI release or another model file
behind the same name is never answered from an older entry.

Error contract: nothing here raises; what cannot be read is keyed as unknown (a file that is gone
by its path alone, a CLI whose `--version` fails by its path and that failure).
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

VERSION_TIMEOUT_S = 30.0


def cli_version(cli: str) -> tuple[str | None, str]:
    """(`cli --version` output, why not when it does not run), e.g. node missing for an npm CLI."""
    try:
        proc = subprocess.run([cli, "--version"], capture_output=True, text=True, timeout=VERSION_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"{type(exc).__name__}: {exc}"
    if proc.returncode != 0:
        detail = " ".join((proc.stderr or proc.stdout).split())[:300]
        return None, f"exit code {proc.returncode}: {detail}"
    return proc.stdout.strip(), ""


def cli_identity(cli: str | None) -> dict[str, Any]:
    """A harness CLI by the version it reports (its path only where it reports none)."""
    if cli is None:
        return {"cli": None}
    version, problem = cli_version(cli)
    return {"cli_version": version} if version is not None else {"cli": cli, "cli_problem": problem}


def file_identity(path: Path) -> dict[str, Any]:
    """A model file by its resolved path, size and modification time (a digest of gigabytes at
    every start would cost more than the calls it protects)."""
    resolved = Path(path).expanduser().resolve()
    try:
        stat = resolved.stat()
    except OSError:
        return {"file": str(resolved)}
    return {"file": str(resolved), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
