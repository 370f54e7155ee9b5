"""Diffs and sizes of skill versions that may be packages: one diff per changed file (a new or
deleted file diffs against nothing), so a package's change reads file by file."""

from __future__ import annotations

from dataclasses import dataclass

from skillgrad.package.model import SKILL_FILE, SkillPackage, as_package
from skillgrad.report.diff import SkillDiff, skill_diff


def _files(text: str) -> dict[str, str] | None:
    package = as_package(text)
    return None if package is None else package.files


def version_diffs(title: str, old_label: str, old: str, new_label: str, new: str) -> list[SkillDiff]:
    """The diff of two skill versions: one SkillDiff for single files (as before); for packages
    one per file that differs, SKILL.md first, titled `<title> · <path>`."""
    a, b = _files(old), _files(new)
    if a is None and b is None:
        return [skill_diff(title, old_label, old, new_label, new)]
    a = a if a is not None else {SKILL_FILE: old}
    b = b if b is not None else {SKILL_FILE: new}
    paths = sorted(set(a) | set(b), key=lambda p: (p != SKILL_FILE, p))
    diffs = []
    for path in paths:
        if a.get(path) == b.get(path):
            continue
        change = " (new file)" if path not in a else " (deleted)" if path not in b else ""
        diffs.append(
            skill_diff(
                f"{title} · {path}{change}",
                f"{old_label}/{path}",
                a.get(path, ""),
                f"{new_label}/{path}",
                b.get(path, ""),
            )
        )
    if not diffs:  # identical versions still show as one (empty) diff
        diffs.append(skill_diff(title, old_label, old, new_label, new))
    return diffs


def one_text(text: str) -> str:
    """A skill as one document for a single diff (the compare page): a package's text files in
    order, each under a `## File: <path>` line; a single-file skill as it is."""
    package = as_package(text)
    if package is None:
        return text
    parts = [f"## File: {path}\n{package.files[path]}" for path in package.paths() if path in package.files]
    return "\n".join(parts)


@dataclass(frozen=True)
class VersionSize:
    version: str
    chars: int  # a package: the characters of all its text files
    files: int
    budget: int | None


def version_sizes(skills: dict[str, str], budget: int | None) -> list[VersionSize]:
    rows = []
    for version in sorted(skills):
        package: SkillPackage | None = as_package(skills[version])
        chars = package.chars() if package is not None else len(skills[version])
        files = len(package.paths()) if package is not None else 1
        rows.append(VersionSize(version, chars, files, budget))
    return rows
