"""Which tasks each step trains on: the benchmark's splits (each loaded once) and the run's plan,
epochs of shuffled train batches, seeded per epoch so a resumed run sees the same batches."""

from __future__ import annotations

import math
import random

from skillgrad.benchmarks.base import Benchmark
from skillgrad.config import TrainConfig
from skillgrad.values import Task

Plan = list[tuple[int, int, list[Task]]]  # (step, epoch, batch) of the whole run


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


def make_plan(tasks: list[Task], train: TrainConfig) -> Plan:
    """Every step of the run, numbered from 1."""
    epochs = range(1, train.epochs + 1)
    steps = [(epoch, batch) for epoch in epochs for batch in epoch_batches(tasks, train, epoch)]
    return [(number, epoch, batch) for number, (epoch, batch) in enumerate(steps, start=1)]
