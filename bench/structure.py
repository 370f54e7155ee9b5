"""Print the package's structure figures: import cycles, backend-naming places, sizes, layout.

Run: `python bench/structure.py` (from the repository root; reads the source, imports nothing).
The figures feed the closing notes of refactoring issues, so "before" and "after" are printed by
the same code: import cycles between the package's groups (a subpackage or a root module) and
between modules (every import counts, also inside functions and under TYPE_CHECKING), the files
outside the backend's own module that name a backend (what adding one touches), the largest files
and functions, and the package layout.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "skillgrad"
sys.path.insert(0, str(ROOT))

from tests.import_graph import cycles, group_graph, import_graph  # noqa: E402


def backend_modules() -> dict[str, str]:
    """Backend name -> the file of its own module."""
    from skillgrad.backends.registry import BACKENDS

    return {name: spec.module.replace(".", "/") + ".py" for name, spec in BACKENDS.items()}


def naming_files(own: dict[str, str]) -> list[str]:
    """Files whose code (not docstrings or comments) spells a backend's name, leaving out a
    backend's own module naming itself: the places adding a backend has to touch besides it."""
    found = []
    for path in sorted((ROOT / PACKAGE).rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and node.body
            and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)
        }
        hits = {
            n.value
            for n in ast.walk(tree)
            if isinstance(n, ast.Constant)
            and isinstance(n.value, str)
            and id(n) not in docstrings
            and n.value in own
        }
        rel = str(path.relative_to(ROOT))
        hits -= {name for name in hits if own[name] == rel}
        if hits:
            found.append(f"{path.relative_to(ROOT)} ({', '.join(sorted(hits))})")
    return found


VENDORS = ("anthropic", "claude_agent_sdk", "openai", "xllamacpp", "huggingface_hub", "llama_cpp")


def vendor_imports_outside_backends() -> list[str]:
    """Modules outside backends/ that import a model vendor's SDK (lazily or not)."""
    found = []
    for path in sorted((ROOT / PACKAGE).rglob("*.py")):
        rel = path.relative_to(ROOT)
        if rel.parts[1] == "backends":
            continue
        names = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module.split(".")[0])
        if hits := sorted(names & set(VENDORS)):
            found.append(f"{rel} ({', '.join(hits)})")
    return found


def sizes() -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    files, functions = [], []
    for path in sorted((ROOT / PACKAGE).rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        rel = str(path.relative_to(ROOT))
        files.append((len(text.splitlines()), rel))
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                functions.append((node.end_lineno - node.lineno + 1, f"{rel}:{node.lineno} {node.name}"))
    return sorted(files, reverse=True), sorted(functions, reverse=True)


def layout() -> list[str]:
    pkg = ROOT / PACKAGE
    rows = []
    roots = sorted(p.name for p in pkg.glob("*.py") if p.name != "__init__.py")
    rows.append(f"root modules ({len(roots)}): {' '.join(roots)}")
    for sub in sorted(p for p in pkg.iterdir() if (p / "__init__.py").exists()):
        mods = sorted(str(p.relative_to(sub)) for p in sub.rglob("*.py") if p.name != "__init__.py")
        rows.append(f"{sub.name}/ ({len(mods)}): {' '.join(mods)}")
    return rows


def main() -> None:
    edges = import_graph(ROOT / PACKAGE, PACKAGE)
    group_cycles = cycles(group_graph(edges))
    module_cycles = cycles(edges)
    print(f"import cycles between groups: {len(group_cycles)}")
    for c in group_cycles:
        print(f"  {' <-> '.join(c)}")
    print(f"import cycles between modules: {len(module_cycles)}")
    for c in module_cycles:
        print(f"  {' <-> '.join(c)}")
    names = naming_files(backend_modules())
    print(f"files touched to add a backend: {1 + len(names)} (its module + the files naming backends):")
    for row in names:
        print(f"  {row}")
    vendors = vendor_imports_outside_backends()
    print(f"modules outside backends/ importing a vendor SDK: {len(vendors)}")
    for row in vendors:
        print(f"  {row}")
    loop_cache = sorted(
        m for m, ds in edges.items() if m.startswith(f"{PACKAGE}.loop") and f"{PACKAGE}.cache" in ds
    )
    print(f"loop modules importing the call cache: {len(loop_cache)} {' '.join(loop_cache)}")
    files, functions = sizes()
    print(f"files: {len(files)}; over 400 lines: {sum(n > 400 for n, _ in files)}")
    for n, name in files[:8]:
        print(f"  {n:5d} {name}")
    print(f"functions: {len(functions)}; over 60 lines: {sum(n > 60 for n, _ in functions)}")
    for n, name in functions[:8]:
        print(f"  {n:5d} {name}")
    print("layout:")
    for row in layout():
        print(f"  {row}")


if __name__ == "__main__":
    main()
