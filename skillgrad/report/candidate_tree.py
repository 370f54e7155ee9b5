"""The frontier search in the report: the candidate tree (each pool member under the parent it
was made from, with the step, its accepted edits and its val mean) and the item-by-candidate win
table, read from the pool in state.json (a greedy run has none: no section)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from skillgrad.errors import describe_validation
from skillgrad.loop.search.dominance import winners
from skillgrad.loop.search.pool import Member, Pool
from skillgrad.report.data import Run
from skillgrad.report.files import Notes, read_json
from skillgrad.run_folder import RunFiles, version_name


@dataclass
class TreeNode:
    version: str
    kind: str  # initial, child or merge
    step: int
    mean: float
    parents: list[str]
    edits: list[dict[str, Any]]
    refused: int  # edits refused as its children
    frontier: bool
    best: bool
    test: float | None
    children: list[TreeNode] = field(default_factory=list)


@dataclass
class WinRow:
    item: str
    question: str
    cells: list[tuple[float, str]]  # (mean over repeats, "sole" | "shared" | "")


@dataclass
class SearchView:
    parent_rule: str
    tree: TreeNode
    columns: list[str]
    frontier: list[str]
    rows: list[WinRow]
    sole_wins: list[int]  # per column: the items it alone scores best on
    merges: list[dict[str, Any]]


def read_pool(run: Run) -> Pool | None:
    """The pool in the run's state.json (None: no frontier search, or no state yet). A damaged
    state.json or pool is a warning on the run (the section is left out, the rest renders)."""
    path = run.path / RunFiles.STATE
    notes = Notes()
    data = read_json(path, notes, clip=False)  # the pool is validated whole
    run.warnings.extend(notes.warnings)
    if not isinstance(data, dict) or data.get("pool") is None:
        return None
    try:
        return Pool.from_json(data["pool"])
    except ValidationError as exc:
        notes.damaged(path, f"pool: {describe_validation(exc)}")
        run.warnings.extend(notes.warnings[-1:])
        return None


def _tree(pool: Pool, best: str | None, tests: dict[str, Any]) -> TreeNode:
    on_frontier = {m.version for m in pool.frontier()}
    nodes: dict[int, TreeNode] = {}
    for m in pool.members:
        name = version_name(m.version)
        test = tests.get(name)
        nodes[m.version] = TreeNode(
            version=name,
            kind=m.kind,
            step=m.step,
            mean=m.scored.mean,
            parents=[version_name(p) for p in m.parents],
            edits=m.edits,
            refused=sum(len(r.edits) for r in m.rejected),
            frontier=m.version in on_frontier,
            best=name == best,
            test=float(test) if isinstance(test, int | float) else None,
        )
        if m.parents:
            nodes[m.parents[0]].children.append(nodes[m.version])
    return nodes[pool.members[0].version]


def _rows(members: list[Member], questions: dict[str, str]) -> tuple[list[WinRow], list[int]]:
    scored = [m.scored for m in members]
    sole = [0] * len(members)
    rows = []
    for item in sorted(scored[0].means, key=lambda i: (len(i), i)):
        top = {s.version for s in winners(scored, item)}
        shared = len(top) < len(scored)
        cells = []
        for column, s in enumerate(scored):
            mark = ""
            if s.version in top and shared:
                mark = "sole" if len(top) == 1 else "shared"
                sole[column] += len(top) == 1
            cells.append((s.means[item], mark))
        rows.append(WinRow(item, questions.get(item, ""), cells))
    return rows, sole


def search_view(run: Run) -> SearchView | None:
    """The section's values, or None for a run without a pool."""
    pool = read_pool(run)
    if pool is None:
        return None
    baseline = run.set_for("val", step=0)
    questions = {t.task_id: t.question for t in baseline.tasks} if baseline else {}
    test = run.summary.get("test")
    tests = test.get("by_version", {}) if isinstance(test, dict) else {}
    best = run.summary.get("best_version")
    search = run.summary.get("search")
    rule = search.get("parent") if isinstance(search, dict) else None
    rows, sole = _rows(pool.members, questions)
    return SearchView(
        parent_rule=str(rule or (run.config.get("optimizer") or {}).get("parent", "?")),
        tree=_tree(pool, best if isinstance(best, str) else None, tests if isinstance(tests, dict) else {}),
        columns=[version_name(m.version) for m in pool.members],
        frontier=[version_name(m.version) for m in pool.frontier()],
        rows=rows,
        sole_wins=sole,
        merges=[{**t.to_json(), "pair": [version_name(v) for v in t.pair]} for t in pool.merges],
    )
