"""Merge the minibatch patches of one step into one de-duplicated, conflict-free edit list."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from skillgrad.skilldoc import Edit

ADDS = ("add", "add_example")  # edits that change nothing already there: they never conflict


@dataclass
class MergedEdit:
    edit: Edit
    support: int = 1  # how many proposals (of any minibatch) contained it
    failures: int = 0  # failed tasks in the minibatches that proposed it
    sources: list[int] = field(default_factory=list)  # minibatch indexes

    def to_json(self) -> dict[str, Any]:
        return {
            **self.edit.to_json(),
            "support": self.support,
            "failures": self.failures,
            "sources": self.sources,
        }


@dataclass(frozen=True)
class Patch:
    """One analyst's proposal for one minibatch."""

    minibatch: int
    edits: list[Edit]
    failures: int
    proposal: int = 0  # which of the minibatch's proposals (optimizer.proposals_per_minibatch)
    reask: bool = False  # asked again, from scratch, after every edit of the step was dropped


class UnionMerge:
    """Union of all patches: identical edits (ignoring case/whitespace) count as support, once
    per proposal; two different deletes/replaces of the same target conflict, and the
    better-supported one wins."""

    def merge(self, patches: list[Patch]) -> list[MergedEdit]:
        merged: dict[tuple[str, str, str], MergedEdit] = {}
        seen: set[tuple[tuple[str, str, str], int, int]] = set()
        for patch in sorted(patches, key=lambda p: (p.minibatch, p.proposal)):
            for edit in patch.edits:
                key = edit.key()
                if (key, patch.minibatch, patch.proposal) in seen:
                    continue
                seen.add((key, patch.minibatch, patch.proposal))
                item = merged.get(key)
                if item is None:
                    merged[key] = MergedEdit(edit, 1, patch.failures, [patch.minibatch])
                    continue
                item.support += 1
                if patch.minibatch not in item.sources:
                    item.failures += patch.failures
                    item.sources.append(patch.minibatch)
        return _resolve_conflicts(list(merged.values()))


def _resolve_conflicts(edits: list[MergedEdit]) -> list[MergedEdit]:
    best: dict[str, MergedEdit] = {}
    for item in edits:
        if item.edit.op in ADDS:
            continue
        target = item.edit.key()[1]  # the target text, within its file; a create's is its file
        current = best.get(target)
        if current is None or (item.support, item.failures) > (current.support, current.failures):
            best[target] = item
    return [m for m in edits if m.edit.op in ADDS or best[m.edit.key()[1]] is m]


MERGERS: dict[str, type[UnionMerge]] = {"union": UnionMerge}
