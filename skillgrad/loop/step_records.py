"""The typed records a training step leaves, shared by the writer (the trainer) and the readers
(report, progress, tracking): `GateRecord` (steps/NNNN/gate.json), `StepRecord` (one line of
history.jsonl) and `StepEnd` (the `step_end` progress event).

`to_json` writes the keys in the order the run folder has always had; `from_json` reads what a
writer of any version left, tolerating missing or mistyped fields (a reader never trusts a file).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any

from skillgrad.config import OptimizerConfig
from skillgrad.loop.decision.gate import GateDecision, mean_of
from skillgrad.loop.decision.judge import RacedOut
from skillgrad.loop.decision.racing import Validation
from skillgrad.run_folder import version_name
from skillgrad.skilldoc import EditOutcome

ACTIONS = ("accepted", "rejected", "skipped")


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


@dataclass(frozen=True)
class GateRecord:
    """What gate.json says: the decision, the test with its effect and p-value, and what the
    validation cost (None / 0 where no candidate was validated)."""

    accepted: bool
    reason: str
    gate: str
    candidate_score: float | None
    current_score: float
    cached: bool
    test: str | None
    effect: float | None
    p_value: float | None
    alpha: float | None
    validation: str
    repeats: int
    items_validated: int
    raced_out: bool
    waves: int
    calls: int
    skip_reason: str | None = None  # why a candidate with edits was not validated (a failed check)
    missing: int = 0  # the candidate's runs whose agent failed: no outcome, left out of the test
    held: bool = False  # not kept only because of those (loop/decision/judge.py): its edits stay allowed
    # raced out: the mean over the items it ran on, and the most its full validation could score
    partial_score: float | None = None
    candidate_bound: float | None = None

    @classmethod
    def of(
        cls,
        decision: GateDecision | None,
        val: Validation | None,
        current: float,
        opt: OptimizerConfig,
        raced: RacedOut | None = None,
        gate: str | None = None,
    ) -> GateRecord:
        """The record of `decision` on `val`; a raced-out one (`raced`) has no candidate_score.
        `gate`: the gate's name (a caller's object: its label); None: optimizer.gate."""
        judged = decision.to_json() if decision is not None else {}
        return cls(
            accepted=bool(decision and decision.accepted),
            reason=decision.reason if decision else "no edit applied",
            gate=gate or opt.gate,
            candidate_score=mean_of(val.results) if val and raced is None else None,
            current_score=current,
            cached=bool(val and val.calls == 0),
            test=judged.get("test"),
            effect=judged.get("effect"),
            p_value=judged.get("p_value"),
            alpha=judged.get("alpha"),
            validation=opt.validation,
            repeats=opt.val_repeats,
            items_validated=len(val.results) if val else 0,
            raced_out=bool(val and val.raced_out),
            waves=val.waves if val else 0,
            calls=val.calls if val else 0,
            missing=val.missing_count if val else 0,
            held=bool(decision and decision.held),
            partial_score=round(raced.score, 6) if raced else None,
            candidate_bound=round(raced.bound, 6) if raced else None,
        )

    @classmethod
    def skipped(
        cls, current: float, opt: OptimizerConfig, blocked: str | None, gate: str | None = None
    ) -> GateRecord:
        """No candidate validated: no edit applied, or a check refused it (`blocked`)."""
        record = cls.of(None, None, current, opt, gate=gate)
        return record if blocked is None else replace(record, reason=blocked, skip_reason=blocked)

    def to_json(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        if self.skip_reason is None:
            del data["skip_reason"]
        return data


@dataclass(frozen=True)
class StepRecord:
    """One line of history.jsonl: what a step did and what it cost."""

    step: int
    epoch: int | None
    learning_rate: int | None
    train_score: float | None
    dropped: dict[str, int]
    current_score: float | None  # the incumbent's score when the step started
    edits: list[dict[str, Any]]
    version: str | None  # the skill version an accepted step made
    cached: bool
    action: str
    val_score: float | None
    best_score: float | None
    skip_reason: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    # a raced-out candidate (val_score None): the items it ran on, its score there and its bound
    raced_out: RacedOut | None = None
    missing: int = 0  # the candidate's val runs whose agent failed (left out of the test)
    held: bool = False  # not kept only because of those runs (GateRecord.held)

    def to_json(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["raced_out"] = self.raced_out.to_json() if self.raced_out else None
        for key, default in (("skip_reason", None), ("raced_out", None), ("missing", 0), ("held", False)):
            if data[key] == default:
                del data[key]
        return data

    @classmethod
    def from_json(cls, row: dict[str, Any]) -> StepRecord:
        step = row.get("step")
        epoch, lr = row.get("epoch"), row.get("learning_rate")
        version, reason = row.get("version"), row.get("skip_reason")
        dropped, edits, usage = row.get("dropped"), row.get("edits"), row.get("usage")
        return cls(
            step=step if isinstance(step, int) and not isinstance(step, bool) else 0,
            epoch=epoch if isinstance(epoch, int) else None,
            learning_rate=lr if isinstance(lr, int) else None,
            train_score=_num(row.get("train_score")),
            dropped=dropped if isinstance(dropped, dict) else {},
            current_score=_num(row.get("current_score")),
            edits=[e for e in edits if isinstance(e, dict)] if isinstance(edits, list) else [],
            version=version if isinstance(version, str) else None,
            cached=row.get("cached") is True,
            action=str(row.get("action", "")),
            val_score=_num(row.get("val_score")),
            best_score=_num(row.get("best_score")),
            skip_reason=reason if isinstance(reason, str) else None,
            usage=usage if isinstance(usage, dict) else {},
            raced_out=RacedOut.from_json(row.get("raced_out")),
            missing=_count(row.get("missing")),
            held=row.get("held") is True,
        )


@dataclass(frozen=True)
class StepEnd:
    """The `step_end` event: the step's decision, the run's usage so far and the step's own
    (each by role)."""

    step: int
    epoch: int | None
    action: str
    val_score: float | None
    best_score: float | None
    current_score: float | None  # the incumbent's score before the step
    edits_applied: int
    usage: dict[str, Any]
    step_usage: dict[str, Any] = field(default_factory=dict)
    raced_out: RacedOut | None = None  # as StepRecord's
    missing: int = 0
    held: bool = False  # as StepRecord's
    version: str | None = None  # the skill version an accepted step made
    skip_reason: str | None = None  # a skipped step: why no candidate was validated, in words

    def to_json(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["raced_out"] = self.raced_out.to_json() if self.raced_out else None
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> StepEnd:
        step, epoch, applied = data.get("step"), data.get("epoch"), data.get("edits_applied")
        usage, step_usage = data.get("usage"), data.get("step_usage")
        return cls(
            step=step if isinstance(step, int) and not isinstance(step, bool) else 0,
            epoch=epoch if isinstance(epoch, int) else None,
            action=str(data.get("action", "?")),
            val_score=_num(data.get("val_score")),
            best_score=_num(data.get("best_score")),
            current_score=_num(data.get("current_score")),
            edits_applied=applied if isinstance(applied, int) else 0,
            usage=usage if isinstance(usage, dict) else {},
            step_usage=step_usage if isinstance(step_usage, dict) else {},
            raced_out=RacedOut.from_json(data.get("raced_out")),
            missing=_count(data.get("missing")),
            held=data.get("held") is True,
            version=data["version"] if isinstance(data.get("version"), str) else None,
            skip_reason=data["skip_reason"] if isinstance(data.get("skip_reason"), str) else None,
        )


def skip_note(dropped: dict[str, int], outcomes: list[EditOutcome], blocked: str | None, same: bool) -> str:
    """Why a step validated no candidate, in words: the check that refused it (`blocked`), edits
    that left the skill as it was (`same`), or what became of the proposed edits (`dropped`:
    `Selection.counts()`; `outcomes`: the selected edits applied or not)."""
    if blocked:
        return f"the candidate was refused: {blocked}"
    if same and any(o.status == "applied" for o in outcomes):
        return "the applied edits leave the skill as it was"
    parts = [f"{n} {why}" for why, n in dropped.items() if n]
    if failed := sum(1 for o in outcomes if o.status != "applied"):
        parts.append(f"{failed} failed to apply")
    if not parts:
        return "no edit proposed"
    proposed = sum(dropped.values()) + len(outcomes)
    return f"no edit applied: {proposed} proposed ({', '.join(parts)})"


def pass_label(version: int, best: int) -> str:
    """A final test pass's name in the progress: `v0000 (initial)`, `v0003 (best)`, `v0000
    (initial, best)`; another version the search reports, by its name alone."""
    roles = [name for name, v in (("initial", 0), ("best", best)) if v == version]
    return version_name(version) + (f" ({', '.join(roles)})" if roles else "")
