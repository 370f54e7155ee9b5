"""A parsed session, whatever harness wrote it: its steps, answer, outcome and how we know it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from skillgrad.values import TraceStep, Usage


@dataclass
class ParsedSession:
    steps: list[TraceStep] = field(default_factory=list)
    final_answer: str = ""
    is_error: bool = False
    terminal_reason: str | None = None
    usage: Usage | None = None  # from the result record only; None when there is none
    errors: list[str] = field(default_factory=list)  # the result's error texts, when it failed
    structured_output: Any = None
    finished: bool = False  # the session ended (a result record, or an ending the records show)
    runs: int = 1  # runs found in the file; the steps and answer are the last one's
    skipped_lines: int = 0  # lines of the file that were not JSON records (torn, cut or noise)
    evidence: str = ""  # what decided finished or unfinished, in words
    warnings: list[str] = field(default_factory=list)  # what was given but could not be placed
    lone_agent: str | None = None  # the agentId when the file is one subagent's, read on its own

    @property
    def status(self) -> str:
        """finished, failed (it ended, and said it failed) or unfinished."""
        if not self.finished:
            return "unfinished"
        return "failed" if self.is_error else "finished"
