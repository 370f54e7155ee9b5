"""The protocol between the trainer and a search strategy, and what a strategy is built with."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from skillgrad.backends.interface import ChatModel
from skillgrad.loop.accounting import Accounting
from skillgrad.loop.checks import CandidateChecks
from skillgrad.loop.decision.gate import Gate, ValResults, mean_of
from skillgrad.loop.event_bus import Events
from skillgrad.loop.plan import PlanStep
from skillgrad.loop.prefetch import PrefetchedRollouts
from skillgrad.loop.search.parents import ParentRule
from skillgrad.loop.state import TrainState
from skillgrad.package.doc import PackageDoc
from skillgrad.run_folder import RunDir
from skillgrad.skilldoc import Edit, EditOutcome, SkillDoc
from skillgrad.values import Effort

# A candidate as the trainer validates it: the skill, its edits' outcomes, why it may not be validated.
Proposal = tuple[SkillDoc | PackageDoc, list[EditOutcome], str | None]
Remaining = Sequence[PlanStep]  # the plan's steps still to run (lazy: read only what is needed)


@dataclass(frozen=True)
class SearchSettings:
    """The run's settings a strategy reads (from the config, by the trainer), none other."""

    seed: int  # train.seed: each step's parent draw is seeded by it and the step
    merge_every: int  # optimizer.merge_every: every n-th frontier step merges two lineages (0: never)
    parent: ParentRule  # optimizer.parent's rule, or the caller's (parent=)
    parent_name: str  # its name in progress and summary.json: optimizer.parent, or its label
    # a train task rolled out again with the same skill is its earlier answer replayed from the
    # call cache (cache.keys.replays): what the no_failures and no_new_evidence stops rely on
    replays: bool
    max_chars: int | None  # skill.max_chars: a merged skill's budget (None: none)
    effort: Effort | None  # the optimizer's reasoning effort (a merge's analyst call)


@dataclass(frozen=True)
class SearchContext:
    """What a strategy may use: the run's settings and gate, its folder, progress, paid calls, the
    optimizer (a merge's analyst), the checks a candidate passes before it is validated, and what
    a skill's score is over its per-item results (the mean; trigger F1 for a description)."""

    settings: SearchSettings
    gate: Gate
    run: RunDir
    events: Events
    accounting: Accounting
    optimizer: ChatModel | None
    checks: CandidateChecks
    metric: Callable[[ValResults], float] = mean_of


@runtime_checkable
class Search(Protocol):
    """How a run walks the space of skills (`optimizer.search`, or `search=` a class or function
    that builds one from a `SearchContext`). Before each step the trainer calls
    `begin`, which makes the step's parent the state's current skill (text, score, the rejected
    edits its analysts see); it validates a candidate against that parent with `gate(...)` and
    hands the decision back (`accept` / `reject`). A strategy keeps everything a resumed run needs
    in the state (state.json); given the same state it makes the same choices.

    Errors: a strategy raises only what the trainer's own stages raise (BudgetStop, a
    FatalBackendError, an OSError of the run folder); a model's failed or unusable reply is
    recorded and its work skipped, never raised."""

    # The next step's parent is this step's candidate when it is accepted (so its rollouts may
    # start while the candidate validates, `train.overlap`).
    prefetches: bool

    def begin(self, state: TrainState, step: int, epoch: int) -> None: ...

    def merge_lineages(self, state: TrainState, step: int) -> Proposal | None:
        """A candidate made without rollouts (a lineage merge) to validate in this step, or None:
        the step makes its candidate from its train batch as usual. May re-point the parent."""
        ...

    def gate(self, state: TrainState, candidate: str) -> Gate:
        """The gate `candidate` must pass against the state's current skill (racing's bound too)."""
        ...

    def accept(
        self, state: TrainState, step: int, text: str, results: ValResults, applied: list[Edit]
    ) -> str:
        """Keep the candidate `text`: a new skill version (written, and the best skill if it is the
        best); returns the version's name."""
        ...

    def reject(self, state: TrainState, applied: list[Edit]) -> None: ...

    def stop_reason(
        self, state: TrainState, incumbent: ValResults, remaining: Remaining, ahead: PrefetchedRollouts | None
    ) -> tuple[str, str] | None:
        """(code, sentence) when no remaining step can change the result, else None."""
        ...

    def tested(self, state: TrainState) -> list[int]:
        """Versions the final test also runs, reported only (the initial and the best always run)."""
        ...

    def outcome(self, state: TrainState) -> dict[str, Any]:
        """What summary.json says of the search (nothing for greedy)."""
        ...
