"""Workspace snapshots: a folder's regular files as a digest, a JSON-able dict, and back.

The call cache stores an agent's workspace with its result, because agentic benchmarks score the
files the agent left behind; a cache hit restores them exactly.
"""

from __future__ import annotations

import base64
import hashlib
import os
from pathlib import Path, PurePosixPath


def _files(root: Path) -> list[tuple[str, Path]]:
    """Regular files under `root` (symlinks are neither followed nor kept), sorted by posix path."""
    found: list[tuple[str, Path]] = []
    for dirpath, _dirs, names in os.walk(root):
        for name in names:
            path = Path(dirpath) / name
            if path.is_file() and not path.is_symlink():
                found.append((path.relative_to(root).as_posix(), path))
    return sorted(found)


def tree_digest(root: Path) -> str:
    """sha256 over the paths and contents of the files under `root` ("" when it does not exist)."""
    if not root.is_dir():
        return ""
    digest = hashlib.sha256()
    for rel, path in _files(root):
        data = path.read_bytes()
        digest.update(f"{rel}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()


def snapshot_tree(root: Path, max_bytes: int) -> dict[str, str] | None:
    """{posix path: base64 content} of the files under `root`; None if they exceed `max_bytes`."""
    if not root.is_dir():
        return {}
    files: dict[str, str] = {}
    total = 0
    for rel, path in _files(root):
        data = path.read_bytes()
        total += len(data)
        if total > max_bytes:
            return None
        files[rel] = base64.b64encode(data).decode("ascii")
    return files


def safe_relative_path(rel: str) -> bool:
    """A relative path that stays below its root (no '..', no absolute path, no NUL)."""
    parts = PurePosixPath(rel).parts
    return bool(parts) and not PurePosixPath(rel).is_absolute() and ".." not in parts and "\0" not in rel


def restore_tree(root: Path, files: dict[str, str]) -> None:
    """Make the regular files under `root` exactly `files`. Paths are validated by the caller."""
    root.mkdir(parents=True, exist_ok=True)
    base = root.resolve()
    for rel, path in _files(root):
        if rel not in files:
            path.unlink()
    for rel, content in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.parent.resolve().is_relative_to(base):  # a symlinked dir must not lead out
            raise ValueError(f"{rel}: leads outside the workspace")
        target.write_bytes(base64.b64decode(content, validate=True))
