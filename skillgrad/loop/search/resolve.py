"""The analyst's one call that resolves a lineage merge's conflicts: it is shown each conflict
(the ancestor's lines and both versions') with what each lineage learned, and writes the lines of
each place, or says why the two cannot be reconciled. Anything short of a resolution for every
conflict skips the merge with its reason; a refused key or quota stops the run as anywhere else."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from skillgrad.backends.interface import ChatModel
from skillgrad.errors import BackendError, FatalBackendError, StructuredOutputError
from skillgrad.loop.accounting import Accounting
from skillgrad.loop.search.threeway import Conflict
from skillgrad.skilldoc import PROTECT_CLOSE, PROTECT_OPEN, Edit
from skillgrad.templates import render
from skillgrad.values import Effort, Message

PROMPTS = "skillgrad.loop.search"


@dataclass(frozen=True)
class Side:
    """One version of the merge as the analyst is told about it."""

    name: str  # vNNNN
    mean: float
    wins: int  # val items it scores better on than the other version
    edits: list[Edit]


@dataclass(frozen=True)
class Resolution:
    """The lines of each conflict, in order (None: not resolved, `reason` says why), and what the
    analyst saw and said (for merge.json)."""

    lines: list[list[str]] | None
    reason: str = ""
    record: dict[str, Any] = field(default_factory=dict)


def _block(lines: list[str]) -> str:
    return "".join(lines).rstrip("\n") or "(no lines)"


def _edits(edits: list[Edit]) -> str:
    return "\n".join(f"- {json.dumps(e.to_json(), ensure_ascii=False)}" for e in edits) or "- (none)"


def merge_messages(conflicts: list[Conflict], ours: Side, theirs: Side) -> list[Message]:
    shown = "".join(
        render(
            PROMPTS,
            "merge_conflict",
            number=i,
            file=c.file,
            base=_block(c.base),
            ours=_block(c.ours),
            theirs=_block(c.theirs),
        )
        for i, c in enumerate(conflicts, 1)
    )
    user = render(
        PROMPTS,
        "merge_user",
        ours_name=ours.name,
        ours_mean=f"{ours.mean:.3f}",
        ours_wins=ours.wins,
        ours_edits=_edits(ours.edits),
        theirs_name=theirs.name,
        theirs_mean=f"{theirs.mean:.3f}",
        theirs_wins=theirs.wins,
        theirs_edits=_edits(theirs.edits),
        conflicts=shown,
        count=len(conflicts),
    )
    return [Message("system", render(PROMPTS, "merge_system")), Message("user", user)]


def merge_schema(count: int) -> dict[str, Any]:
    resolution = {
        "type": "object",
        "properties": {
            "conflict": {"type": "integer", "minimum": 1, "maximum": count},
            "lines": {"type": "string"},
        },
        "required": ["conflict", "lines"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {
            "resolutions": {"type": "array", "items": resolution, "maxItems": count},
            "skip_reason": {"type": "string"},
        },
        "required": ["resolutions", "skip_reason"],
    }


def parse_resolutions(data: dict[str, Any] | None, count: int) -> tuple[list[list[str]] | None, str]:
    """(lines of each conflict, "") from a schema-valid reply, or (None, why not). A resolution
    of every conflict stands whatever `skip_reason` says (a small model fills a required string)."""
    data = data or {}
    answers: dict[int, str] = {}
    for item in data.get("resolutions") or []:
        if isinstance(item, dict) and isinstance(item.get("conflict"), int):
            answers.setdefault(item["conflict"], str(item.get("lines", "")))
    missing = [n for n in range(1, count + 1) if n not in answers]
    skip = str(data.get("skip_reason") or "").strip()
    if missing and skip:
        return None, f"the analyst declined: {skip}"
    if missing:
        return None, f"the analyst resolved {count - len(missing)} of {count} conflicts"
    if any(PROTECT_OPEN in text or PROTECT_CLOSE in text for text in answers.values()):
        return None, "a resolution holds protected-region markers"
    texts = [answers[n].strip("\n") for n in range(1, count + 1)]
    return [[line + "\n" for line in text.splitlines()] if text.strip() else [] for text in texts], ""


def resolve(
    chat: ChatModel,
    conflicts: list[Conflict],
    sides: tuple[Side, Side],
    effort: Effort | None,
    accounting: Accounting,
) -> Resolution:
    """One analyst call for every conflict of the merge; paid through `accounting` (stage merge)."""
    messages = merge_messages(conflicts, *sides)
    prompt = [{"role": m.role, "content": m.content} for m in messages]
    with accounting.reserved("optimizer", "merge") as unit:
        try:
            reply = chat.complete(messages, schema=merge_schema(len(conflicts)), effort=effort, stage="merge")
        except FatalBackendError:
            raise  # what it paid is recorded on the way out (Accounting.reserved)
        except (StructuredOutputError, BackendError) as exc:
            unit.record(exc.paid)  # its attempts are paid all the same
            failure = {"prompt": prompt, "error": str(exc)}
            return Resolution(None, f"the analyst's reply failed: {exc}", failure)
        unit.record(reply.usage, reply.saved)
    lines, reason = parse_resolutions(reply.data, len(conflicts))
    return Resolution(lines, reason, {"prompt": prompt, "reply": reply.text})
