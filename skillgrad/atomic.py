"""Crash-safe file primitives: atomic writes, fsynced JSONL appends with torn-tail repair, run lock.

Every artifact of a run goes through these so that a SIGKILL at any instant leaves either the old
or the new content of a file, never half of it; the only partial state a crash can leave is a torn
last line of a JSONL file, which `read_jsonl_repairing` (and `append_jsonl`) cut off.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import json
import os
import socket
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from skillgrad.errors import UserError
from skillgrad.text import clean_text


def _fsync_dir(directory: Path) -> None:
    # Makes the rename itself durable (power loss); harmless where directories cannot be opened.
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@functools.cache
def _umask() -> int:
    """The process umask, read once (reading it means setting it, which is not thread-safe)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_bytes_atomic(path: Path, data: bytes, *, fsync: bool = True) -> None:
    """Write `data` to a temp file next to `path`, then rename over it (same filesystem)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        # mkstemp creates 0600; artifacts get the usual mode a plain open() would give.
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if fsync:
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if fsync:
        _fsync_dir(path.parent)


def write_text_atomic(path: Path, text: str, *, fsync: bool = True) -> None:
    """Atomically replace `path` with UTF-8 `text` (no newline translation). Any string an agent
    can produce is writable: a lone surrogate becomes U+FFFD instead of an exception."""
    write_bytes_atomic(path, clean_text(text).encode("utf-8"), fsync=fsync)


def dumps_json(obj: Any) -> str:
    """The one JSON spelling of artifacts: UTF-8 text, indented, and strictly valid (no NaN)."""
    return json.dumps(obj, ensure_ascii=False, indent=2, allow_nan=False) + "\n"


def write_json_atomic(path: Path, obj: Any, *, fsync: bool = True) -> None:
    write_text_atomic(path, dumps_json(obj), fsync=fsync)


def _open_unlinked(path: Path, flags: int) -> int:
    """`os.open(path, flags)`, never through a symlink: one planted at the name (a file of a run
    is never a link) is removed, and the file made anew."""
    flags |= os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        return os.open(path, flags, 0o666)
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
    os.unlink(path)
    return os.open(path, flags | os.O_CREAT, 0o666)


def _repair_tail(fd: int) -> None:
    """Cut a last line that has no newline (a write torn by a crash) so appends start clean."""
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return
    data = os.pread(fd, size, 0)
    os.ftruncate(fd, data.rfind(b"\n") + 1)  # 0 when the only line is torn
    os.fsync(fd)


def append_jsonl(path: Path, obj: Any, *, fsync: bool = True) -> None:
    """Append one JSON line and fsync it (or leave that to `fsync_file`). A torn tail left by an
    earlier crash is cut first, so the new line never glues onto half a line. Never writes
    through a symlink at `path`. Call from one thread per file at a time."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    line = clean_text(json.dumps(obj, ensure_ascii=False, allow_nan=False)) + "\n"
    fd = _open_unlinked(path, os.O_RDWR | os.O_CREAT | os.O_APPEND)
    try:
        _repair_tail(fd)
        os.write(fd, line.encode("utf-8"))  # one write: a crash tears at most this line
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)


def fsync_file(path: Path) -> None:
    """Flush what was written to `path` to the disk (any descriptor of the file will do)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _parse_line(raw: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def read_jsonl_repairing(path: Path, *, repair: bool = True) -> list[dict[str, Any]]:
    """Read a JSONL file of objects. A damaged LAST line (torn by a crash: no newline, or bytes
    that do not parse) is dropped and the file truncated to the last complete line. Damage
    anywhere else is not a crash artifact: UserError naming the file and line. `repair=False`
    reads the same records and leaves the file as it is (a check before anything changes), as it
    does for a file that is a symlink (nothing is written through a link)."""
    path = Path(path)
    if not path.exists():
        return []
    repair = repair and not path.is_symlink()
    data = path.read_bytes()
    lines = data.split(b"\n")
    # split() yields a final '' when the file ends with a newline; otherwise the last item is torn
    # unless it parses.
    records: list[dict[str, Any]] = []
    offset = 0
    for number, raw in enumerate(lines, 1):
        is_last = number == len(lines) or (number == len(lines) - 1 and lines[-1] == b"")
        if raw.strip() == b"":
            offset += len(raw) + 1
            continue
        record = _parse_line(raw)
        if record is None:
            if not is_last:
                raise UserError(
                    f"{path}: line {number} is not a JSON object; the run folder is damaged "
                    "beyond a crash's torn last line: restore it or start a new run with --out"
                )
            if not repair:
                return records
            fd = _open_unlinked(path, os.O_RDWR)
            try:
                os.ftruncate(fd, offset)
                os.fsync(fd)
            finally:
                os.close(fd)
            return records
        records.append(record)
        offset += len(raw) + 1
    if data and not data.endswith(b"\n") and repair:  # a complete but unterminated last line
        fd = _open_unlinked(path, os.O_WRONLY | os.O_APPEND)
        try:
            os.write(fd, b"\n")
            os.fsync(fd)
        finally:
            os.close(fd)
    return records


def in_use(folder: Path, holder: str) -> str:
    """The one line for a run folder another live trainer holds."""
    return (
        f"{folder}: another skillgrad trainer is using this run folder ({holder}); wait for it to "
        "finish, stop it, or choose another --out"
    )


class RunLock:
    """Exclusive lock on a run folder: `with RunLock(out / ".lock"): ...`.

    `fcntl.flock` on an open descriptor is the authority: the kernel drops it when the holder dies
    (even by SIGKILL), so a stale lock file is simply taken over; its pid/host/start-time content
    only serves the refusal message. The descriptor is non-inheritable (PEP 446), so agent
    subprocesses that outlive a killed trainer do not keep the run locked.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def _holder(self) -> str:
        try:
            info = json.loads(self.path.read_text(encoding="utf-8"))
            return f"pid {info['pid']} on {info['hostname']}, started {info['started']}"
        except (OSError, ValueError, KeyError, TypeError):
            return "holder unknown"

    def live_holder(self) -> str | None:
        """Who holds this lock now ("pid N on host, started T"), or None when no live process
        does (no lock file, or the stale one of a trainer that died). Probing never takes it: a
        holder on this host is alive when its pid is; elsewhere (or before its pid is written)
        the lock file's flock says."""
        try:
            info = json.loads(self.path.read_text(encoding="utf-8"))
            pid, host = int(info["pid"]), str(info["hostname"])
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError):
            pid, host = 0, ""
        if pid and host == socket.gethostname():
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return None
            except PermissionError:
                pass  # alive, another user's
            return self._holder()
        return self._holder() if self._flocked() else None

    def _flocked(self) -> bool:
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)  # (a shared lock taken is dropped with the descriptor)
        return False

    def _open_locked(self) -> int | None:
        """Open and lock the current lock file; None if another process holds it."""
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                return None
            try:
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                return fd
            # The previous holder unlinked the file between our open and flock: retry on the new one.
            os.close(fd)

    def acquire(self) -> None:
        if self._fd is not None:
            raise RuntimeError(f"{self.path}: RunLock acquired twice by the same object")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = self._open_locked()
        if fd is None:
            raise UserError(in_use(self.path.parent, self._holder()))
        info = {
            "pid": os.getpid(),
            "hostname": socket.gethostname(),
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(info) + "\n").encode("utf-8"), 0)
        os.fsync(fd)
        self._fd = fd

    def release(self) -> None:
        if self._fd is None:
            return
        # Unlink while still holding the lock; a waiter that opened the old inode notices the
        # inode change in `_open_locked` and retries instead of sharing a dead lock.
        with contextlib.suppress(OSError):
            os.unlink(self.path)
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)
        self._fd = None

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()
