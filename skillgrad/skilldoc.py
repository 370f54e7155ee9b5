"""SkillDoc: the skill's markdown with protected regions, and the Edit operations applied to it.

Protected regions are HTML-comment markers, invisible when the markdown renders:
    <!-- protected -->  ...text no edit may touch...  <!-- /protected -->
The examples section (`<!-- examples -->` ... `<!-- /examples -->`, skillgrad/demos.py) is closed
to line edits the same way: only the example ops change it, each naming a train task.
Every edit comes back with an explicit status ("applied" | "skipped") and the reason.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from dataclasses import dataclass
from typing import Any, Literal

from skillgrad import demos
from skillgrad.targets import LIST_MARKER, PROTECTED, Found, lines_of, locate, target_names

PROTECT_OPEN = "<!-- protected -->"
PROTECT_CLOSE = "<!-- /protected -->"
_MARKERS = re.compile(f"{re.escape(PROTECT_OPEN)}|{re.escape(PROTECT_CLOSE)}")

EditOp = Literal["add", "delete", "replace", "create", "add_example", "replace_example", "remove_example"]
EDIT_OPS: tuple[EditOp, ...] = ("add", "delete", "replace", "create", *demos.EXAMPLE_OPS)
_SECTION_MARKERS = (demos.EXAMPLES_OPEN, demos.EXAMPLES_CLOSE, "<!-- example ")
MAIN_FILE = "SKILL.md"  # the file an edit changes unless it names another (skill packages)
END_ANCHOR = "end"  # the `add` anchor that appends at the end of the skill ("" means the same)


def normalize_text(text: str) -> str:
    return " ".join(text.split()).lower()


@dataclass(frozen=True)
class Edit:
    """One edit. `target`: for delete/replace the text to change, a line of the skill (one of
    its copies, `line [k of n]`) or a replace's span within one line; for add the line after
    which `content` goes ("" or "end" = at the end). `skillgrad.targets` finds it.
    `file`: the package file it changes (SKILL.md unless named); `create` makes file `file`.
    The example ops name train tasks: `add_example` adds task `content` (its id, or once
    skillgrad wrote it, its entry: `demos.render_entry`), `replace_example` puts it in place of the
    example of task `target`, `remove_example` removes that one."""

    op: EditOp
    target: str = ""
    content: str = ""
    rationale: str = ""
    file: str = MAIN_FILE

    def key(self) -> tuple[str, str, str]:
        """Identity for de-duplication: whitespace and case do not make edits different, nor
        does where an add puts its rule."""
        target = "" if self.op == "add" else normalize_text(self.target)
        if self.op in demos.EXAMPLE_OPS:  # an example's task id, never one of the skill's lines
            target = f"example\x00{self.target}"
        if self.file != MAIN_FILE:
            target = f"{self.file}\x00{target}"
        return (self.op, target, normalize_text(self.content))

    def to_json(self) -> dict[str, Any]:
        data = {"op": self.op, "target": self.target, "content": self.content, "rationale": self.rationale}
        return data if self.file == MAIN_FILE else {**data, "file": self.file}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Edit:
        op = data.get("op")
        if op not in EDIT_OPS:
            raise ValueError(f"unknown edit op {op!r}; allowed: {', '.join(EDIT_OPS)}")
        return cls(
            op,
            str(data.get("target") or ""),
            str(data.get("content") or data.get("task") or ""),  # an example op names its "task"
            str(data.get("rationale") or ""),
            str(data.get("file") or MAIN_FILE),
        )


@dataclass(frozen=True)
class EditOutcome:
    edit: Edit
    status: Literal["applied", "skipped"]
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"edit": self.edit.to_json(), "status": self.status, "reason": self.reason}


def edit_targets(text: str) -> list[str]:
    """The skill's lines an edit may target or anchor on: every non-blank line outside protected
    regions (markers included), stripped, in document order; a line with copies is named once
    per copy, `line [k of n]` (see `skillgrad.targets`)."""
    return target_names(text, SkillDoc(text).closed_spans())


def is_end_anchor(target: str) -> bool:
    return target.strip().lower() in ("", END_ANCHOR)


def _with_marker(content: str, line: str) -> str:
    """Keep a list item a list item: a one-line rule replacing or following `- old rule` gets
    the same marker when it has none of its own."""
    marker = LIST_MARKER.match(line)
    if marker and "\n" not in content.strip() and not LIST_MARKER.match(content):
        return marker.group(0).lstrip() + content.strip()
    return content


@dataclass(frozen=True)
class SkillDoc:
    text: str

    @property
    def content_hash(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    def protected_spans(self) -> list[tuple[int, int]]:
        """The protected regions, outermost: a region nested in another ends with its OUTER close,
        so text after an inner close stays protected. An unclosed region protects everything after
        it (safer than protecting nothing); a close without an open is ignored."""
        spans: list[tuple[int, int]] = []
        depth, start = 0, 0
        for marker in _MARKERS.finditer(self.text):
            if marker.group() == PROTECT_OPEN:
                if depth == 0:
                    start = marker.start()
                depth += 1
            elif depth:
                depth -= 1
                if depth == 0:
                    spans.append((start, marker.end()))
        if depth:
            spans.append((start, len(self.text)))
        return spans

    def closed_spans(self) -> list[tuple[int, int]]:
        """What a line edit may not touch: the protected regions and the examples section."""
        section = demos.section_span(self.text)
        return self.protected_spans() + ([section] if section else [])

    def apply_one(self, edit: Edit, max_chars: int | None = None) -> tuple[SkillDoc, EditOutcome]:
        def skip(reason: str) -> tuple[SkillDoc, EditOutcome]:
            return self, EditOutcome(edit, "skipped", reason)

        if PROTECT_OPEN in edit.content or PROTECT_CLOSE in edit.content:
            return skip("content contains protected-region markers")
        if edit.op in demos.EXAMPLE_OPS and edit.file == MAIN_FILE:
            return self._apply_example(edit, max_chars)
        if any(marker in edit.content for marker in _SECTION_MARKERS):
            return skip("content contains examples-section markers: examples are added by task id")
        if edit.op == "create" or edit.file != MAIN_FILE:
            return skip("the skill is one file: only a skill package (skill.init a folder) has other files")
        if edit.op == "add":
            if not edit.content.strip():
                return skip("add with empty content")
            if _contains(self.text, edit.content):
                return skip("content already present in the skill")
            inserted, reason = self._insert(edit)
            if inserted is None:
                return skip(reason)
            new = inserted
        else:
            reason = "applied"
            found = locate(self.text, edit.target, self.closed_spans())
            if isinstance(found, str):
                return skip(found)
            start, end = found.start, found.end
            if edit.op == "delete" and not found.whole:
                return skip(
                    f"delete removes whole lines and {edit.target.strip()!r} is part of the line "
                    f"{found.line!r}; replace that line instead"
                )
            if edit.op == "delete":  # the line goes, its line break with it
                start = self.text.rfind("\n", 0, start) + 1
                end = len(self.text) if (stop := self.text.find("\n", end)) < 0 else stop + 1
            replacement, rest = "", self.text[:start] + self.text[end:]
            if edit.op == "replace":
                replacement = _with_marker(edit.content, found.line) if found.whole else edit.content
                if normalize_text(replacement) == normalize_text(self.text[start:end]):
                    return skip("replacement is identical to the target")
                if replacement.strip() and _contains(rest, replacement):
                    return skip("content already present in the skill")
            new = SkillDoc(_tidy(self.text[:start] + replacement + self.text[end:]))
        if max_chars is not None and len(new.text) > max_chars:
            return skip(f"the skill would exceed optimizer.max_skill_chars={max_chars}")
        return new, EditOutcome(edit, "applied", reason)

    def _apply_example(self, edit: Edit, max_chars: int | None) -> tuple[SkillDoc, EditOutcome]:
        """An example op on the examples section (see `Edit`); its entry is skillgrad's."""
        text, reason = example_text(self.text, edit, self.protected_spans())
        if text is None:
            return self, EditOutcome(edit, "skipped", reason)
        if max_chars is not None and len(text) > max_chars:
            return self, EditOutcome(
                edit, "skipped", f"the skill would exceed optimizer.max_skill_chars={max_chars}"
            )
        return SkillDoc(text), EditOutcome(edit, "applied", "applied")

    def _insert(self, edit: Edit) -> tuple[SkillDoc | None, str]:
        """(new doc, reason). An anchor that names no one place of the skill only loses the
        rule's position, not the rule: it is appended at the end (weak optimizers paraphrase
        anchors)."""
        content = edit.content.strip("\n")
        found: Found | str = (
            "" if is_end_anchor(edit.target) else locate(self.text, edit.target, self.closed_spans())
        )
        if found == PROTECTED:
            return None, "anchor lies in a protected region"
        if isinstance(found, str):
            base = self.text.rstrip("\n")
            reason = f"applied (anchor unusable: {found}; appended at the end)" if found else "applied"
            return SkillDoc((base + "\n\n" if base else "") + content + "\n"), reason
        # Insert after the line that holds the anchor, so a line is never split.
        line_end = self.text.find("\n", found.end)
        at = len(self.text) if line_end < 0 else line_end
        content = _with_marker(content, found.line)
        return SkillDoc(_tidy(self.text[:at] + "\n" + content + self.text[at:])), "applied"

    def apply(self, edits: list[Edit], max_chars: int | None = None) -> tuple[SkillDoc, list[EditOutcome]]:
        """Apply edits in order; each gets an outcome. Skipped edits leave the skill unchanged."""
        doc, outcomes = self, []
        for edit in edits:
            doc, outcome = doc.apply_one(edit, max_chars)
            outcomes.append(outcome)
        return doc, outcomes


def example_text(text: str, edit: Edit, protected: list[tuple[int, int]]) -> tuple[str | None, str]:
    """(the text with `edit`, an example op, applied to its examples section, "applied") or
    (None, why it cannot apply)."""
    section = demos.section_span(text)
    if section is not None and any(lo < section[1] and section[0] < hi for lo, hi in protected):
        return None, "the examples section lies in a protected region"
    if not demos.section_is_ours(text):
        return None, "the examples section holds text skillgrad did not write: example edits leave it alone"
    current = demos.parse_demos(text)
    ids = [d.task_id for d in current]
    if edit.op != "add_example" and edit.target not in ids:
        return None, f"no example of task {edit.target!r} in the skill"
    if edit.op == "remove_example":
        return demos.with_demos(text, [d for d in current if d.task_id != edit.target]), "applied"
    written = demos.parse_entries(edit.content)
    if len(written) != 1:
        return None, "an example edit names a train task; skillgrad writes its entry"
    new = written[0]
    if new.task_id in ids and new.task_id != edit.target:
        return None, f"task {new.task_id!r} is an example already"
    if edit.op == "add_example":
        return demos.with_demos(text, [*current, new]), "applied"
    return demos.with_demos(text, [new if d.task_id == edit.target else d for d in current]), "applied"


def _contains(text: str, content: str) -> bool:
    """Whole-word, whitespace- and case-insensitive containment (so 'y' is not found in 'say')."""
    pattern = r"(?<!\w)" + re.escape(normalize_text(content)) + r"(?!\w)"
    return re.search(pattern, normalize_text(text)) is not None


def _tidy(text: str) -> str:
    """Collapse the blank-line runs deletions leave behind; keep one trailing newline."""
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip("\n") + "\n" if text.strip() else ""


def diff_edits(old: str, new: str, rationale: str = "rewrite") -> list[Edit]:
    """The line edits that turn `old` into `new` (blank lines ignored), in document order, so a
    rewritten skill goes through the same learning rate, selection and edit report as a patch.
    Changed lines pair up as replaces; extra old lines are deletes; each extra new line is an add
    anchored on the line before it in `new` (or "end" at the very start)."""
    lines = lines_of(old, SkillDoc(old).protected_spans())
    before, names = [line.text for line in lines], [line.name for line in lines]  # a copy by its name
    after = [line.strip() for line in new.splitlines() if line.strip()]
    edits: list[Edit] = []
    matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        paired = min(i2 - i1, j2 - j1) if tag == "replace" else 0
        edits += [Edit("replace", names[i1 + k], after[j1 + k], rationale) for k in range(paired)]
        edits += [Edit("delete", name, "", rationale) for name in names[i1 + paired : i2]]
        for j in range(j1 + paired, j2):
            anchor = after[j - 1] if j > 0 else END_ANCHOR
            edits.append(Edit("add", anchor, after[j], rationale))
    return edits
