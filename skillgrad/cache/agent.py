"""The target role's cache wrapper: `CachedAgent` answers a task already done with the same
skill, agent settings and prepared workspace from the store, workspace files included (see
`skillgrad.cache`)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillgrad.backends.interface import Agent
from skillgrad.cache.store import ZERO_USAGE, CacheStats, CallCache, request_key
from skillgrad.errors import BackendError, BudgetExceeded
from skillgrad.snapshot import restore_tree, safe_relative_path, snapshot_tree, tree_digest
from skillgrad.values import AgentResult, Task, TraceStep, Usage

DEFAULT_MAX_WORKSPACE_BYTES = 8 * 1024 * 1024


@dataclass
class CachedAgentResult(AgentResult):
    """An AgentResult served from the cache: `usage` is zero (unpaid), `saved` the original."""


class CachedAgent:
    """Agent wrapper: a task already done with the same skill, agent and prepared workspace is
    answered from the cache (see `skillgrad.cache`). Error results are never stored.

    `settings` names every agent option that shapes the outcome (effort, tools, max turns, ...)."""

    def __init__(
        self,
        inner: Agent,
        cache: CallCache,
        *,
        salt: str = "",
        settings: dict[str, Any] | None = None,
        snapshot_workspace: bool = True,
        max_workspace_bytes: int = DEFAULT_MAX_WORKSPACE_BYTES,
        redact_file: Callable[[bytes], bytes] | None = None,
        stats: CacheStats | None = None,
        on_paid: Callable[[Usage], None] | None = None,
    ) -> None:
        self.inner = inner
        self.redact_file = redact_file
        self.on_paid = on_paid  # usage of each run that reached the agent, as it returns
        self.cache = cache
        self.salt = salt
        self.settings = dict(settings or {})
        self.snapshot_workspace = snapshot_workspace
        self.max_workspace_bytes = max_workspace_bytes
        self.stats = stats or CacheStats()
        self.name = inner.name
        self.model = inner.model

    def with_salt(self, salt: str) -> CachedAgent:
        """The same agent, cache and counters under another salt, for deliberate resampling."""
        twin = copy.copy(self)
        twin.salt = salt
        return twin

    def _key(self, task: Task, skill: str, workspace: Path) -> str | None:
        try:
            request = {
                "kind": "agent",
                "backend": self.name,
                "model": self.model,
                "settings": self.settings,
                "skill": skill,
                "task": task.to_json(),
                "workspace": tree_digest(workspace),
                "snapshot_workspace": self.snapshot_workspace,
                "salt": self.salt,
            }
            return request_key(request)
        except (TypeError, ValueError, OSError):
            return None

    def run(self, task: Task, skill: str, workspace: Path) -> AgentResult:
        key = self._key(task, skill, workspace) if self.cache.enabled else None
        if key is None:
            self.stats.bypass(self.cache.enabled)
            return self._paid_run(task, skill, workspace)
        with self.cache.claim(key):
            hit = self._lookup(key, workspace)
            if hit is not None:
                return hit
            result = self._paid_run(task, skill, workspace)
            self.stats.miss()
            if not result.is_error and not self._store(key, result, workspace):
                self.stats.skip()
            return result

    def _paid_run(self, task: Task, skill: str, workspace: Path) -> AgentResult:
        """The inner agent's run, its usage reported as paid; a run the budget or a backend ended
        by raising reports what its attempts had paid (`paid`) before the error goes on: a retry
        refused at the cap after a timed-out attempt was in the ledger but not in paid.jsonl."""
        try:
            result = self.inner.run(task, skill, workspace)
        except (BackendError, BudgetExceeded) as failed:
            self._report_paid(failed.paid)
            raise
        self._report_paid(result.usage)
        return result

    def _report_paid(self, usage: Usage | None) -> None:
        if self.on_paid is not None and usage is not None:
            self.on_paid(usage)

    def _store(self, key: str, result: AgentResult, workspace: Path) -> bool:
        files = None
        if self.snapshot_workspace:
            try:
                files = snapshot_tree(workspace, self.max_workspace_bytes, self.redact_file)
            except OSError:
                return False
            if files is None:  # too large to keep: leave uncached rather than replay without files
                return False
        payload = {
            "answer": result.answer,
            "trace": [step.to_json() for step in result.trace],
            "usage": result.usage.to_json(),
            "raw": result.raw,
            "has_workspace": result.workspace is not None,
            "files": files,
        }
        return self.cache.put(key, payload)

    def _lookup(self, key: str, workspace: Path) -> AgentResult | None:
        payload = self.cache.get(key)
        if payload is None:
            return None
        try:
            files = payload["files"]
            if self.snapshot_workspace and not (
                isinstance(files, dict)
                and all(isinstance(v, str) and safe_relative_path(k) for k, v in files.items())
            ):
                return None
            hit = CachedAgentResult(
                answer=str(payload["answer"]),
                trace=[TraceStep.from_json(step) for step in payload["trace"]],
                usage=ZERO_USAGE,
                raw=list(payload["raw"]),
                workspace=workspace if payload["has_workspace"] else None,
                saved=Usage.from_json(payload["usage"]),
            )
        except (KeyError, TypeError, ValueError):
            return None
        if self.snapshot_workspace:
            try:
                restore_tree(workspace, files)
            except (OSError, ValueError) as exc:
                # The workspace is now half-restored: running the agent in it would be wrong, so
                # this task fails (unstored) and is retried from a fresh workspace on resume.
                return AgentResult(answer="", is_error=True, error=f"cache restore failed: {exc}")
        self.stats.hit(hit.saved or ZERO_USAGE)
        return hit
