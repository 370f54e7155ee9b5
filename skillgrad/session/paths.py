"""Path arguments checked before anything runs: one line naming the argument and what the path is.

Each check raises `UserError` (the CLI turns it into one line and exit code 2); `name` is how the
user gave the path (`--out`, `--resume`, `skill.init`, ...). Nothing here creates or changes a file.
"""

from __future__ import annotations

import os
from pathlib import Path

from skillgrad.errors import UserError


def _kind(path: Path) -> str:
    if path.is_symlink() and not path.exists():
        return "a broken symlink"
    if path.is_dir():
        return "a folder"
    if path.is_file():
        return "a file"
    return "not a file or folder" if path.exists() else "missing"


def _nearest_existing(path: Path) -> Path:
    """`path` or the closest of its parents that exists (the folder a new path would be made in)."""
    current = path.absolute()
    while not current.exists() and not current.is_symlink() and current != current.parent:
        current = current.parent
    return current


def _writable_below(name: str, path: Path, what: str) -> None:
    """`path` (missing) can be created: its nearest existing parent is a writable folder."""
    parent = _nearest_existing(path.parent)
    if not parent.is_dir():
        raise UserError(f"{name} {path}: {parent} is {_kind(parent)}, so {what} cannot be made inside it")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UserError(f"{name} {path}: {parent} is not writable; choose another {what}")


def check_out_folder(name: str, path: Path) -> None:
    """A folder to write a run into: an existing folder, or a path one can be created at."""
    if path.is_dir():
        if not os.access(path, os.W_OK | os.X_OK):
            raise UserError(f"{name} {path}: the folder is not writable; choose another {name}")
        return
    if path.exists() or path.is_symlink():
        raise UserError(f"{name} {path}: is {_kind(path)}, not a folder; pass a folder for the run")
    _writable_below(name, path, "a run folder")


def check_out_file(name: str, path: Path, example: str) -> None:
    """A file to write: an existing file (replaced) or a path one can be created at; `example` is
    a file name the error suggests inside a folder given by mistake."""
    if path.is_dir():
        raise UserError(f"{name} {path}: is a folder; pass a file path, e.g. {path / example}")
    if path.exists() and not path.is_file():
        raise UserError(f"{name} {path}: is {_kind(path)}; pass a file path")
    if path.is_file():
        if not os.access(path, os.W_OK):
            raise UserError(f"{name} {path}: the file is not writable; choose another {name}")
        return
    _writable_below(name, path, "the file")


def check_run_folder(name: str, path: Path) -> None:
    """An existing run folder to read (and, for --resume, to continue)."""
    if not path.is_dir():
        what = "no such folder" if _kind(path) == "missing" else f"is {_kind(path)}, not a run folder"
        raise UserError(f"{name} {path}: {what}; pass the --out folder of `skillgrad train`")


def check_input(name: str, path: Path, *, folder_ok: bool = True, file_ok: bool = True) -> None:
    """A path to read: it exists, is of an accepted kind and can be read."""
    wanted = " or ".join(k for k, ok in (("a file", file_ok), ("a folder", folder_ok)) if ok)
    if not path.exists():
        raise UserError(f"{name} {path}: no such file or folder; pass an existing path")
    if (
        (path.is_dir() and not folder_ok)
        or (path.is_file() and not file_ok)
        or not (path.is_dir() or path.is_file())
    ):
        raise UserError(f"{name} {path}: is {_kind(path)}; pass {wanted}")
    if not os.access(path, os.R_OK | (os.X_OK if path.is_dir() else 0)):
        raise UserError(f"{name} {path}: is {_kind(path)} this user cannot read; check its permissions")
