"""Edits on a skill package: each edit changes the file it names (SKILL.md by default) with the
same ops, anchors and protected regions as a single-file skill; `create` adds a new text file.
The example ops change the package's `examples.md` (created with its first example, SKILL.md then
pointing to it, so a harness that reads SKILL.md finds it). `open_skill` gives the right document
for a skill text, so the loop treats both alike; `skill_demos` reads either one's examples."""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass
from functools import cached_property

from skillgrad.demos import EXAMPLE_OPS, EXAMPLES_FILE, Demo, parse_demos, without_section
from skillgrad.package.model import SKILL_FILE, SkillPackage, as_package, path_problem
from skillgrad.skilldoc import MAIN_FILE, PROTECT_CLOSE, PROTECT_OPEN, Edit, EditOutcome, SkillDoc
from skillgrad.templates import render

# What `create` may make: text a harness reads or runs. Anything else stays out of a package.
CREATE_SUFFIXES = (".md", ".txt", ".py", ".sh", ".json", ".yaml", ".yml", ".csv", ".toml")


@dataclass(frozen=True)
class PackageDoc:
    """A package under edit. `budget` (skill.max_chars) caps the whole package's text."""

    package: SkillPackage
    budget: int | None = None

    @cached_property
    def text(self) -> str:
        return self.package.encode()

    @property
    def content_hash(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    def _create(self, edit: Edit, max_chars: int | None) -> tuple[SkillPackage | None, str]:
        if edit.file in self.package.files or edit.file in self.package.binary:
            return None, f"file {edit.file} already exists; edit it instead"
        if not edit.file.endswith(CREATE_SUFFIXES):
            return None, f"file {edit.file}: a created file ends with one of {', '.join(CREATE_SUFFIXES)}"
        body = edit.content.strip("\n")
        if not body.strip():
            return None, "create with empty content"
        if max_chars is not None and len(body) > max_chars:
            return (
                None,
                f"the new file would be {len(body)} chars, over optimizer.max_skill_chars={max_chars}",
            )
        return self.package.with_file(edit.file, body + "\n"), "applied"

    def _change(self, edit: Edit, max_chars: int | None) -> tuple[SkillPackage | None, str]:
        if edit.file in self.package.binary:
            return None, f"file {edit.file} is binary: carried unchanged, never edited"
        if edit.file not in self.package.files:
            return None, f"no file {edit.file} in the package; use op create to add it"
        doc, outcome = SkillDoc(self.package.files[edit.file]).apply_one(
            dataclasses.replace(edit, file=MAIN_FILE), max_chars
        )
        if outcome.status != "applied":
            return None, outcome.reason
        return self.package.with_file(edit.file, doc.text), outcome.reason

    def _example(self, edit: Edit, max_chars: int | None) -> tuple[SkillPackage | None, str]:
        """An example op on examples.md (a new file gets a pointer line in SKILL.md; a file left
        without examples or other text is removed)."""
        text = self.package.files.get(EXAMPLES_FILE, "")
        doc, outcome = SkillDoc(text).apply_one(dataclasses.replace(edit, file=MAIN_FILE), max_chars)
        if outcome.status != "applied":
            return None, outcome.reason
        files = {**self.package.files, EXAMPLES_FILE: doc.text}
        if not doc.text.strip():
            del files[EXAMPLES_FILE]
        elif EXAMPLES_FILE not in self.package.skill_md:
            pointer = render("skillgrad", "examples_pointer").strip()
            files[SKILL_FILE] = self.package.skill_md.rstrip("\n") + "\n\n" + pointer + "\n"
        return SkillPackage(files, self.package.binary), outcome.reason

    def _apply(self, edit: Edit, max_chars: int | None) -> tuple[SkillPackage | None, str]:
        if edit.op in EXAMPLE_OPS:
            return self._example(edit, max_chars)
        return (self._create if edit.op == "create" else self._change)(edit, max_chars)

    def apply_one(self, edit: Edit, max_chars: int | None = None) -> tuple[PackageDoc, EditOutcome]:
        """Like `SkillDoc.apply_one`, on the file `edit.file` (an example op: on examples.md);
        `max_chars` caps each file."""
        if edit.op in EXAMPLE_OPS:
            edit = dataclasses.replace(edit, file=EXAMPLES_FILE)
        problem = path_problem(edit.file)
        if problem is None and (PROTECT_OPEN in edit.content or PROTECT_CLOSE in edit.content):
            problem = "content contains protected-region markers"
        new: SkillPackage | None = None
        if problem is None:
            new, reason = self._apply(edit, max_chars)
            problem = None if new is not None else reason
        if problem is None and new is not None and self.budget is not None and new.chars() > self.budget:
            problem = f"the package would be {new.chars()} chars, over skill.max_chars={self.budget}"
        if problem is not None or new is None:
            return self, EditOutcome(edit, "skipped", problem or "not applied")
        return PackageDoc(new, self.budget), EditOutcome(edit, "applied", reason)

    def apply(self, edits: list[Edit], max_chars: int | None = None) -> tuple[PackageDoc, list[EditOutcome]]:
        doc, outcomes = self, []
        for edit in edits:
            doc, outcome = doc.apply_one(edit, max_chars)
            outcomes.append(outcome)
        return doc, outcomes


def open_skill(text: str, budget: int | None = None) -> SkillDoc | PackageDoc:
    """The document to edit for a skill text: a PackageDoc for an encoded package, else SkillDoc.
    For a single file `budget` is applied by the caller through `max_chars`."""
    package = as_package(text)
    return SkillDoc(text) if package is None else PackageDoc(package, budget)


def skill_demos(text: str) -> list[Demo]:
    """The worked examples of a skill text: a single file's examples section, a package's examples.md."""
    package = as_package(text)
    return parse_demos(text if package is None else package.files.get(EXAMPLES_FILE, ""))


def without_demos(text: str) -> str:
    """A skill text without its examples (a package: without examples.md), for what the rest says."""
    package = as_package(text)
    if package is None:
        return without_section(text)
    files = {p: t for p, t in package.files.items() if p != EXAMPLES_FILE}
    return SkillPackage(files, package.binary).encode()


def char_limit(max_skill_chars: int, budget: int | None, text: str) -> int:
    """The per-edit `max_chars`: a single-file skill is held to the smaller of the document
    limit and the package budget; a package's files to the document limit (the budget is whole)."""
    if budget is None or as_package(text) is not None:
        return max_skill_chars
    return min(max_skill_chars, budget)
