"""Loading a config: YAML file + `--set key.path=value` overrides + role resolution.

Role precedence (docs/architecture.md, "Backends and the spec registry"): CLI role flag > config
role key > CLI --backend > config model.backend > built-in default. After `load_config`,
`model.optimizer_backend` and `model.target_backend` are always concrete backend names.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from skillgrad.backend_specs import BACKENDS, backend_names
from skillgrad.config.overrides import apply_override, cli_path_override, override_for
from skillgrad.config.sections import Config
from skillgrad.errors import UserError


def _read_yaml(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise UserError(f"{path}: config file not found; pass an existing YAML file with --config")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: not UTF-8 text (byte {exc.start}); save the config as UTF-8") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "malformed YAML"
        raise UserError(f"{path}:{where}: {problem}; fix the YAML syntax") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise UserError(f"{path}: the top level must be a mapping of sections (benchmark:, model:, ...)")
    return data


def _section_fields(loc: tuple[Any, ...]) -> list[str]:
    model: type[BaseModel] = Config
    for part in loc[:-1]:
        field = model.model_fields.get(str(part))
        annotation = field.annotation if field else None
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            model = annotation
        else:
            return []
    return [name for name, f in model.model_fields.items() if not f.exclude]


def _describe(source: str, exc: ValidationError, overrides: list[str] | None = None) -> str:
    err = exc.errors()[0]
    loc = tuple(err["loc"])
    key = ".".join(str(p) for p in loc)
    override = override_for(loc, overrides or [])
    if override is not None:  # the bad value came from the command line, not the file
        source = f"--set {override}"
    if err["type"] == "extra_forbidden":
        allowed = ", ".join(_section_fields(loc)) or "(none)"
        return f"{source}: unknown key '{key}'; allowed here: {allowed}"
    if err["type"] == "literal_error":
        allowed = err.get("ctx", {}).get("expected", "")
        return f"{source}: {key}: {err['input']!r} is not allowed; allowed values: {allowed}"
    return f"{source}: {key}: {err['msg']} (got {err.get('input')!r})"


def _sizes_origin(source: str, overrides: list[str]) -> str:
    """Where the split sizes were given, as an error about them names it: a `--set` of one, else
    the config file (`source`), else '' (a mapping from Python: 'the config')."""
    for split in ("train", "val", "test"):
        if (override := override_for(("benchmark", f"{split}_size"), overrides)) is not None:
            return f"--set {override}"
    return "" if source == "config" else source


def check_combinations(cfg: Config, source: str) -> None:
    """Keys that are each valid but do not work together (UserError naming both)."""
    opt = cfg.optimizer
    if opt.target != "body" and opt.search != "greedy":
        # A description is kept by trigger F1 against one incumbent and, with `both`, shares the
        # run's current skill step by step: a frontier's pool of parents has no place for either.
        raise UserError(
            f"{source}: optimizer.target {opt.target!r} cannot be combined with optimizer.search "
            f"{opt.search!r}; set optimizer.search: greedy, or optimizer.target: body"
        )


def resolve_roles(
    cfg: Config,
    *,
    backend: str | None = None,
    optimizer_backend: str | None = None,
    target_backend: str | None = None,
) -> None:
    """Fix both role backends in place, in the precedence of docs/architecture.md."""
    for name, value in (
        ("--backend", backend),
        ("--optimizer-backend", optimizer_backend),
        ("--target-backend", target_backend),
    ):
        if value is not None and value not in BACKENDS:
            raise UserError(
                f"{name} {value!r}: unknown backend; allowed values: {', '.join(backend_names())}"
            )
    fallback = backend or cfg.model.backend
    cfg.model.optimizer_backend = optimizer_backend or cfg.model.optimizer_backend or fallback
    cfg.model.target_backend = target_backend or cfg.model.target_backend or fallback
    if backend:
        cfg.model.backend = backend


def load_config(
    path: str | Path | None,
    overrides: list[str] | None = None,
    *,
    backend: str | None = None,
    optimizer_backend: str | None = None,
    target_backend: str | None = None,
) -> Config:
    """Load, override, validate and resolve a config. Raises UserError naming the bad key."""
    source = str(path) if path else "config"
    data = _read_yaml(Path(path)) if path else {}
    return config_from_data(
        data,
        source,
        overrides,
        base_dir=Path(path).resolve().parent if path else None,
        backend=backend,
        optimizer_backend=optimizer_backend,
        target_backend=target_backend,
    )


def config_from_data(
    data: dict[str, Any],
    source: str,
    overrides: list[str] | None = None,
    *,
    base_dir: Path | None = None,
    backend: str | None = None,
    optimizer_backend: str | None = None,
    target_backend: str | None = None,
) -> Config:
    """Validate an already-parsed mapping (a YAML file, or a run's stored config.json). Overrides
    are the command line's `--set` items: their relative paths mean the current folder."""
    for item in overrides or []:
        apply_override(data, cli_path_override(item, Path.cwd()))
    try:
        cfg = Config.model_validate(data)
    except ValidationError as exc:
        raise UserError(_describe(source, exc, overrides)) from None
    check_combinations(cfg, source)
    cfg.benchmark._sizes_from = _sizes_origin(source, overrides or [])
    if base_dir is not None:
        cfg.base_dir = base_dir
    resolve_roles(cfg, backend=backend, optimizer_backend=optimizer_backend, target_backend=target_backend)
    return cfg
