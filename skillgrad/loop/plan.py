"""Which tasks each step trains on: the benchmark's splits (each loaded once) and the run's plan,
epochs of shuffled train batches, seeded per epoch so a resumed run sees the same batches.

The plan is lazy: a step's batch is made when it is asked for (an epoch's shuffle at a time), so
`train.epochs` costs nothing until the steps run, however large it is.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator, Sequence
from functools import lru_cache
from typing import overload

from skillgrad.benchmarks.contract import Benchmark
from skillgrad.config import TrainConfig
from skillgrad.values import Task

PlanStep = tuple[int, int, list[Task]]  # (step, epoch, batch)


class Splits:
    """`splits("val")`: the benchmark's tasks of that split, loaded on first use."""

    def __init__(self, benchmark: Benchmark) -> None:
        self.benchmark = benchmark
        self._loaded: dict[str, list[Task]] = {}

    def __call__(self, split: str) -> list[Task]:
        if split not in self._loaded:
            self._loaded[split] = self.benchmark.load(split)  # type: ignore[arg-type]
        return self._loaded[split]


def epoch_batches(tasks: list[Task], train: TrainConfig, epoch: int) -> list[list[Task]]:
    """The epoch's shuffled train batches."""
    shuffled = list(tasks)
    random.Random(f"{train.seed}:{epoch}").shuffle(shuffled)
    size = train.batch_size
    return [shuffled[i : i + size] for i in range(0, len(shuffled), size)]


def steps_per_epoch(tasks: list[Task], train: TrainConfig) -> int:
    return math.ceil(len(tasks) / train.batch_size)


class Plan(Sequence[PlanStep]):
    """Every step of the run, numbered from 1: `plan[i]` is step i + 1 as (step, epoch, batch);
    a slice is a plan of those steps. Nothing is built before it is asked for."""

    def __init__(self, tasks: list[Task], train: TrainConfig, indexes: range | None = None) -> None:
        self._tasks = tasks
        self._train = train
        self._per_epoch = steps_per_epoch(tasks, train)
        self._indexes = indexes if indexes is not None else range(train.epochs * self._per_epoch)
        # the last epochs' batches: a step and its neighbours share them (a shuffle per epoch)
        self._batches = lru_cache(maxsize=2)(lambda epoch: epoch_batches(tasks, train, epoch))

    def __len__(self) -> int:
        return len(self._indexes)

    @overload
    def __getitem__(self, index: int) -> PlanStep: ...

    @overload
    def __getitem__(self, index: slice) -> Plan: ...

    def __getitem__(self, index: int | slice) -> PlanStep | Plan:
        if isinstance(index, slice):
            return Plan(self._tasks, self._train, self._indexes[index])
        number = self._indexes[index]  # an IndexError past the end, as a list's
        epoch, position = divmod(number, self._per_epoch)
        return number + 1, epoch + 1, self._batches(epoch + 1)[position]

    def __iter__(self) -> Iterator[PlanStep]:
        return (self[i] for i in range(len(self)))

    def first_after(self, step: int) -> int:
        """The index of the first step after step `step` in the whole run's plan (its length when
        none is left)."""
        return min(max(step, 0), len(self))


def make_plan(tasks: list[Task], train: TrainConfig) -> Plan:
    """Every step of the run, numbered from 1."""
    return Plan(tasks, train)
