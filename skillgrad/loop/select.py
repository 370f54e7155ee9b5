"""Textual learning rate: schedules for the max edits per step, and rank + clip of merged edits."""

from __future__ import annotations

import math
from typing import Protocol

from skillgrad.loop.merge import MergedEdit


class Schedule(Protocol):
    def __call__(self, step: int, total_steps: int, high: int, low: int) -> int: ...


def _progress(step: int, total_steps: int) -> float:
    """0.0 at the first step, 1.0 at the last (steps are 1-based)."""
    return 0.0 if total_steps <= 1 else min(1.0, (step - 1) / (total_steps - 1))


def constant(step: int, total_steps: int, high: int, low: int) -> int:
    return high


def linear(step: int, total_steps: int, high: int, low: int) -> int:
    return max(low, round(high - (high - low) * _progress(step, total_steps)))


def cosine(step: int, total_steps: int, high: int, low: int) -> int:
    t = _progress(step, total_steps)
    return max(low, round(low + (high - low) * (1 + math.cos(math.pi * t)) / 2))


SCHEDULES: dict[str, Schedule] = {"constant": constant, "linear": linear, "cosine": cosine}


class SupportRank:
    """Most-supported edits first (proposed by more minibatches, backed by more failures);
    ties keep proposal order so results do not depend on thread completion order."""

    def rank(self, edits: list[MergedEdit]) -> list[MergedEdit]:
        order = sorted(range(len(edits)), key=lambda i: (-edits[i].support, -edits[i].failures, i))
        return [edits[i] for i in order]


RANKERS: dict[str, type[SupportRank]] = {"support": SupportRank}


def clip(edits: list[MergedEdit], learning_rate: int) -> tuple[list[MergedEdit], list[MergedEdit]]:
    """(selected, dropped): at most `learning_rate` edits are applied per step."""
    return edits[:learning_rate], edits[learning_rate:]
