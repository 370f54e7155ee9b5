"""Where an edit's target is in a skill: the one place that decides which text an edit changes.

A target names one line, or part of one line, of the text outside the protected regions:
1. a whole line: its text with surrounding whitespace ignored, runs of spaces counted as one, and
   a list marker optional ("Be brief." names "- Be brief.");
2. a line that appears more than once is named by its copy, `<line> [k of n]` (k-th of its n
   copies, in document order): the reply schema lists every copy so;
3. otherwise a word-bounded span within one line ("metric units" in "Use metric units."; never
   "tabs" in "tabstops", never text across a line break).
A target that matches more than one line or place is ambiguous and matches nothing: the caller
skips the edit with the reason this module gives. Nothing here knows edits or the skill document;
`skillgrad.skilldoc` applies what this finds.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

Spans = Sequence[tuple[int, int]]  # protected regions: [start, end) offsets in the text
LIST_MARKER = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_COPY = re.compile(r"^(?P<line>.*\S)\s+\[(?P<k>\d+) of (?P<n>\d+)\]$")
PROTECTED = "target lies in a protected region"


@dataclass(frozen=True)
class Line:
    start: int  # the offsets of the line's text, surrounding whitespace excluded
    end: int
    text: str
    editable: bool  # outside every protected region
    name: str  # how an edit targets it: its text, or `text [k of n]` for one of n copies


@dataclass(frozen=True)
class Found:
    start: int
    end: int
    whole: bool  # the span is a whole line's text (a delete needs one; a replace keeps its marker)
    line: str  # the text of the line it is in


def _squeezed(text: str) -> str:
    return " ".join(text.split())


def _unmarked(text: str) -> str:
    return _squeezed(LIST_MARKER.sub("", text, count=1))


def lines_of(text: str, protected: Spans) -> list[Line]:
    """The non-blank lines of `text` in document order, each with its name (see the module)."""
    raw: list[tuple[int, int, str, bool]] = []
    at = 0
    for line in text.splitlines(keepends=True):
        start, at = at, at + len(line)
        stripped = line.strip()
        if not stripped:
            continue
        lead = start + len(line) - len(line.lstrip())
        end = lead + len(stripped)
        editable = not any(lo < end and lead < hi for lo, hi in protected)
        raw.append((lead, end, stripped, editable))
    copies = Counter(_squeezed(t) for _, _, t, editable in raw if editable)
    seen: Counter[str] = Counter()
    lines = []
    for start, end, stripped, editable in raw:
        key, name = _squeezed(stripped), stripped
        if editable and copies[key] > 1:
            seen[key] += 1
            name = f"{stripped} [{seen[key]} of {copies[key]}]"
        lines.append(Line(start, end, stripped, editable, name))
    return lines


def target_names(text: str, protected: Spans) -> list[str]:
    """What an edit may target or anchor on: every editable line's name, in document order."""
    return [line.name for line in lines_of(text, protected) if line.editable]


def _whole_lines(lines: list[Line], target: str) -> list[Line]:
    """The lines `target` names whole: exactly first, then with the list marker optional."""
    exact = [line for line in lines if _squeezed(line.text) == _squeezed(target)]
    return exact or [line for line in lines if _unmarked(line.text) == _unmarked(target)]


def _spans(lines: list[Line], text: str, target: str) -> list[tuple[Line, int, int]]:
    words = target.split()
    pattern = re.compile(r"(?<!\w)" + r"[ \t]+".join(re.escape(w) for w in words) + r"(?!\w)")
    return [
        (line, m.start(), m.end()) for line in lines for m in pattern.finditer(text, line.start, line.end)
    ]


def locate(text: str, target: str, protected: Spans) -> Found | str:
    """Where `target` is in `text` outside `protected`, or why it names nothing (one line)."""
    wanted = target.strip()
    if not wanted:
        return "target text not found in the skill"
    if "\n" in wanted:
        return "target spans several lines; an edit changes one line or part of one"
    lines = lines_of(text, protected)
    editable = [line for line in lines if line.editable]
    named = [line for line in editable if line.name == wanted]
    whole = named or _whole_lines(editable, wanted)
    if len(whole) == 1:
        return Found(whole[0].start, whole[0].end, True, whole[0].text)
    if whole:
        return f"target matches {len(whole)} lines; name one of them as '{wanted} [k of {len(whole)}]'"
    copy = _COPY.match(wanted)
    if copy is not None:
        found = _copy_of(editable, copy["line"], int(copy["k"]), int(copy["n"]))
        if found is not None:
            return found
    places = _spans(editable, text, wanted)
    if len(places) == 1:
        line, start, end = places[0]
        return Found(start, end, (start, end) == (line.start, line.end), line.text)
    if places:
        shown = "; ".join(dict.fromkeys(repr(line.text) for line, _, _ in places))
        return f"target matches {len(places)} places ({shown[:200]}); quote the whole line instead"
    guarded = [line for line in lines if not line.editable]
    if _whole_lines(guarded, wanted) or _spans(guarded, text, wanted):
        return PROTECTED
    return "target text not found in the skill"


def _copy_of(editable: list[Line], line: str, k: int, n: int) -> Found | str | None:
    """The k-th of the n copies of `line`; a reason when the skill no longer holds n of them;
    None when it holds none (the target may still be a span of another line)."""
    copies = _whole_lines(editable, line)
    if not copies:
        return None
    if len(copies) != n or not 1 <= k <= n:
        return f"target names copy {k} of {n} of a line the skill now holds {len(copies)} time(s)"
    chosen = copies[k - 1]
    return Found(chosen.start, chosen.end, True, chosen.text)
