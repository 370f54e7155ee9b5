"""Early stop: the reasons a run may end before its last step, checked before every step.

- `no_headroom`: even a candidate with full marks on every val item would be rejected by the
  gate (a strict gate once the incumbent scores 1.0; a paired gate once no result could be
  significant), so no later step can change the skill.
- `no_failures`: every task of every remaining train batch has already passed with the current
  skill, so no remaining step has a failure to learn from. A pass of an earlier epoch counts only
  where running the task again replays it (`cache.keys.replays`: the call cache is on and the
  target does not sample); otherwise a later epoch asks afresh and only the current epoch's
  rollouts made ahead are known.
- `no_new_evidence`: where the call cache replays the train rollouts, every remaining step would
  show the analyst exactly what a step already showed it with this skill (the same tasks, the
  same rejected edits): its reply, its edits and their verdict would be replayed, a free but
  useless step. (A step that applied edits either changed the skill or added them to the
  rejected edits, so equal inputs mean nothing came of it.)
The scans are bounded however many epochs remain: `no_failures` reads to the end of the epoch
after the first (every later epoch holds the same tasks), `no_new_evidence` to the first step it
has not seen.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator

from skillgrad.loop.decision.gate import Gate, ValResults
from skillgrad.loop.plan import PlanStep
from skillgrad.loop.prefetch import PrefetchedRollouts
from skillgrad.loop.state import TrainState
from skillgrad.skilldoc import SkillDoc
from skillgrad.values import Task

_SEEN_EPOCHS = 16  # how far `no_new_evidence` reads ahead: past it, epochs repeat those before


def _within_epochs(remaining: Iterable[PlanStep], epochs: int) -> Iterator[PlanStep]:
    """The remaining steps of the current epoch and the `epochs` after it."""
    first_epoch: int | None = None
    for step, epoch, batch in remaining:
        first_epoch = epoch if first_epoch is None else first_epoch
        if epoch > first_epoch + epochs:
            return
        yield step, epoch, batch


def remaining_tasks(remaining: Iterable[PlanStep]) -> set[str]:
    """The ids of the train tasks the remaining steps run (up to the end of the next epoch: every
    later epoch holds the same tasks)."""
    return {task.id for _, _, batch in _within_epochs(remaining, 1) for task in batch}


def step_inputs(state: TrainState, batch: list[Task]) -> str:
    """What a step reflecting on `batch` shows its analysts besides the skill: the tasks (their
    rollouts are the same where they replay) and the rejected edits."""
    rejected = sorted(json.dumps(edit.to_json(), sort_keys=True) for edit in state.rejected_edits)
    seen = json.dumps([sorted(task.id for task in batch), rejected], ensure_ascii=False)
    return hashlib.sha256(seen.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def note_reflected(state: TrainState, batch: list[Task]) -> None:
    """Record that a step reflects on `batch` with the current skill (for `no_new_evidence`)."""
    seen = state.reflected.setdefault(SkillDoc(state.current_text).content_hash, [])
    inputs = step_inputs(state, batch)
    if inputs not in seen:
        seen.append(inputs)


def stop_reason(
    gate: Gate,
    state: TrainState,
    incumbent: ValResults,
    remaining: Iterable[PlanStep],
    ahead: PrefetchedRollouts | None,
    replays: bool = True,
) -> tuple[str, str] | None:
    """(code, sentence) when the run should stop before the first of `remaining`, else None.
    `replays`: a train task run again with the same skill replays its answer (`cache.keys.replays`)."""
    if not gate.can_pass({}, incumbent):
        score = state.current_score
        return "no_headroom", f"the skill scores {score:.4f} on val: no candidate can pass the gate any more"
    if _no_failures(state, remaining, ahead, replays):
        return (
            "no_failures",
            "every remaining train batch passes with the current skill: nothing to learn from",
        )
    if replays and _all_seen(state, remaining):
        return "no_new_evidence", (
            "every remaining step would show the analyst what an earlier step showed it with this skill "
            "(the same tasks and rejected edits, their answers replayed by the call cache): nothing new "
            "to learn from"
        )
    return None


def _no_failures(
    state: TrainState, remaining: Iterable[PlanStep], ahead: PrefetchedRollouts | None, replays: bool
) -> bool:
    passed = set(state.train_passed.get(SkillDoc(state.current_text).content_hash, [])) if replays else set()
    first_epoch: int | None = None
    next_epoch_known = True  # every batch of the epoch after the first passed without running ahead
    for step, epoch, batch in remaining:
        first_epoch = epoch if first_epoch is None else first_epoch
        if epoch > first_epoch + 1:
            # Every later epoch holds the same tasks, beyond anything run ahead: it passes as the
            # one before it did (so the scan is bounded however many epochs remain).
            return next_epoch_known
        if epoch > first_epoch and not replays:
            return False  # asked afresh in a later epoch: how it goes is not known yet
        known = all(task.id in passed for task in batch)
        next_epoch_known = next_epoch_known and (known or epoch == first_epoch)
        if known:
            continue
        ahead_rollouts = ahead.peek(step, state.current_text) if ahead is not None else None
        if ahead_rollouts is None or not all(r.score.passed for r in ahead_rollouts):
            return False
    return True


def _all_seen(state: TrainState, remaining: Iterable[PlanStep]) -> bool:
    """Every remaining step's inputs were already reflected on with the current skill; read to
    the first that was not (later epochs repeat one batch of all tasks, or batches of one task,
    exactly; other batch sizes meet a new batch at once), at most `_SEEN_EPOCHS` epochs ahead."""
    seen = set(state.reflected.get(SkillDoc(state.current_text).content_hash, []))
    if not seen:
        return False
    steps = _within_epochs(remaining, _SEEN_EPOCHS)
    return all(step_inputs(state, batch) in seen for _, _, batch in steps)
