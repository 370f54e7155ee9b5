"""docs/architecture.md stays the reference of the code as it is: every part of the package is in its
layout, every file it names exists, every registered name (backends, benchmarks, strategies) is in
it, and no source file points to the design document outside the repository (../shared/DESIGN.md)."""

from __future__ import annotations

import re
from pathlib import Path

from skillgrad.backend_specs import BACKENDS
from skillgrad.benchmarks.catalog import BUILTINS
from skillgrad.executors.executor import EXECUTORS
from skillgrad.loop.search.parents import PARENTS
from skillgrad.loop.selection import SCHEDULES
from skillgrad.loop.strategies import SEARCHES
from skillgrad.run_folder import RunFiles

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "skillgrad"
DOC = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")


def layout_block() -> str:
    section = DOC[DOC.index("## Layout") :]
    return section.split("```")[1]


def test_every_part_of_the_package_is_in_the_layout() -> None:
    layout = layout_block()
    parts = [
        f"{p.name}/" if p.is_dir() else p.name
        for p in sorted(PACKAGE.iterdir())
        if (p.is_dir() and (p / "__init__.py").exists()) or (p.suffix == ".py" and p.name != "__main__.py")
    ]
    missing = [part for part in parts if not re.search(rf"(^|[\s,]){re.escape(part)}", layout, flags=re.M)]
    assert not missing, f"docs/architecture.md's layout does not name: {missing}"


def test_every_file_the_document_names_exists() -> None:
    files = {p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*") if p.is_file()}
    named = set(re.findall(r"`([\w/]+\.py)`", DOC)) | set(re.findall(r"`([a-z_]+(?:/[a-z_]+)*/)`", DOC))
    assert len(named) > 40  # the document names the modules it describes
    run_folder = {f"{v}/" for v in vars(RunFiles).values() if isinstance(v, str)}  # the run folder's own

    def exists(name: str) -> bool:
        return name in run_folder or (REPO / name).exists() or any(("/" + f).count("/" + name) for f in files)

    gone = [name for name in sorted(named) if not exists(name)]
    assert not gone, f"docs/architecture.md names files that do not exist: {gone}"


def test_the_layouts_figures_hold() -> None:
    """ "About N lines in the package" within 10 %, and "no file over M lines" for every file."""
    about = re.search(r"About ([\d,]+) lines in the package", DOC)
    most = re.search(r"no file over\s+(\d+) lines", DOC)
    assert about and most, "docs/architecture.md's layout no longer states its two figures"
    sizes = {
        p.relative_to(PACKAGE).as_posix(): len(p.read_text(encoding="utf-8").splitlines())
        for p in PACKAGE.rglob("*.py")
    }
    stated, total = int(about[1].replace(",", "")), sum(sizes.values())
    assert abs(stated - total) <= total // 10, (
        f"the package has {total} lines, the document says about {stated}"
    )
    longer = {name: n for name, n in sizes.items() if n > int(most[1])}
    assert not longer, f"files over the {most[1]} lines docs/architecture.md allows: {longer}"


def test_no_registry_the_document_names_is_missing() -> None:
    """Every UPPER_CASE registry the strategies paragraph names is defined in the package."""
    paragraph = DOC[DOC.index("**Strategies**") :].split("\n\n")[0]
    names = re.findall(r"`([A-Z][A-Z_]+)`", paragraph)
    assert len(names) >= 5
    source = "\n".join(p.read_text(encoding="utf-8") for p in PACKAGE.rglob("*.py"))
    missing = [n for n in names if not re.search(rf"^{n}\b.*=", source, flags=re.M)]
    assert not missing, f"docs/architecture.md names registries that do not exist: {missing}"


def test_every_registered_name_is_in_the_document() -> None:
    names = [*BACKENDS, *BUILTINS, *SEARCHES, *PARENTS, *SCHEDULES, *EXECUTORS, "strict", "paired"]
    missing = [name for name in names if f"`{name}`" not in DOC]
    assert not missing, f"docs/architecture.md does not mention: {missing}"


def test_no_source_file_cites_a_design_document_outside_the_repository() -> None:
    citing = [
        p.relative_to(REPO).as_posix()
        for p in sorted(PACKAGE.rglob("*"))
        if p.is_file() and p.suffix in (".py", ".md", ".j2") and "DESIGN.md" in p.read_text(encoding="utf-8")
    ]
    assert not citing, f"these cite a document a clone does not have: {citing}"
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "docs/architecture.md" in readme and "DESIGN.md" not in readme
