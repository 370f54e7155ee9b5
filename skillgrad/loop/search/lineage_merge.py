"""Lineage merges of the frontier search: which two members to merge, and the merged candidate.

Two frontier members (neither descending from the other, never merged before) are merged on
their most recent common ancestor; the pair chosen is the one whose item-by-item best scores
add up highest (the most complementary wins). The merged skill is a three-way merge
(`threeway`); conflicts go to the analyst in one call (`resolve`); a merge that cannot be made,
or makes nothing new, is skipped with its reason. Everything is written to steps/NNNN/merge.json.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import combinations
from typing import Any

from skillgrad.loop.search.dominance import EPS
from skillgrad.loop.search.pool import Member, Pool
from skillgrad.loop.search.protocol import Proposal, SearchContext
from skillgrad.loop.search.resolve import Side, resolve
from skillgrad.loop.search.threeway import merge_skills
from skillgrad.package.doc import open_skill
from skillgrad.package.model import as_package
from skillgrad.run_folder import RunFiles, version_name
from skillgrad.skilldoc import Edit, EditOutcome, diff_edits


@dataclass(frozen=True)
class Pair:
    ours: Member  # the stronger of the two: the merge is gated against it
    theirs: Member
    ancestor: Member


def wins(a: Member, b: Member) -> int:
    """The val items on which `a` scores better than `b`."""
    ours, theirs = a.scored.means, b.scored.means
    return sum(1 for item, score in ours.items() if score > theirs.get(item, 0.0) + EPS)


def merge_pair(pool: Pool) -> Pair | None:
    """The pair to merge next, or None when no two frontier members can be."""
    choices = []
    for a, b in combinations(pool.frontier(), 2):
        ancestor = pool.common_ancestor(a.version, b.version)
        if ancestor in (a.version, b.version) or pool.tried(a.version, b.version):
            continue
        means_a, means_b = a.scored.means, b.scored.means
        together = sum(max(score, means_b.get(item, 0.0)) for item, score in means_a.items())
        ours, theirs = sorted((a, b), key=lambda m: (-m.scored.mean, m.scored.rank))
        choices.append((-together, a.version, b.version, Pair(ours, theirs, pool.member(ancestor))))
    return min(choices, key=lambda c: c[:3])[3] if choices else None


def lineage_edits(pool: Pool, member: Member, ancestor: Member) -> list[Edit]:
    """The accepted edits that lead from `ancestor` to `member`, oldest first."""
    since = sorted(pool.ancestors(member.version) - pool.ancestors(ancestor.version))
    return [Edit.from_json(e) for v in since for e in pool.member(v).edits]


def edits_between(old: str, new: str, rationale: str) -> list[Edit]:
    """The line edits from skill `old` to `new` (a package: per file, new files created)."""
    before, after = as_package(old), as_package(new)
    if before is None or after is None:
        return diff_edits(old, new, rationale)
    edits: list[Edit] = []
    for path, text in sorted(after.files.items()):
        if path not in before.files:
            edits.append(Edit("create", "", text, rationale, path))
        elif before.files[path] != text:
            edits += [replace(e, file=path) for e in diff_edits(before.files[path], text, rationale)]
    return edits


def _side(pool: Pool, member: Member, other: Member, ancestor: Member) -> Side:
    edits = lineage_edits(pool, member, ancestor)
    return Side(version_name(member.version), member.scored.mean, wins(member, other), edits)


def make_merge(ctx: SearchContext, pool: Pool, pair: Pair, step: int) -> tuple[Proposal | None, str]:
    """(the merged candidate, "") or (None, why the merge is skipped); merge.json either way."""
    ours, theirs, ancestor = pair.ours, pair.theirs, pair.ancestor
    sides = (_side(pool, ours, theirs, ancestor), _side(pool, theirs, ours, ancestor))
    record: dict[str, Any] = {
        "step": step,
        "pair": [sides[0].name, sides[1].name],
        "ancestor": version_name(ancestor.version),
        "gated_against": sides[0].name,
        "lineages": {s.name: [e.to_json() for e in s.edits] for s in sides},
        "conflicts": [],
        "analyst": None,
    }
    text, reason = _merged_text(ctx, pair, sides, record)
    if text is not None:
        reason = _problem(ctx, pool, text) or ""
    rationale = f"merge of {sides[0].name} and {sides[1].name}"
    edits = edits_between(ours.text, text, rationale) if text is not None and not reason else []
    if text is not None and not reason and not edits:
        reason = f"the merge differs from {sides[0].name} only in blank lines"
    record.update(outcome="skipped" if reason else "validated", reason=reason)
    ctx.run.write_json(ctx.run.step_dir(step) / RunFiles.MERGE, record)
    if reason or text is None:
        return None, reason
    ctx.run.write_candidate(step, text)
    outcomes = [EditOutcome(e, "applied", rationale) for e in edits]
    ctx.run.write_edit_report(step, [o.to_json() for o in outcomes])
    return (open_skill(text, ctx.settings.max_chars), outcomes, None), ""


def _merged_text(
    ctx: SearchContext, pair: Pair, sides: tuple[Side, Side], record: dict[str, Any]
) -> tuple[str | None, str]:
    try:
        merged = merge_skills(pair.ancestor.text, pair.ours.text, pair.theirs.text)
    except ValueError as exc:
        return None, str(exc)
    conflicts = merged.conflicts
    record["conflicts"] = [
        {"file": c.file, "ancestor": "".join(c.base), "ours": "".join(c.ours), "theirs": "".join(c.theirs)}
        for c in conflicts
    ]
    if not conflicts:
        return merged.text(), ""
    if ctx.optimizer is None:
        return None, "conflicting lines and no optimizer to resolve them"
    effort = ctx.settings.effort
    resolution = resolve(ctx.optimizer, conflicts, sides, effort, ctx.accounting)
    record["analyst"] = resolution.record
    if resolution.lines is None:
        return None, resolution.reason
    record["resolutions"] = ["".join(lines) for lines in resolution.lines]
    return merged.text(resolution.lines), ""


def _problem(ctx: SearchContext, pool: Pool, text: str) -> str | None:
    """Why the merged skill is not worth a validation: it is a member already, or fails a check."""
    same = next((m for m in pool.members if m.text == text), None)
    if same is not None:
        return f"the merged skill is {version_name(same.version)} already"
    return ctx.checks.problem(text)
