"""The greedy search: one incumbent, replaced by a candidate that passes the configured gate;
edits of rejected candidates are refused for the rest of the epoch, and in the epochs after it
for as long as no candidate is accepted (they were all rejected against the incumbent, so a
later epoch shows them to the analyst instead of proposing them again)."""

from __future__ import annotations

from typing import Any

from skillgrad.loop.decision.gate import Gate, ValResults
from skillgrad.loop.prefetch import PrefetchedRollouts
from skillgrad.loop.search.protocol import Proposal, Remaining, SearchContext
from skillgrad.loop.state import TrainState
from skillgrad.loop.stopping import stop_reason
from skillgrad.run_folder import version_name
from skillgrad.skilldoc import Edit


class GreedySearch:
    prefetches = True

    def __init__(self, ctx: SearchContext) -> None:
        self.ctx = ctx

    def begin(self, state: TrainState, step: int, epoch: int) -> None:
        if state.rejected_epoch != epoch:
            if state.version != state.rejected_version:  # rejected against an earlier incumbent
                state.rejected_edits = []
            state.rejected_epoch, state.rejected_version = epoch, state.version

    def merge_lineages(self, state: TrainState, step: int) -> Proposal | None:
        return None

    def gate(self, state: TrainState, candidate: str) -> Gate:
        return self.ctx.gate

    def accept(
        self, state: TrainState, step: int, text: str, results: ValResults, applied: list[Edit]
    ) -> str:
        best = state.accept(text, self.ctx.metric(results), step)
        self.ctx.run.write_skill(state.version, text)
        if best:
            self.ctx.run.write_best_skill(text)
        return version_name(state.version)

    def reject(self, state: TrainState, applied: list[Edit]) -> None:
        state.reject(applied)

    def stop_reason(
        self, state: TrainState, incumbent: ValResults, remaining: Remaining, ahead: PrefetchedRollouts | None
    ) -> tuple[str, str] | None:
        return stop_reason(self.ctx.gate, state, incumbent, remaining, ahead, self.ctx.settings.replays)

    def tested(self, state: TrainState) -> list[int]:
        return []

    def outcome(self, state: TrainState) -> dict[str, Any]:
        return {}
