"""The trainer's progress: everything needed to continue a run after its last completed step.

`TrainState` is also the typed model of `state.json`: `from_json` validates what it reads (types,
bounds, no unknown key) and raises `StateError` saying what is wrong. A new field is one line
here, with a default, so the state.json of an older run still reads.

A search strategy's own state (the frontier's pool, state.json's `pool`) is the strategy's: its
model and its reading live with it (`loop/search/pool.py`, `read_state`), the checkpoint holds it
as a `SearchState`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Annotated, Any

from pydantic import ConfigDict, Field, NonNegativeInt, TypeAdapter, ValidationError

from skillgrad.errors import describe_validation
from skillgrad.run_folder import version_name
from skillgrad.skilldoc import Edit

Score = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]  # every score is clamped to [0, 1]
ValResults = dict[str, list[Score]]  # task id -> score of each repeat
# What every state.json has held since the first one: a file without them is not a checkpoint.
CHECKPOINT_KEYS = ("step", "version", "current_text", "current_score", "best_version", "best_score")


class StateError(ValueError):
    """A state.json that is not a checkpoint; the message says what is wrong (one line)."""


class SearchState(ABC):
    """A search strategy's own part of the checkpoint, typed and read back by the strategy."""

    @abstractmethod
    def to_json(self) -> dict[str, Any]: ...

    @abstractmethod
    def inconsistency(self, version: int, best_version: int) -> str | None:
        """What no run leaves beside a current version `version` and a best `best_version`, or None."""


# state.json's `pool` -> the strategy's state; pydantic's ValidationError when it is not one
SearchStateReader = Callable[[Any], SearchState]


@dataclass
class TrainState:
    __pydantic_config__ = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    step: NonNegativeInt = 0  # last completed step
    version: NonNegativeInt = 0  # number of the current skill version (vNNNN)
    current_text: str = ""
    current_score: Score = 0.0
    baseline_score: Score = 0.0
    best_version: NonNegativeInt = 0
    best_step: NonNegativeInt = 0
    best_score: Score = 0.0
    accepted: NonNegativeInt = 0
    rejected: NonNegativeInt = 0
    rejected_epoch: NonNegativeInt = 0  # epoch the rejected buffer belongs to
    # the current version when that epoch began: the buffer carries into the next epoch while it
    # is still the current one (its edits were all rejected against this very skill)
    rejected_version: NonNegativeInt = 0
    rejected_edits: list[Edit] = field(default_factory=list)
    # skill content hash -> its per-item val results (racing may leave a rejected one partial);
    # scores only: a run whose agent failed is in val_missing, never here
    val_results: dict[str, ValResults] = field(default_factory=dict)
    # skill content hash -> item -> the repeats (0-based) of its last validation whose agent
    # failed: no outcome, left out of its comparisons, run again when the skill is validated again
    val_missing: dict[str, dict[str, list[NonNegativeInt]]] = field(default_factory=dict)
    # skill content hash -> item -> whether each val outcome's answer held the form the val
    # split's expected answers share (none recorded where they share none): `tie_break.form`
    val_forms: dict[str, dict[str, list[bool]]] = field(default_factory=dict)
    # skill content hash -> train task ids that passed with it (for the `no_failures` stop)
    train_passed: dict[str, list[str]] = field(default_factory=dict)
    # skill content hash -> what each step reflected with it saw (`stopping.step_inputs`), for the
    # `no_new_evidence` stop
    reflected: dict[str, list[str]] = field(default_factory=dict)
    rounds: NonNegativeInt = 0  # sequential rounds of calls so far (observed), kept across a resume
    task_text_copies: NonNegativeInt = 0  # edits dropped because they copy a task's text
    # reflections that returned a patch: once one has, a step whose every analyst's reply is
    # unusable is skipped rather than ending the run (`Reflection.reflect`)
    reflections_answered: NonNegativeInt = 0
    # the search strategy's own state: the frontier search's candidates (optimizer.search: frontier)
    pool: SearchState | None = None

    def accept(self, text: str, score: float, step: int) -> bool:
        """The gate accepted the candidate `text` (validated at `score`): it becomes the current
        skill as a new version. True when it is also the best so far: a higher score, or the
        best's own score when it replaced the best (the gate preferred it: `tie_break`)."""
        replaced_best = self.version == self.best_version
        self.version += 1
        self.current_text, self.current_score = text, score
        self.accepted += 1
        if score < self.best_score or (score == self.best_score and not replaced_best):
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
            # val runs whose agent failed, left out (the last validation of each skill): not zeros
            "val_missing": sum(len(r) for missing in self.val_missing.values() for r in missing.values()),
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
    def from_json(cls, data: Any, read_pool: SearchStateReader | None = None) -> TrainState:
        """The state a checkpoint holds, its `pool` read by the search's `read_pool`; StateError
        (one line) for anything that is not one."""
        if not isinstance(data, dict):
            raise StateError(f"expected a JSON object, got {type(data).__name__}")
        missing = [key for key in CHECKPOINT_KEYS if key not in data]
        if missing:
            raise StateError(f"no {', '.join(missing)}: this is not a checkpoint skillgrad wrote")
        pool = data.get("pool")
        # older runs: means only (val_scores), redone
        data = {k: v for k, v in data.items() if k not in ("val_scores", "pool")}
        try:
            state = _STATE.validate_python(data)
            if pool is not None:
                if read_pool is None:
                    raise StateError("pool: a search strategy's state, but no strategy to read it")
                state.pool = read_pool(pool)
        except ValidationError as exc:
            raise StateError(describe_validation(exc)) from None
        problem = state.inconsistency()
        if problem:
            raise StateError(problem)
        return state

    def inconsistency(self) -> str | None:
        """What no run of the trainer can leave in a checkpoint, or None."""
        if self.best_version > self.version:
            return f"best_version {self.best_version} is past the current version {self.version}"
        if self.best_step > self.step:
            return f"best_step {self.best_step} is past the last completed step {self.step}"
        if self.accepted + self.rejected > self.step:
            return f"{self.accepted} accepted + {self.rejected} rejected steps, but only {self.step} ran"
        if self.pool is not None:
            return self.pool.inconsistency(self.version, self.best_version)
        return None


_STATE = TypeAdapter(TrainState)
