"""Folders whose writes cannot be led out of them: the run folder (`run_folder.RunDir`).

An agent works in a workspace inside the run folder and can replace any folder of the run by a
symlink (`ln -sfn ~/elsewhere ../../../../reflections`) before the trainer writes there. So a
write never resolves a path through the links it meets: the folder it writes into is opened one
component at a time from the root's descriptor, none followed if it is a symlink (a symlink, or
a file, found where the run keeps a folder was planted there: it is removed, never followed, and
a real folder made in its place), and the write names the folder through that descriptor
(`/proc/self/fd/N`), so a link planted after the walk leads nowhere either. The root is held
open, so renaming the run folder away and planting a link by its name does not lead out either.
Where the system has no `/proc/self/fd` the folder is named by its path after the walk (the
links found are removed, but one planted between the walk and the write is not seen).
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import threading
import weakref
from collections.abc import Iterator
from pathlib import Path, PurePath

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
PROC_FD = Path("/proc/self/fd")
_NAMED_BY_FD = PROC_FD.is_dir()


def _open_child(parent: int, name: str, create: bool) -> int:
    """The folder `name` inside the open folder `parent`, made when missing (`create`); whatever
    else is there under that name (a symlink, a file) is removed first."""
    for _ in range(8):  # another writer may make or remove it meanwhile: look again
        try:
            return os.open(name, _DIR_FLAGS, dir_fd=parent)
        except FileNotFoundError:
            if not create:
                raise
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, 0o777, dir_fd=parent)
        except OSError as exc:
            if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                raise
            if stat.S_ISDIR(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode):
                raise
            os.unlink(name, dir_fd=parent)  # a link or a file where a folder belongs: not followed
    raise OSError(errno.EAGAIN, f"{name}: kept changing while the run opened it")


class Confined:
    """The folder `root` (the user's path, followed once) and what is inside it, for writing."""

    def __init__(self, root: Path, parent: Confined | None = None) -> None:
        self.root = root
        self._parent = parent  # a folder inside another one (a part of a run): opened through it
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._closer: weakref.finalize[[int], Confined] | None = None

    def child(self, name: str) -> Confined:
        """The folder `name` inside this one, itself confined (its root is walked to from here)."""
        return Confined(self.root / name, self)

    def _root_fd(self) -> int:
        """The root, opened once and held (a root that was deleted is opened again)."""
        with self._lock:
            if self._fd is not None and os.fstat(self._fd).st_nlink == 0 and self._closer is not None:
                self._closer()  # closes it
                self._fd = None
            if self._fd is None:
                if self._parent is not None:
                    self._fd = self._parent._open(PurePath(self.root.name), True)
                else:
                    self.root.mkdir(parents=True, exist_ok=True)
                    self._fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
                self._closer = weakref.finalize(self, os.close, self._fd)
            return self._fd

    def _open(self, rel: PurePath, create: bool) -> int:
        """A descriptor of the folder `root/rel` (the caller closes it), walked as the module says."""
        fd = os.dup(self._root_fd())
        try:
            for part in rel.parts:
                if part in ("", ".", "..", "/"):
                    raise ValueError(f"{rel}: not a path inside the run folder")
                child = _open_child(fd, part, create)
                os.close(fd)
                fd = child
        except BaseException:
            os.close(fd)
            raise
        return fd

    @contextlib.contextmanager
    def folder(self, rel: PurePath | str, *, create: bool = True) -> Iterator[Path]:
        """The folder `root/rel` (made with its parents when missing, unless `create` is false:
        FileNotFoundError), as a path that leads nowhere else while the block runs."""
        fd = self._open(PurePath(rel), create)
        try:
            yield PROC_FD / str(fd) if _NAMED_BY_FD else self.root / rel
        finally:
            os.close(fd)

    def clear(self, rel: PurePath | str, *, create: bool) -> None:
        """Remove whatever is at `root/rel` (a folder's whole tree, never through a link in it);
        with `create`, leave an empty folder there."""
        rel = PurePath(rel)
        fd = self._open(rel.parent, True)
        try:
            remove_entry(fd, rel.name)
            if create:
                os.mkdir(rel.name, 0o777, dir_fd=fd)
        finally:
            os.close(fd)


def remove_entry(folder: int, name: str) -> None:
    """Remove `name` from the open `folder`: a folder with everything in it (no link followed), a
    file or a link; nothing when it is not there."""
    try:
        mode = os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISDIR(mode):
        shutil.rmtree(name, dir_fd=folder)
    else:
        os.unlink(name, dir_fd=folder)
