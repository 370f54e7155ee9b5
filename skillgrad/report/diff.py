"""Line diffs of skill versions (difflib), as rows the template colours; no HTML is built here."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field


@dataclass(frozen=True)
class DiffLine:
    kind: str  # "ctx" | "add" | "del" | "gap" (lines skipped between hunks)
    old_no: int | None
    new_no: int | None
    text: str


@dataclass
class SkillDiff:
    title: str
    old_label: str
    new_label: str
    lines: list[DiffLine] = field(default_factory=list)

    @property
    def added(self) -> int:
        return sum(1 for line in self.lines if line.kind == "add")

    @property
    def removed(self) -> int:
        return sum(1 for line in self.lines if line.kind == "del")

    @property
    def identical(self) -> bool:
        return self.added == 0 and self.removed == 0


def diff_lines(old: str, new: str, context: int = 3) -> list[DiffLine]:
    """Hunks of changed lines with `context` lines around them, numbered in both versions."""
    a, b = old.splitlines(), new.splitlines()
    rows: list[DiffLine] = []
    for n, group in enumerate(
        difflib.SequenceMatcher(None, a, b, autojunk=False).get_grouped_opcodes(context)
    ):
        if n > 0 or group[0][1] > 0:
            rows.append(DiffLine("gap", None, None, f"@@ -{group[0][1] + 1} +{group[0][3] + 1} @@"))
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                rows += [
                    DiffLine("ctx", i + 1, j + 1, a[i])
                    for i, j in zip(range(i1, i2), range(j1, j2), strict=True)
                ]
                continue
            rows += [DiffLine("del", i + 1, None, a[i]) for i in range(i1, i2)]
            rows += [DiffLine("add", None, j + 1, b[j]) for j in range(j1, j2)]
    return rows


def skill_diff(title: str, old_label: str, old: str, new_label: str, new: str) -> SkillDiff:
    return SkillDiff(title, old_label, new_label, diff_lines(old, new))
