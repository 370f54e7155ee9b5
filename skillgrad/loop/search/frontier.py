"""The frontier search: a pool of candidate skills with their per-item validation scores.

Each step starts from a parent drawn from the frontier (the members no other member dominates
item by item) by `optimizer.parent`; its child is made as in the greedy search (rollouts of the
train batch with the parent, reflection, merge, selection, the learning rate) and enters the pool
through `decision.pool_entry.EntryGate`. Every `optimizer.merge_every`-th step is spent on a lineage merge
instead, when two members can be merged (`lineage_merge`). A child that does not enter leaves its edits
refused in its parent's lineage for the epoch; other lineages may still try them.

The best skill is picked on validation alone: the highest mean among the initial skill and the
members whose gain over it passes the configured gate (a tie: the smaller, then the earlier).
The final test runs the initial and the best skill, and reports every frontier member beside them.

Budget: a step spends what a greedy step spends (its train batch, at most one validation); a
merge step spends no train rollouts and at most one analyst call; the next step's rollouts never
run ahead (its parent is drawn after the gate), so none is redone.
"""

from __future__ import annotations

from typing import Any

from skillgrad.loop.decision.gate import Gate, ValResults, mean_of
from skillgrad.loop.decision.pool_entry import EntryGate
from skillgrad.loop.prefetch import PrefetchedRollouts
from skillgrad.loop.search.lineage_merge import Pair, make_merge, merge_pair
from skillgrad.loop.search.parents import parent_rng
from skillgrad.loop.search.pool import Member, MergeTry, Pool, pool_of
from skillgrad.loop.search.protocol import Proposal, Remaining, SearchContext
from skillgrad.loop.state import TrainState
from skillgrad.loop.stopping import remaining_tasks
from skillgrad.package.model import skill_chars
from skillgrad.run_folder import version_name
from skillgrad.skilldoc import Edit, SkillDoc


class FrontierSearch:
    prefetches = False

    def __init__(self, ctx: SearchContext) -> None:
        self.ctx = ctx
        self.rule = ctx.settings.parent_name
        self.parent = 0  # the version the step in progress starts from
        self.epoch = 0
        self.pending: Pair | None = None  # the merge planned for the step in progress
        self.merging: MergeTry | None = None  # the merge being validated

    @staticmethod
    def pool(state: TrainState) -> Pool:
        """The state's pool; a run's first step makes it from the validated initial skill."""
        pool = pool_of(state)
        if pool is None:
            results = state.val_results[SkillDoc(state.current_text).content_hash]
            pool = state.pool = Pool(members=[Member(version=0, text=state.current_text, results=results)])
        return pool

    # -- the parent ----------------------------------------------------------------------------
    def begin(self, state: TrainState, step: int, epoch: int) -> None:
        pool = self.pool(state)
        self.epoch, self.merging = epoch, None
        every = self.ctx.settings.merge_every
        self.pending = merge_pair(pool) if every and step % every == 0 else None
        self._point(state, step, self.pending.ours if self.pending else self._draw(pool, step))

    def _draw(self, pool: Pool, step: int) -> Member:
        frontier = [m.scored for m in pool.frontier()]
        drawn = self.ctx.settings.parent(frontier, parent_rng(self.ctx.settings.seed, step))
        return pool.member(drawn.version)

    def _point(self, state: TrainState, step: int, member: Member) -> None:
        """Make `member` the state's current skill, with its lineage's refused edits."""
        pool = self.pool(state)
        self.parent = member.version
        state.current_text, state.current_score = member.text, mean_of(member.results)
        state.rejected_edits = pool.lineage_rejects(member.version, self.epoch)
        state.rejected_epoch = self.epoch
        how = f"merging it with {version_name(self.pending.theirs.version)}" if self.pending else self.rule
        size = len(pool.frontier())
        self.ctx.events.emit(
            "message", text=f"step {step}: parent {version_name(member.version)} ({how}; frontier of {size})"
        )

    def merge_lineages(self, state: TrainState, step: int) -> Proposal | None:
        if self.pending is None:
            return None
        pair, self.pending = self.pending, None
        pool = self.pool(state)
        proposal, reason = make_merge(self.ctx, pool, pair, step)
        versions = (pair.ours.version, pair.theirs.version)
        tried = MergeTry(step=step, pair=versions, ancestor=pair.ancestor.version, outcome="skipped")
        pool.merges.append(tried)
        if proposal is None:
            tried.reason = reason
            names = " and ".join(version_name(v) for v in versions)
            self.ctx.events.emit("message", text=f"step {step}: merge of {names} skipped: {reason}")
            self._point(state, step, self._draw(pool, step))
            return None
        self.merging = tried
        return proposal

    # -- the decision --------------------------------------------------------------------------
    def gate(self, state: TrainState, candidate: str) -> Gate:
        return EntryGate(self.ctx.gate, self.pool(state).scored(), skill_chars(candidate))

    def accept(
        self, state: TrainState, step: int, text: str, results: ValResults, applied: list[Edit]
    ) -> str:
        pool = self.pool(state)
        state.version += 1
        state.accepted += 1
        parents = [self.parent] + ([self.merging.pair[1]] if self.merging else [])
        edits = [e.to_json() for e in applied]
        pool.members.append(
            Member(version=state.version, parents=parents, step=step, text=text, edits=edits, results=results)
        )
        if self.merging is not None:
            self.merging.outcome, self.merging.version = "accepted", state.version
        self.ctx.run.write_skill(state.version, text)
        self._pick(state, pool)
        return version_name(state.version)

    def reject(self, state: TrainState, applied: list[Edit]) -> None:
        state.rejected += 1
        if self.merging is not None:
            self.merging.outcome = "rejected"
            return
        self.pool(state).member(self.parent).reject(self.epoch, applied)
        state.rejected_edits.extend(applied)

    def _pick(self, state: TrainState, pool: Pool) -> None:
        """The best skill on validation: the highest mean among the initial skill and the members
        that pass the configured gate against it."""
        root = pool.members[0]
        gate = self.ctx.gate
        eligible = [root, *(m for m in pool.members[1:] if gate.decide(m.results, root.results).accepted)]
        best = min(eligible, key=lambda m: (-m.scored.mean, m.scored.rank))
        if best.version != state.best_version:
            state.best_version, state.best_score, state.best_step = best.version, best.scored.mean, best.step
            self.ctx.run.write_best_skill(best.text)

    # -- the end -------------------------------------------------------------------------------
    def stop_reason(
        self, state: TrainState, incumbent: ValResults, remaining: Remaining, ahead: PrefetchedRollouts | None
    ) -> tuple[str, str] | None:
        pool = self.pool(state)
        members = pool.frontier()
        if not any(self.ctx.gate.can_pass({}, m.results) for m in members):
            return "no_headroom", "no frontier member can be improved on val: no child could pass the gate"
        if self.ctx.settings.merge_every and merge_pair(pool) is not None:
            return None
        if not self.ctx.settings.replays:  # a later epoch's runs are new samples: a pass may not recur
            return None
        tasks = remaining_tasks(remaining)
        for member in members:
            if not tasks <= set(state.train_passed.get(SkillDoc(member.text).content_hash, [])):
                return None
        return "no_failures", "every frontier member passes every remaining train batch: nothing to learn"

    def tested(self, state: TrainState) -> list[int]:
        pool = pool_of(state)
        return [m.version for m in pool.frontier()] if pool else []

    def outcome(self, state: TrainState) -> dict[str, Any]:
        pool = pool_of(state)
        outcomes = [t.outcome for t in pool.merges] if pool else []
        return {
            "search": {
                "strategy": "frontier",
                "parent": self.rule,
                "pool": len(pool.members) if pool else 1,
                "frontier": [version_name(m.version) for m in pool.frontier()] if pool else ["v0000"],
                "merges": {o: outcomes.count(o) for o in ("accepted", "rejected", "skipped")},
            }
        }
