"""Steps of another kind that run between the trainer's own: the one hook through which
`optimizer.target: both` trains the description beside the body (skillgrad.activation.both)."""

from __future__ import annotations

from typing import Any, Protocol

from skillgrad.loop.state import TrainState


class Interleaved(Protocol):
    """Steps of another kind that run between the trainer's own (optimizer.target: both runs a
    description step after each body step: skillgrad.activation.both). Each method may raise what
    a step raises (BudgetStop, TrainingFailed, FatalBackendError, OSError); the trainer handles
    those as for its own steps."""

    def after_step(self, state: TrainState, step: int) -> None:
        """Run the step that follows the trainer's step `step` (the trainer's state given to keep
        in step with)."""
        ...

    def finish(self, state: TrainState) -> None:
        """Run the steps left when the trainer's own steps are over."""
        ...

    def final_test(self, state: TrainState) -> dict[str, Any]:
        """Figures added to the final test's."""
        ...

    def summary(self) -> dict[str, Any]:
        """Keys added to summary.json."""
        ...
