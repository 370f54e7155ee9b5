"""The trainer's progress: everything needed to continue a run after its last completed step."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from skillgrad.loop.search.pool import Pool
from skillgrad.run_folder import version_name
from skillgrad.skill import Edit

ValResults = dict[str, list[float]]  # task id -> score of each repeat


@dataclass
class TrainState:
    step: int = 0  # last completed step
    version: int = 0  # number of the current skill version (vNNNN)
    current_text: str = ""
    current_score: float = 0.0
    baseline_score: float = 0.0
    best_version: int = 0
    best_step: int = 0
    best_score: float = 0.0
    accepted: int = 0
    rejected: int = 0
    rejected_epoch: int = 0  # epoch the rejected buffer belongs to
    rejected_edits: list[Edit] = field(default_factory=list)
    # skill content hash -> its per-item val results (racing may leave a rejected one partial)
    val_results: dict[str, ValResults] = field(default_factory=dict)
    # skill content hash -> train task ids that passed with it (for the `no_failures` stop)
    train_passed: dict[str, list[str]] = field(default_factory=dict)
    rounds: int = 0  # sequential rounds of calls so far (observed), kept across a resume
    task_text_copies: int = 0  # edits dropped because they copy a task's text
    pool: Pool | None = None  # the frontier search's candidates (optimizer.search: frontier)

    def accept(self, text: str, score: float, step: int) -> bool:
        """The gate accepted the candidate `text` (validated at `score`): it becomes the current
        skill as a new version. True when it is also the best so far."""
        self.version += 1
        self.current_text, self.current_score = text, score
        self.accepted += 1
        if score <= self.best_score:
            return False
        self.best_score, self.best_version, self.best_step = score, self.version, step
        return True

    def reject(self, applied: list[Edit]) -> None:
        """The gate rejected the candidate: its edits join the rejected buffer of this epoch."""
        self.rejected += 1
        self.rejected_edits.extend(applied)

    def outcome(self) -> dict[str, Any]:
        """The scores and counts a run summary reports."""
        return {
            "baseline_val_score": self.baseline_score,
            "best_val_score": self.best_score,
            "best_version": version_name(self.best_version),
            "best_step": self.best_step,
            "steps": self.step,
            "accepted": self.accepted,
            "rejected": self.rejected,
            # a step is accepted, rejected, or skipped (no edit applied: nothing to validate)
            "skipped": max(0, self.step - self.accepted - self.rejected),
            "task_text_copies": self.task_text_copies,
        }

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["rejected_edits"] = [e.to_json() for e in self.rejected_edits]
        if self.pool is None:
            del data["pool"]
        else:
            data["pool"] = self.pool.to_json()
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TrainState:
        data = dict(data)
        data["rejected_edits"] = [Edit.from_json(e) for e in data.get("rejected_edits", [])]
        data.pop("val_scores", None)  # older runs kept only means; their incumbent is validated anew
        if data.get("pool") is not None:
            data["pool"] = Pool.from_json(data["pool"])
        return cls(**data)
