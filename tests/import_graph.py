"""The package's import graph, read from the source (nothing is imported).

Every import counts: module level, inside functions and under TYPE_CHECKING, since each one is a
dependency a reader has to follow and a cycle among them is a cycle in the design.
"""

from __future__ import annotations

import ast
from pathlib import Path


def _module_name(path: Path, root: Path, package: str) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join([package, *parts])


def _resolve(name: str, modules: set[str]) -> str | None:
    """The longest prefix of a dotted name that is one of the package's modules."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in modules:
            return candidate
        parts.pop()
    return None


def _imported(node: ast.AST, module: str, is_package: bool) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    base = node.module or ""
    if node.level:
        anchor = module.split(".") if is_package else module.split(".")[:-1]
        anchor = anchor[: len(anchor) - (node.level - 1)]
        base = ".".join([*anchor, base] if base else anchor)
    return [f"{base}.{alias.name}" for alias in node.names]


def import_graph(root: Path, package: str) -> dict[str, set[str]]:
    """Module -> the package modules it imports (package __init__ files are nodes too)."""
    paths = {_module_name(p, root, package): p for p in sorted(root.rglob("*.py"))}
    modules = set(paths)
    edges: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in paths.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            for name in _imported(node, module, path.name == "__init__.py"):
                target = _resolve(name, modules)
                if target is not None and target != module and target != package:
                    edges[module].add(target)
    return edges


def group_of(module: str) -> str:
    """A module's group: its subpackage (`skillgrad.loop.decision.gate` -> `loop`) or, at the root, itself."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def group_graph(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    """The graph between groups: an edge wherever one of a group's modules imports another's."""
    out: dict[str, set[str]] = {}
    for src, dsts in edges.items():
        for dst in dsts:
            if group_of(src) != group_of(dst):
                out.setdefault(group_of(src), set()).add(group_of(dst))
    return out


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every set of nodes that import each other (directly or around a loop), sorted."""
    return sorted(sorted(c) for c in strongly_connected(edges) if len(c) > 1)


def strongly_connected(edges: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's strongly connected components (iterative: no recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[set[str]] = []
    counter = 0
    nodes = set(edges) | {d for ds in edges.values() for d in ds}
    for start in sorted(nodes):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    components.append(component)
            elif child not in index:
                index[child] = low[child] = counter
                counter += 1
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(edges.get(child, ())))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return components
