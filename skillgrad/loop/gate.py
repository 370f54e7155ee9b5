"""The validation gate: a pure accept/reject decision, chosen by name in `GATES`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class GateDecision:
    accepted: bool
    reason: str


class Gate(Protocol):
    def decide(self, candidate: float, current: float) -> GateDecision: ...


class StrictGate:
    """Accept only a strictly higher validation score: a tie keeps the shorter, proven skill."""

    epsilon = 1e-9

    def decide(self, candidate: float, current: float) -> GateDecision:
        if candidate > current + self.epsilon:
            return GateDecision(True, f"validation {candidate:.4f} > current {current:.4f}")
        relation = "ties" if abs(candidate - current) <= self.epsilon else "is below"
        return GateDecision(False, f"validation {candidate:.4f} {relation} current {current:.4f}")


GATES: dict[str, type[Gate]] = {"strict": StrictGate}
