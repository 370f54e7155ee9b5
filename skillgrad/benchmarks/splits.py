"""Reading benchmark data and splitting it: JSONL rows, safe task ids, seeded disjoint splits.

Every error here is a `UserError` with one line naming the file (and line) and the fix, because
benchmark data is user input.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib
import json
import random
import re
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from skillgrad.config import BenchmarkConfig
from skillgrad.errors import UserError
from skillgrad.text import clean_json
from skillgrad.values import SPLITS, Split, Task

_SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,79}")
_UNSAFE_RUN = re.compile(r"[^A-Za-z0-9._-]+")


def safe_task_id(raw: object) -> str:
    """A folder-safe id for `raw`, stable across runs.

    Ids already made of `[A-Za-z0-9._-]` (not starting with a dot, at most 80 chars) come back
    unchanged so run folders stay readable. Anything else (`../x`, `/etc`, `a/b`, NUL, spaces,
    unicode) becomes a slug plus a hash of the original, so two different raw ids never map to
    the same folder (`a/b` and `a_b` differ) and no id can escape its parent folder.
    """
    text = str(raw)
    if _SAFE_ID.fullmatch(text) and text not in (".", ".."):
        return text
    slug = _UNSAFE_RUN.sub("_", text).strip("._-")[:60] or "task"
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return f"{slug}-{digest}"


def _open_lines(path: Path) -> Iterator[bytes]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as handle:
        yield from handle


def iter_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for each non-blank line; `.jsonl.gz` is read transparently."""
    if path.is_dir():
        raise UserError(f"{path}: a folder, not a data file; set benchmark.data to a JSONL file")
    if not path.is_file():
        raise UserError(f"{path}: data file not found; set benchmark.data to an existing JSONL file")
    try:
        for lineno, raw in enumerate(_open_lines(path), start=1):
            where = f"{path}:{lineno}"
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise UserError(f"{where}: not UTF-8 text; save the file as UTF-8") from None
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise UserError(f"{where}: not valid JSON ({exc.msg}); fix or remove that line") from None
            if not isinstance(row, dict):
                raise UserError(f"{where}: expected a JSON object per line, got {type(row).__name__}")
            yield lineno, clean_json(row)  # a "\ud800" escape in the data must not reach a writer
    except (OSError, EOFError) as exc:  # gzip errors are OSError subclasses
        raise UserError(f"{path}: cannot read ({exc}); check the file") from None


def read_id_manifest(path: Path) -> list[str]:
    """Ids from a manifest: a JSON array or JSONL of `{"id": ...}` objects (or bare strings)."""
    if not path.is_file():
        raise UserError(f"{path}: id manifest not found; point benchmark.options.manifest at it")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        rows = data if isinstance(data, list) else [data]
    except UnicodeDecodeError:
        raise UserError(f"{path}: not UTF-8 text; save the manifest as UTF-8") from None
    except json.JSONDecodeError:
        rows = [row for _, row in iter_jsonl(path)]
    ids = [row.get("id", row.get("key")) if isinstance(row, dict) else row for row in rows]
    if not ids or not all(isinstance(i, str | int) and str(i) for i in ids):
        raise UserError(f'{path}: expected {{"id": ...}} entries; found none or an entry without an id')
    return [str(i) for i in ids]


def text_field(row: dict[str, Any], key: str, where: str, *, required: bool = True) -> str | None:
    value = row.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value.strip()):
        raise UserError(f"{where}: field '{key}' must be a non-empty string")
    return value


def answers_field(row: dict[str, Any], where: str, key: str = "answers") -> tuple[str, ...]:
    """`answers` as a list of strings; a single string (`answer`) is accepted too."""
    value = row.get(key, row.get("answer"))
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, list) or not value or not all(isinstance(v, str | int | float) for v in value):
        raise UserError(f"{where}: field '{key}' must be a non-empty list of strings")
    answers = tuple(str(v) for v in value)
    if any(not a.strip() for a in answers):  # an empty answer would match an empty reply
        raise UserError(f"{where}: field '{key}' holds an empty answer; remove it or fill it in")
    return answers


def row_id(row: dict[str, Any], where: str, default: str) -> str:
    value = row.get("id", default)
    if not isinstance(value, str | int) or isinstance(value, bool) or str(value) == "":
        raise UserError(f"{where}: field 'id' must be a non-empty string or integer")
    return str(value)


def check_unique(tasks: Sequence[Task], source: str) -> None:
    """Duplicate ids would overwrite each other's run folders and skew scores: reject them."""
    seen: set[str] = set()
    for task in tasks:
        key = str(task.meta.get("source_id", task.id))
        if key in seen or task.id in seen:
            raise UserError(f"{source}: duplicate task id {key!r}; give every item a unique id")
        seen.update({key, task.id})


FIXED_SIZES: dict[Split, int] = {"train": 40, "val": 20, "test": 0}  # a null size beside a given one
MOST_SIZES: dict[Split, int] = {"train": 40, "val": 20, "test": 20}  # split by fractions: at most
MIN_VAL = 4  # split by fractions: at least, so the gate's decision rests on more than one task
SHARES = "50/25/25"


def sizes_given(cfg: BenchmarkConfig) -> bool:
    """Whether the config gives any split size (else they adapt to the data)."""
    return any(size is not None for size in (cfg.train_size, cfg.val_size, cfg.test_size))


def fraction_sizes(n: int, source: str) -> dict[Split, int]:
    """`n` items split 50/25/25: val at least MIN_VAL, each at most MOST_SIZES, train at least 1."""
    if n < MIN_VAL + 1:
        raise UserError(
            f"{source}: {n} items are too few to split (at least {MIN_VAL + 1}: 1 to train on, "
            f"{MIN_VAL} to validate); add items, or give benchmark.train_size and benchmark.val_size"
        )
    val = min(MOST_SIZES["val"], max(MIN_VAL, -(-n // 4)))
    test = max(0, min(MOST_SIZES["test"], n // 4, n - val - 1))
    return {"train": min(MOST_SIZES["train"], n - val - test), "val": val, "test": test}


def split_sizes(cfg: BenchmarkConfig, n: int | None = None, source: str = "benchmark") -> dict[Split, int]:
    """The three sizes: as given (a null one beside a given one: FIXED_SIZES); none given, `n`
    items split by fractions (`fraction_sizes`), or FIXED_SIZES for a benchmark that generates its
    tasks (`n` None)."""
    given: dict[Split, int | None] = {"train": cfg.train_size, "val": cfg.val_size, "test": cfg.test_size}
    if sizes_given(cfg):
        return {split: FIXED_SIZES[split] if size is None else size for split, size in given.items()}
    return dict(FIXED_SIZES) if n is None else fraction_sizes(n, source)


def sizes_origin(cfg: BenchmarkConfig) -> str:
    """Where the caller gave the sizes, as errors name it: a `--set` item, a config file or the
    config passed from Python (config.loading records it)."""
    return cfg._sizes_from or "the config"


def split_pool(tasks: Sequence[Task], split: Split, cfg: BenchmarkConfig, source: str) -> list[Task]:
    """The `split` part of one pool: sorted by id, shuffled by `cfg.seed`, cut train | val | test.

    Sorting first makes the split independent of the file's line order; the three parts never
    overlap. Raises UserError when the sizes do not fit the data or the split asked for is empty.
    """
    check_unique(tasks, source)
    sizes = split_sizes(cfg, len(tasks), source)
    total = sum(sizes.values())
    if total > len(tasks):
        given = {"train": cfg.train_size, "val": cfg.val_size, "test": cfg.test_size}
        terms = " + ".join(f"{sizes[s]}{' (unset)' if given[s] is None else ''}" for s in SPLITS)
        raise UserError(
            f"{source}: benchmark.train_size + val_size + test_size = {terms} = {total} but the data "
            f"has {len(tasks)} items; lower them where they are given ({sizes_origin(cfg)}), or "
            f"leave all three unset to split the {len(tasks)} items {SHARES}"
        )
    _require_nonempty(split, sizes[split], source)
    order = sorted(tasks, key=lambda t: t.id)
    random.Random(cfg.seed).shuffle(order)
    start = sum(sizes[s] for s in SPLITS[: SPLITS.index(split)])
    return order[start : start + sizes[split]]


def presplit_size(cfg: BenchmarkConfig, split: Split, available: int) -> int:
    """A pre-split split's size: as given, or with no size given all of it up to MOST_SIZES."""
    if sizes_given(cfg):
        return split_sizes(cfg)[split]
    return min(MOST_SIZES[split], available)


def take_split(tasks: Sequence[Task], split: Split, cfg: BenchmarkConfig, source: str) -> list[Task]:
    """For data that comes pre-split (a manifest per split): a seeded sample of the split's size."""
    check_unique(tasks, source)
    size = presplit_size(cfg, split, len(tasks))
    _require_nonempty(split, size, source)
    if size > len(tasks):
        raise UserError(
            f"{source}: benchmark.{split}_size = {size} but the {split} split has {len(tasks)} items; "
            f"lower it to at most {len(tasks)} where it is given ({sizes_origin(cfg)})"
        )
    order = sorted(tasks, key=lambda t: t.id)
    random.Random(cfg.seed).shuffle(order)
    return order[:size]


def _require_nonempty(split: Split, size: int, source: str) -> None:
    if size == 0:
        raise UserError(f"{source}: the {split} split is empty; set benchmark.{split}_size to at least 1")


OptionsT = TypeVar("OptionsT", bound=BaseModel)


def parse_options(model: type[OptionsT], cfg: BenchmarkConfig) -> OptionsT:
    """Validate `benchmark.options` for one benchmark; unknown keys name the allowed ones."""
    try:
        return model.model_validate(cfg.options)
    except ValidationError as exc:
        err = exc.errors()[0]
        key = ".".join(str(p) for p in err["loc"])
        if err["type"] == "extra_forbidden":
            allowed = ", ".join(model.model_fields) or "(none)"
            raise UserError(
                f"benchmark.options.{key}: unknown option for benchmark '{cfg.name}'; allowed: {allowed}"
            ) from None
        raise UserError(f"benchmark.options.{key}: {err['msg']} (got {err.get('input')!r})") from None


def hub_rows(
    benchmark: str, dataset: str, split: str, hint: str, *, name: str | None = None
) -> Iterable[Any]:
    """Rows of a public dataset through the optional `datasets` package. Missing package or an
    unreachable hub is a UserError that says how to use local data instead (`hint`)."""
    try:
        datasets = importlib.import_module("datasets")
    except ImportError:
        raise UserError(
            f"{benchmark}: no benchmark.data and the 'datasets' package is not installed; {hint}, "
            "or pip install 'skillgrad[benchmarks]' (it brings datasets)"
        ) from None
    try:
        rows: Iterable[Any] = datasets.load_dataset(dataset, name, split=split)
    except Exception as exc:  # network, auth or cache errors from the hub: all user-fixable
        raise UserError(
            f"{benchmark}: could not load {dataset} [{split}] ({type(exc).__name__}: {str(exc)[:200]}); "
            "check the network or set benchmark.data to a local JSONL"
        ) from None
    return rows
