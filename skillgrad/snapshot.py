"""Workspace snapshots: a folder's regular files as a digest, a JSON-able dict, and back; and the
in-place scrub that makes a workspace safe to keep.

The call cache stores an agent's workspace with its result, because agentic benchmarks score the
files the agent left behind; a cache hit restores them exactly. A workspace is written by an
untrusted agent, so nothing here trusts what it finds: sizes are checked (by `lstat`, before any
read) so a sparse 3 GB file costs nothing, symlinks are never followed, and only regular files count.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
import stat
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from skillgrad.atomic import write_bytes_atomic

_CHUNK = 1 << 20


def _files(root: Path) -> list[tuple[str, Path, int]]:
    """(posix path, path, size) of the regular files under `root`, symlinks neither followed nor
    kept, sorted by posix path. Sizes come from `lstat`, so nothing is read."""
    found: list[tuple[str, Path, int]] = []
    for dirpath, _dirs, names in os.walk(root):  # os.walk never descends into symlinked dirs
        for name in names:
            path = Path(dirpath) / name
            try:
                info = path.lstat()
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode):
                found.append((path.relative_to(root).as_posix(), path, info.st_size))
    return sorted(found)


def tree_digest(root: Path) -> str:
    """sha256 over the paths and contents of the files under `root` ("" when it does not exist).
    Contents are hashed in chunks: a huge file costs time, never memory."""
    if not root.is_dir():
        return ""
    digest = hashlib.sha256()
    for rel, path, size in _files(root):
        digest.update(f"{rel}\0{size}\0".encode())
        with path.open("rb") as handle:
            while chunk := handle.read(_CHUNK):
                digest.update(chunk)
    return digest.hexdigest()


def snapshot_tree(
    root: Path, max_bytes: int, transform: Callable[[bytes], bytes] | None = None
) -> dict[str, str] | None:
    """{posix path: base64 content} of the files under `root`; None if they exceed `max_bytes`
    (decided from the sizes before anything is read). `transform` (e.g. secret redaction) is
    applied to each file's content before it is encoded."""
    if not root.is_dir():
        return {}
    found = _files(root)
    if sum(size for _rel, _path, size in found) > max_bytes:
        return None
    files: dict[str, str] = {}
    total = 0
    for rel, path, size in found:
        with path.open("rb") as handle:
            data = handle.read(size + 1)  # the file may have grown since lstat: read at most this
        total += len(data)
        if len(data) > size or total > max_bytes:
            return None
        files[rel] = base64.b64encode(transform(data) if transform else data).decode("ascii")
    return files


def scrub_tree(root: Path, transform: Callable[[bytes], bytes], max_file_bytes: int) -> None:
    """Make the files under `root` safe to keep: each regular file goes through `transform`
    (secret redaction) and is rewritten only if that changed it; a file too large to check is
    emptied with a note instead; symlinks (which could point anywhere) are removed."""
    if not root.is_dir():
        return
    for dirpath, dirs, names in os.walk(root):
        for name in [*names, *dirs]:
            path = Path(dirpath) / name
            if path.is_symlink():
                with contextlib.suppress(OSError):
                    path.unlink()
    for _rel, path, size in _files(root):
        if size > max_file_bytes:
            note = f"[skillgrad: this {size}-byte file was emptied: too large to check for secrets]\n"
            write_bytes_atomic(path, note.encode())
            continue
        data = path.read_bytes()
        clean = transform(data)
        if clean != data:
            write_bytes_atomic(path, clean)


def safe_relative_path(rel: str) -> bool:
    """A relative path that stays below its root (no '..', no absolute path, no NUL)."""
    parts = PurePosixPath(rel).parts
    return bool(parts) and not PurePosixPath(rel).is_absolute() and ".." not in parts and "\0" not in rel


def restore_tree(root: Path, files: dict[str, str]) -> None:
    """Make the regular files under `root` exactly `files`. Paths are validated by the caller."""
    root.mkdir(parents=True, exist_ok=True)
    base = root.resolve()
    for rel, path, _size in _files(root):
        if rel not in files:
            path.unlink()
    for rel, content in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.parent.resolve().is_relative_to(base):  # a symlinked dir must not lead out
            raise ValueError(f"{rel}: leads outside the workspace")
        target.write_bytes(base64.b64decode(content, validate=True))
