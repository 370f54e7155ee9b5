"""No import cycles in the package: between modules, nor between its groups (a subpackage or a
root module). Every import counts, also inside functions and under TYPE_CHECKING."""

from __future__ import annotations

from pathlib import Path

import skillgrad
from tests.import_graph import cycles, group_graph, import_graph

PACKAGE_ROOT = Path(skillgrad.__file__).parent


def test_no_import_cycle_between_modules() -> None:
    found = cycles(import_graph(PACKAGE_ROOT, "skillgrad"))
    assert found == [], f"import cycles between modules: {found}"


def test_no_import_cycle_between_groups() -> None:
    found = cycles(group_graph(import_graph(PACKAGE_ROOT, "skillgrad")))
    assert found == [], f"import cycles between subpackages / root modules: {found}"


def test_the_graph_sees_every_kind_of_import(tmp_path: Path) -> None:
    """The detector itself finds a cycle closed by a relative import, a function-level import and
    one under TYPE_CHECKING, so a clean result above means something."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from pkg.sub import b\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    from . import c\n")
    guarded = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pkg.a\n"
    (pkg / "sub" / "c.py").write_text(guarded)
    (pkg / "d.py").write_text("import pkg.a\n")
    graph = import_graph(pkg, "pkg")
    assert cycles(graph) == [["pkg.a", "pkg.sub.b", "pkg.sub.c"]]
    assert cycles(group_graph(graph)) == [["a", "sub"]]
