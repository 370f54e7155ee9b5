"""`--set KEY=VALUE` items: applying one to a raw config mapping, what a path in one means, and
which one a validation error came from (so the error names the `--set`, not the YAML file)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from skillgrad.errors import UserError

# Keys holding a file path: given with --set, a relative path means the current folder (the user
# typed it there); in a config file it keeps meaning the file's folder (see Config.resolve_path).
CLI_PATH_KEYS = (
    "benchmark.data",
    "skill.init",
    "cache.dir",
    "model.local_model",
    "model.claude_code_cli_path",
    "model.codex_cli_path",
)
_MODEL_FILE_KEYS = ("model.optimizer_model", "model.target_model")  # paths only when they name a .gguf


def cli_path_override(assignment: str, cwd: Path) -> str:
    """`assignment` with a relative path value made absolute against `cwd` (other values as given)."""
    key, sep, raw = assignment.partition("=")
    value = raw.strip()
    is_path_key = key.strip() in CLI_PATH_KEYS or (
        key.strip() in _MODEL_FILE_KEYS and value.endswith(".gguf")
    )
    if not sep or not is_path_key or not value or value.startswith(("hf://", "~")) or ":" in value:
        return assignment  # no path (hub ids are 'owner/repo:file'), or one that is not relative
    path = Path(value)
    return assignment if path.is_absolute() else f"{key}={cwd / path}"


def apply_override(data: dict[str, Any], assignment: str) -> None:
    """Apply one `key.path=value` (value parsed as YAML) to the raw config mapping."""
    key, sep, raw = assignment.partition("=")
    if not sep or not key.strip():
        raise UserError(f"--set {assignment!r}: expected key.path=value, e.g. --set train.epochs=1")
    parts = key.strip().split(".")
    node = data
    for part in parts[:-1]:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise UserError(f"--set {assignment!r}: '{part}' is not a section")
        node = child
    try:
        node[parts[-1]] = yaml.safe_load(raw) if raw.strip() else None
    except yaml.YAMLError:
        node[parts[-1]] = raw


def override_for(loc: tuple[Any, ...], overrides: list[str]) -> str | None:
    """The last `--set` whose key is `loc` or a section around it (or inside it): the source to name."""
    path = [str(p) for p in loc]
    for item in reversed(overrides):
        parts = item.partition("=")[0].strip().split(".")
        if path[: len(parts)] == parts or parts[: len(path)] == path:
            return item
    return None
