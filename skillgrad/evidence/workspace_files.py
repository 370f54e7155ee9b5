"""The files of one reflection workspace, built from an analyst's inputs (pure: the run folder
writes them, redacted). Per task `tasks/NN/`: task.md, answer.txt, expected.txt, score.json and,
when the analyst reads traces, trace_full.txt and transcript.jsonl; `skill/` (every text file of a
package) and rejected_edits.json; README.md, the listing the analyst's guide also shows.

The rollouts are redacted first (`redacted`), before anything is rendered from them: the line
numbers of trace_full.txt are those of the files as written, and the analyst's prompt (its trace
views) is built from the same redacted rollouts, so no secret reaches the optimizer, and a live run
and its replay from the call cache (which stores redacted sessions) send the same prompt over the
same files: the same cache key.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from skillgrad.evidence.fulltrace import full_trace, locator
from skillgrad.package.model import SKILL_FILE, as_package
from skillgrad.skilldoc import Edit
from skillgrad.templates import render
from skillgrad.traces.view import Locator
from skillgrad.values import Rollout, Task

PROMPTS = "skillgrad.evidence"
TRACE_FILE = "trace_full.txt"
TRANSCRIPT_FILE = "transcript.jsonl"
README = "README.md"
_META_SKIPPED = ("line",)  # bookkeeping of the data file, not part of the task


@dataclass(frozen=True)
class TaskEntry:
    folder: str  # tasks/NN
    line: str  # its line in the listing
    locate: Locator | None  # gap pointers into its trace_full.txt (None: no trace written)


@dataclass(frozen=True)
class WorkspaceFiles:
    files: dict[str, str]  # path inside the workspace -> text
    tasks: tuple[TaskEntry, ...]

    @property
    def listing(self) -> str:
        return "\n".join(t.line for t in self.tasks)

    @property
    def locators(self) -> tuple[Locator | None, ...]:
        return tuple(t.locate for t in self.tasks)


@dataclass(frozen=True)
class Redaction:
    text: Callable[[str], str]
    json: Callable[[Any], Any]


def redacted(rollout: Rollout, redact: Redaction) -> Rollout:
    """The rollout with every text an agent, a grader or a data file wrote redacted."""
    task, result, score = rollout.task, rollout.result, rollout.score
    clean_task = Task(
        task.id,
        redact.text(task.question),
        redact.text(task.context) if task.context else task.context,
        tuple(redact.text(a) for a in task.answers),
        redact.json(task.meta),
    )
    steps = [replace(s, text=redact.text(s.text)) for s in result.trace]
    clean_result = replace(
        result,
        answer=redact.text(result.answer),
        trace=steps,
        error=redact.text(result.error) if result.error else result.error,
        raw=redact.json(result.raw),
    )
    return Rollout(clean_task, clean_result, replace(score, feedback=redact.text(score.feedback)))


def _json(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, indent=1, default=str) + "\n"


def _details(rollout: Rollout) -> str:
    meta = {k: v for k, v in rollout.task.meta.items() if k not in _META_SKIPPED}
    if not meta:
        return ""
    return "\n## Task details (from the data set)\n\n```json\n" + _json(meta) + "```\n"


def _task_files(index: int, rollout: Rollout) -> dict[str, str]:
    task, score, result = rollout.task, rollout.score, rollout.result
    expected = "\n".join(task.answers) if task.answers else ""
    markdown = render(
        PROMPTS,
        "task_file",
        index=index,
        task_id=task.id,
        status="PASSED" if score.passed else "FAILED",
        score=f"{score.value:.2f}",
        question=task.question.strip(),
        context=(task.context or "").strip() or "(none)",
        expected=expected or "(none given: the grader's feedback says what was wanted)",
        feedback=score.feedback.strip() or "(none)",
        details=_details(rollout),
    )
    scored = {**score.to_json(), "agent_error": result.error if result.is_error else None}
    return {
        "task.md": markdown,
        "answer.txt": result.answer + "\n",
        "expected.txt": (expected or "(none: see the feedback in score.json)") + "\n",
        "score.json": _json(scored),
    }


def _transcript(rollout: Rollout) -> str:
    # Sorted keys: a session replayed from the call cache (stored canonical) reads the same.
    lines = (json.dumps(r, ensure_ascii=False, default=str, sort_keys=True) for r in rollout.result.raw)
    return "".join(line + "\n" for line in lines)


def _skill_files(skill: str) -> dict[str, str]:
    package = as_package(skill)
    files = {SKILL_FILE: skill} if package is None else package.files
    return {f"skill/{path}": text for path, text in sorted(files.items())}


def _task_entry(
    index: int, width: int, rollout: Rollout, include_traces: bool
) -> tuple[TaskEntry, dict[str, str]]:
    folder = f"tasks/{index:0{width}d}"
    files = {f"{folder}/{name}": text for name, text in _task_files(index, rollout).items()}
    status = "PASSED" if rollout.score.passed else "FAILED"
    line = f"- `{folder}/`: task {index} ({rollout.task.id}), {status}, score {rollout.score.value:.2f}"
    locate = None
    steps = rollout.result.trace
    if include_traces and steps:
        full = full_trace(steps, f"Task {index} ({rollout.task.id})")
        files[f"{folder}/{TRACE_FILE}"] = full.text
        locate = locator(f"{folder}/{TRACE_FILE}", full)
        errors = sum(1 for s in steps if s.is_error)
        line += f"; {TRACE_FILE}: {len(steps)} steps ({errors} errors), {full.spans[-1][1]} lines"
    if include_traces and rollout.result.raw:
        files[f"{folder}/{TRANSCRIPT_FILE}"] = _transcript(rollout)
    return TaskEntry(folder, line, locate), files


def build_workspace_files(
    skill: str, rollouts: list[Rollout], rejected: list[Edit], include_traces: bool
) -> WorkspaceFiles:
    """Every file of the workspace for `rollouts` (already `redacted`), and per task its listing
    line and gap pointers. Traces and transcripts only when the analyst reads traces
    (`model.trace_to_optimizer`)."""
    width = max(2, len(str(len(rollouts))))
    files: dict[str, str] = {}
    entries = []
    for index, rollout in enumerate(rollouts, 1):
        entry, task_files = _task_entry(index, width, rollout, include_traces)
        entries.append(entry)
        files.update(task_files)
    files.update(_skill_files(skill))
    files["rejected_edits.json"] = _json([e.to_json() for e in rejected])
    workspace_files = WorkspaceFiles(files, tuple(entries))
    files[README] = "# Reflection workspace\n\n" + workspace_files.listing + "\n"
    return workspace_files
