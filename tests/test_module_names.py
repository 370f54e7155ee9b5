"""One name per idea: no two modules of the package share a stem, whatever package each is in (a
subpackage counts as a module of its name), and no two modules of one group (a subpackage with
everything under it) are near-synonyms: the same word inflected (reflect / reflection, merge /
merging, record / records) or two words listed in `NEAR_SYNONYMS`.

A reader who meets `records` or `merge` has to know which one is meant; `docs/architecture.md`'s
layout names each module once. Read from the file tree (nothing is imported)."""

from __future__ import annotations

import itertools
from collections import defaultdict
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "skillgrad"

# Different words for one idea: two modules of one group may not be named by two of them.
NEAR_SYNONYMS = (
    {"reflect", "reflection", "reflecting"},
    {"merge", "merging", "merged", "combine"},
    {"record", "records", "history", "log"},
    {"verdict", "ruling", "judgement"},
    {"validate", "validation", "validating"},
    {"base", "common", "core"},
)
SUFFIXES = ("ions", "ion", "ings", "ing", "ies", "es", "s", "ed", "e")


def root(stem: str) -> str:
    """The stem without one inflection (`reflection` -> `reflect`, `merging` -> `merg`)."""
    for suffix in SUFFIXES:
        if stem.endswith(suffix) and len(stem) - len(suffix) >= 3:
            return stem[: -len(suffix)]
    return stem


def modules(package: Path) -> list[tuple[str, str]]:
    """(stem, path below the package) of every module and subpackage."""
    found = [
        (p.stem, p.relative_to(package).as_posix())
        for p in sorted(package.rglob("*.py"))
        if p.name not in ("__init__.py", "__main__.py")
    ]
    found += [
        (p.parent.name, p.parent.relative_to(package).as_posix() + "/")
        for p in sorted(package.rglob("__init__.py"))
        if p.parent != package
    ]
    return found


def group(path: str) -> str:
    """`loop/search/pool.py` -> `loop`; a root module is its own group."""
    return path.split("/")[0] if "/" in path else ""


def shared_stems(found: list[tuple[str, str]]) -> dict[str, list[str]]:
    paths: dict[str, list[str]] = defaultdict(list)
    for stem, path in found:
        paths[stem].append(path)
    return {stem: sorted(p) for stem, p in paths.items() if len(p) > 1}


def near_synonyms(found: list[tuple[str, str]]) -> list[tuple[str, str]]:
    pairs = []
    for (a, pa), (b, pb) in itertools.combinations(found, 2):
        if a == b or group(pa) != group(pb) or not group(pa) or group(pa) + "/" in (pa, pb):
            continue  # a module named after its own group's package is that package's main one
        if root(a) == root(b) or any(a in words and b in words for words in NEAR_SYNONYMS):
            pairs.append((pa, pb))
    return pairs


def test_no_two_modules_share_a_stem() -> None:
    shared = shared_stems(modules(PACKAGE))
    assert not shared, f"modules that share a stem (give each a name that says what it is): {shared}"


def test_no_two_modules_of_a_group_are_near_synonyms() -> None:
    pairs = near_synonyms(modules(PACKAGE))
    assert not pairs, f"near-synonym module names in one group: {pairs}"


@pytest.mark.parametrize(
    ("files", "stems", "pairs"),
    [
        (["a/records.py", "b/records.py"], {"records": ["a/records.py", "b/records.py"]}, []),
        (["loop/reflect.py", "loop/reflection.py"], {}, [("loop/reflect.py", "loop/reflection.py")]),
        (["loop/merge.py", "loop/search/merging.py"], {}, [("loop/merge.py", "loop/search/merging.py")]),
        (["loop/records.py", "loop/history.py"], {}, [("loop/history.py", "loop/records.py")]),
        (["executors/executor.py"], {}, []),  # named after its own package: its main module
        (["report/search.py", "loop/search/pool.py"], {"search": ["loop/search/", "report/search.py"]}, []),
        (["api/run.py", "activation/runs.py", "loop/gate.py"], {}, []),  # other groups: allowed
    ],
)
def test_the_checks_catch_what_they_name(
    tmp_path: Path, files: list[str], stems: dict[str, list[str]], pairs: list[tuple[str, str]]
) -> None:
    """On a made-up tree, each check finds exactly the collisions it is meant to."""
    for name in files:
        path = tmp_path / name
        for folder in [*reversed(path.relative_to(tmp_path).parents)][1:]:
            (tmp_path / folder).mkdir(exist_ok=True)
            (tmp_path / folder / "__init__.py").touch()
        path.touch()
    found = modules(tmp_path)
    assert shared_stems(found) == stems
    assert sorted(near_synonyms(found)) == sorted(pairs)
