"""`skillgrad harvest`: session files -> tasks.jsonl (redacted, clustered) and a printed summary.

Each line of the task set is a task the `harvested` benchmark reads:
  {"id", "question": the request, "answers": [],
   "meta": {"cluster", "cluster_size", "source", "files_read", "files_changed", "signals",
            "accepted", "final_answer", "rubric", "provenance": {"file", "line", "session_id", "timestamp"}}}
Nothing is sent anywhere: harvesting reads files and writes one file.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from skillgrad.atomic import write_text_atomic
from skillgrad.errors import UserError
from skillgrad.harvest.grouping import cluster_ids
from skillgrad.harvest.secrets import redact_tree
from skillgrad.harvest.sessions import project_folder, session_files
from skillgrad.harvest.tasks import HarvestedTask, session_tasks
from skillgrad.redact import Redactor
from skillgrad.traces.steps import one_line

_ANSWER_CHARS = 2000


@dataclass
class HarvestSummary:
    sessions: int
    tasks: int
    clusters: int
    recurring: list[tuple[int, str]]  # (size, a request) of the largest clusters
    signals: dict[str, int]

    def lines(self, out: Path) -> list[str]:
        head = (
            f"harvested {self.tasks} tasks in {self.clusters} clusters from {self.sessions} sessions -> {out}"
        )
        rows = [head, "signals: " + ", ".join(f"{k} {v}" for k, v in self.signals.items())]
        rows += [f"  {size}x  {request}" for size, request in self.recurring]
        return rows


def _on_or_after(task: HarvestedTask, since: datetime | None) -> bool:
    """A task asked on or after `since` (by its record's timestamp; kept when it has none)."""
    stamp = task.provenance.get("timestamp")
    if since is None or not isinstance(stamp, str):
        return True
    try:
        when = datetime.fromisoformat(stamp)
    except ValueError:
        return True
    return (when if when.tzinfo else when.replace(tzinfo=UTC)) >= since


def _task_id(task: HarvestedTask) -> str:
    origin = f"{task.provenance['file']}:{task.provenance['line']}"
    return "h" + hashlib.sha256(origin.encode("utf-8")).hexdigest()[:12]


def _record(task: HarvestedTask) -> dict[str, Any]:
    """The task set's line for `task`, its cluster still to be filled in."""
    return {
        "id": _task_id(task),
        "question": task.request,
        "answers": [],
        "meta": {
            "source": task.source,
            "files_read": task.files_read,
            "files_changed": task.files_changed,
            "signals": task.signals,
            "accepted": task.accepted,
            "final_answer": task.final_answer[:_ANSWER_CHARS],
            "rubric": task.rubric,
            "provenance": task.provenance,
        },
    }


def harvest(source: Path, since: datetime | None, out: Path, redactor: Redactor) -> HarvestSummary:
    """Read every session under `source`, write the task set to `out` (atomically), summarise."""
    files = session_files(source, since)
    tasks = [task for path in files for task in session_tasks(path) if _on_or_after(task, since)]
    if not tasks:
        when = f" on or after {since.date()}" if since else ""
        raise UserError(
            f"--from {source}: {len(files)} session file(s) read, but no user request{when} in them"
        )
    records = [redact_tree(_record(t), redactor.redact) for t in tasks]
    # Clustered on the redacted text: a secret inside a request never tells two requests apart.
    clusters = cluster_ids([r["question"] for r in records])
    sizes = Counter(clusters)
    for record, cluster in zip(records, clusters, strict=True):
        record["meta"] = {"cluster": cluster, "cluster_size": sizes[cluster], **record["meta"]}
    write_text_atomic(out, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    first_request = {c: r["question"] for c, r in reversed(list(zip(clusters, records, strict=True)))}
    recurring = [(n, one_line(first_request[c])[:100]) for c, n in sizes.most_common(5) if n > 1]
    signals = {
        "tool errors": sum(t.signals["tool_errors"] for t in tasks),
        "interrupts": sum(t.signals["interrupts"] for t in tasks),
        "rejected tool uses": sum(t.signals["rejections"] for t in tasks),
        "corrected": sum(1 for t in tasks if t.signals.get("correction")),
        "accepted": sum(1 for t in tasks if t.accepted),
    }
    return HarvestSummary(len(files), len(tasks), len(sizes), recurring, signals)


def default_source(cwd: Path, home: Path) -> Path:
    folder = project_folder(cwd, home)
    if not folder.is_dir():
        raise UserError(
            f"no Claude Code sessions for {cwd} (looked in {folder}); "
            "pass --from ~/.claude/projects/<project>"
        )
    return folder


def harvest_redactor() -> Redactor:
    """Secrets known by value: every credential in this process's environment."""
    return Redactor.from_config({}, os.environ)
