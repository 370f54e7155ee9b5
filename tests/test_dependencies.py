"""pyproject declares every package the code imports (issue 37, item 11): a module imported at
the top, inside a function or through `lazy_import` that comes only through another package's
dependencies (httpx2 through today's SDKs) breaks the day that package stops bringing it."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
# Imported but declared through another requirement, each with why.
NOT_DECLARED = {
    "pydantic_core": "part of pydantic, which pins it exactly",
    "huggingface_hub": "optional: only a hub id in model.local_model needs it, and its absence is a "
    "UserError with the pip command",
}


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def declared() -> set[str]:
    project = PYPROJECT["project"]
    extras = [r for group in project["optional-dependencies"].values() for r in group]
    return {_name(r) for r in [*project["dependencies"], *extras] if not r.startswith("skillgrad")}


def imported() -> dict[str, list[str]]:
    """Top-level module -> the files that import it (absolute imports and `lazy_import`)."""
    found: dict[str, list[str]] = {}
    for path in sorted((REPO / "skillgrad").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            elif (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", None) == "lazy_import"
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                names = [str(node.args[0].value)]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top != "skillgrad" and top not in sys.stdlib_module_names:
                    found.setdefault(top, []).append(path.relative_to(REPO).as_posix())
    return found


def test_every_imported_package_is_declared() -> None:
    names, providers = declared(), metadata.packages_distributions()
    missing = []
    for module, files in sorted(imported().items()):
        if module in NOT_DECLARED:
            continue
        dists = {d.lower().replace("_", "-") for d in providers.get(module, [module])}
        if not dists & names:
            missing.append(f"{module} ({sorted(dists)[0]}, imported by {files[0]})")
    assert not missing, f"imported but declared nowhere in pyproject.toml: {missing}"
    assert {"httpx2", "jsonschema", "orjson"} <= names


def test_the_architecture_page_names_every_runtime_dependency() -> None:
    page = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = page[page.index("## Dependencies") :].lower()
    runtime = [_name(r) for r in PYPROJECT["project"]["dependencies"]]
    missing = [name for name in runtime if name not in section]
    assert not missing, f"docs/architecture.md's Dependencies leave out: {missing}"
    assert "httpx2" in section
