"""Three-way merge of skills: two descendants of a common ancestor, each lineage's changes
(its accepted edits as they landed: the difference from the ancestor) applied together.

Lines are diffed against the ancestor with difflib. Changes of one side, or the same change on
both, merge cleanly; rules both sides insert at the same place are kept, one side's after the
other's (a rule already there is not repeated); lines both sides changed differently are a
conflict (`Conflict`), for the analyst to resolve or the merge to be skipped. A skill package
merges file by file: a file only one side created or changed is taken from it. (merge3, the
library that does this for Breezy, is GPL: skillgrad is MIT, so the region walk is written here
on top of the standard library's diff.)
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from skillgrad.package.model import SkillPackage, as_package
from skillgrad.skilldoc import MAIN_FILE, normalize_text

Hunk = tuple[int, int, int, int]  # base lines [i1, i2) became side lines [j1, j2)


@dataclass(frozen=True)
class Conflict:
    """Lines both lineages changed differently: the ancestor's, and each side's."""

    file: str
    base: list[str]
    ours: list[str]
    theirs: list[str]


Chunk = list[str] | Conflict


@dataclass(frozen=True)
class Merged:
    """A merged skill: each file's chunks (lines, or a conflict to resolve) and what it carries."""

    files: dict[str, list[Chunk]]
    binary: dict[str, bytes]
    package: bool

    @property
    def conflicts(self) -> list[Conflict]:
        return [c for chunks in self.files.values() for c in chunks if isinstance(c, Conflict)]

    def text(self, resolutions: list[list[str]] | None = None) -> str:
        """The merged skill, conflict i replaced by `resolutions[i]` (needed when there are any)."""
        answers = iter(resolutions or [])
        files: dict[str, str] = {}
        for path, chunks in self.files.items():
            lines = [line for c in chunks for line in (next(answers) if isinstance(c, Conflict) else c)]
            files[path] = "".join(lines)
        if not self.package:
            return files[MAIN_FILE]
        return SkillPackage(files, self.binary).encode()


def _lines(text: str) -> list[str]:
    """`text` as lines that each end with a newline (a last line without one gets it)."""
    return [line if line.endswith("\n") else line + "\n" for line in text.splitlines(keepends=True)]


def _hunks(base: list[str], side: list[str]) -> list[Hunk]:
    opcodes = difflib.SequenceMatcher(a=base, b=side, autojunk=False).get_opcodes()
    return [(i1, i2, j1, j2) for tag, i1, i2, j1, j2 in opcodes if tag != "equal"]


def _touches(lo: int, hi: int, hunk: Hunk) -> bool:
    """Whether `hunk` overlaps the base range [lo, hi): a shared line, or an insertion inside it
    or at one of its ends (two insertions at one place included)."""
    i1, i2 = hunk[0], hunk[1]
    if i1 < hi and lo < i2:
        return True
    return (i1 == i2 and lo <= i1 <= hi) or (lo == hi and i1 <= lo <= i2)


def _side(base: list[str], side: list[str], hunks: list[Hunk], lo: int, hi: int) -> list[str]:
    """What one side made of base lines [lo, hi) with its `hunks` inside that range."""
    out, at = [], lo
    for i1, i2, j1, j2 in hunks:
        out += base[at:i1] + side[j1:j2]
        at = i2
    return out + base[at:hi]


def merge_lines(base: list[str], ours: list[str], theirs: list[str], file: str = MAIN_FILE) -> list[Chunk]:
    """The chunks of a three-way merge of line lists (see the module)."""
    tagged = sorted([(h, 0) for h in _hunks(base, ours)] + [(h, 1) for h in _hunks(base, theirs)])
    clusters: list[tuple[int, int, list[tuple[Hunk, int]]]] = []
    for hunk, side in tagged:
        if clusters and _touches(clusters[-1][0], clusters[-1][1], hunk):
            lo, hi, members = clusters[-1]
            clusters[-1] = (lo, max(hi, hunk[1]), [*members, (hunk, side)])
        else:
            clusters.append((hunk[0], hunk[1], [(hunk, side)]))
    chunks: list[Chunk] = []
    at = 0
    for lo, hi, members in clusters:
        chunks.append(base[at:lo])
        at = hi
        mine = [h for h, s in members if s == 0]
        yours = [h for h, s in members if s == 1]
        a = _side(base, ours, mine, lo, hi)
        b = _side(base, theirs, yours, lo, hi)
        if not yours or a == b:
            chunks.append(a)
        elif not mine:
            chunks.append(b)
        elif lo == hi:  # both inserted rules at one place: keep both, each rule once
            have = {normalize_text(line) for line in a if line.strip()}
            chunks.append(a + [line for line in b if not line.strip() or normalize_text(line) not in have])
        else:
            chunks.append(Conflict(file, base[lo:hi], a, b))
    chunks.append(base[at:])
    return [c for c in chunks if isinstance(c, Conflict) or c]


def merge_skills(base: str, ours: str, theirs: str) -> Merged:
    """Three-way merge of skill texts (single files or packages, all three of one kind);
    ValueError when they are of different kinds."""
    packages = [as_package(t) for t in (base, ours, theirs)]
    if not any(packages):
        return Merged({MAIN_FILE: merge_lines(_lines(base), _lines(ours), _lines(theirs))}, {}, False)
    if not all(packages):
        raise ValueError("the skills to merge are not all packages")
    old, mine, yours = packages
    assert old is not None and mine is not None and yours is not None
    files: dict[str, list[Chunk]] = {}
    for path in sorted({*old.files, *mine.files, *yours.files}):
        base_lines, our_lines, their_lines = (_lines(p.files.get(path, "")) for p in (old, mine, yours))
        files[path] = merge_lines(base_lines, our_lines, their_lines, path)
    return Merged(files, {**old.binary, **yours.binary, **mine.binary}, True)
