"""Early stop: the reasons a run may end before its last step, checked before every step.

- `no_headroom`: even a candidate with full marks on every val item would be rejected by the
  gate (a strict gate once the incumbent scores 1.0; a paired gate once no result could be
  significant), so no later step can change the skill.
- `no_failures`: every task of every remaining train batch has already passed with the current
  skill in this run (rolled out ahead, or in an earlier epoch: the call cache would replay the
  same passes), so no remaining step has a failure to learn from.
"""

from __future__ import annotations

from collections.abc import Iterable

from skillgrad.loop.ahead import Ahead
from skillgrad.loop.gate import Gate, ValResults
from skillgrad.loop.plan import PlanStep
from skillgrad.loop.state import TrainState
from skillgrad.skill import SkillDoc


def remaining_tasks(remaining: Iterable[PlanStep]) -> set[str]:
    """The ids of the train tasks the remaining steps run. Read up to the end of the epoch after
    the first one: every later epoch holds the same tasks, so this is bounded however many remain."""
    tasks: set[str] = set()
    first_epoch: int | None = None
    for _, epoch, batch in remaining:
        first_epoch = epoch if first_epoch is None else first_epoch
        if epoch > first_epoch + 1:
            break
        tasks.update(task.id for task in batch)
    return tasks


def stop_reason(
    gate: Gate,
    state: TrainState,
    incumbent: ValResults,
    remaining: Iterable[PlanStep],
    ahead: Ahead | None,
) -> tuple[str, str] | None:
    """(code, sentence) when the run should stop before the first of `remaining`, else None."""
    if not gate.can_pass({}, incumbent):
        score = state.current_score
        return "no_headroom", f"the skill scores {score:.4f} on val: no candidate can pass the gate any more"
    passed = set(state.train_passed.get(SkillDoc(state.current_text).content_hash, []))
    no_failures = (
        "no_failures",
        "every remaining train batch passes with the current skill: nothing to learn from",
    )
    first_epoch: int | None = None
    next_epoch_known = True  # every batch of the epoch after the first passed without running ahead
    for step, epoch, batch in remaining:
        first_epoch = epoch if first_epoch is None else first_epoch
        if epoch > first_epoch + 1:
            # Every later epoch holds the same tasks, beyond anything run ahead: it passes as the
            # one before it did (so the scan is bounded however many epochs remain).
            return no_failures if next_epoch_known else None
        known = all(task.id in passed for task in batch)
        next_epoch_known = next_epoch_known and (known or epoch == first_epoch)
        if known:
            continue
        ahead_rollouts = ahead.peek(step, state.current_text) if ahead is not None else None
        if ahead_rollouts is None or not all(r.score.passed for r in ahead_rollouts):
            return None
    return no_failures
