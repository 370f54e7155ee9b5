"""The frontier search's pool, as state.json keeps it: every candidate that entered, with its
parents, the step that made it, its accepted edits, its per-item validation results and the edits
refused as its children (per epoch). A self-validating model: a pool read back from disk that
does not hold together (a parent that is not an earlier member, items that differ between
members, an edit that is not an edit) fails validation instead of steering a resumed run.

Version numbers are the run folder's: member `v` is `skills/vNNNN`, the initial skill is 0.

The pool is the frontier's part of the checkpoint (`state.SearchState`): `read_state` reads a
state.json with it, its errors located as `pool...` as the checkpoint's own are.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from skillgrad.loop.search.dominance import Scored, dominator, frontier, item_means
from skillgrad.loop.state import SearchState, TrainState
from skillgrad.package.model import skill_chars
from skillgrad.skilldoc import Edit


def _canonical_edit(data: dict[str, Any]) -> dict[str, Any]:
    return Edit.from_json(data).to_json()  # ValueError (a validation error) for what is no edit


EditJson = Annotated[dict[str, Any], AfterValidator(_canonical_edit)]
Score = Annotated[float, Field(allow_inf_nan=False)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RejectedEdits(_Model):
    """Edits applied in a child of a member that did not enter the pool, in one epoch."""

    epoch: int = Field(ge=0)
    edits: list[EditJson]


class MergeTry(_Model):
    """One lineage merge: the pair, their common ancestor, and what became of it."""

    step: int = Field(ge=1)
    pair: tuple[int, int]
    ancestor: int = Field(ge=0)
    outcome: Literal["accepted", "rejected", "skipped"]
    reason: str = ""
    version: int | None = None  # the member it made (accepted)

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


class Member(_Model):
    version: int = Field(ge=0)
    # [] the initial skill; [p] a child of p; [p, q] a merge of p and q (gated against p)
    parents: list[int] = Field(default_factory=list, max_length=2)
    step: int = Field(0, ge=0)
    text: str
    edits: list[EditJson] = Field(default_factory=list)  # the accepted edits that made it from parents[0]
    results: dict[str, list[Score]]  # val item -> the score of each repeat
    rejected: list[RejectedEdits] = Field(default_factory=list)

    @property
    def kind(self) -> str:
        return ("initial", "child", "merge")[len(self.parents)]

    @property
    def scored(self) -> Scored:
        return Scored(self.version, item_means(self.results), skill_chars(self.text))

    def reject(self, epoch: int, edits: list[Edit]) -> None:
        """Edits applied in a child of this member that did not enter the pool."""
        if not self.rejected or self.rejected[-1].epoch != epoch:
            self.rejected.append(RejectedEdits(epoch=epoch, edits=[]))
        self.rejected[-1].edits.extend(e.to_json() for e in edits)


class Pool(_Model, SearchState):
    members: list[Member] = Field(min_length=1)
    merges: list[MergeTry] = Field(default_factory=list)

    @model_validator(mode="after")
    def _holds_together(self) -> Pool:
        seen: set[int] = set()
        items = set(self.members[0].results)
        for member in self.members:
            if seen and member.version <= max(seen):
                raise ValueError(f"member v{member.version} is not newer than the members before it")
            if not seen and member.parents:
                raise ValueError("the first member is the initial skill: it has no parents")
            if seen and not member.parents:
                raise ValueError(f"member v{member.version} has no parent")
            if missing := [p for p in member.parents if p not in seen]:
                raise ValueError(f"member v{member.version}: parent v{missing[0]} is not an earlier member")
            # an item may hold no score: every run of it failed (missing, loop/decision/racing.py)
            if set(member.results) != items or not any(member.results.values()):
                raise ValueError(f"member v{member.version} is not scored on the pool's val items")
            seen.add(member.version)
        for tried in self.merges:
            if missing := [v for v in (*tried.pair, tried.ancestor) if v not in seen]:
                raise ValueError(f"merge at step {tried.step} names v{missing[0]}, not a member")
        return self

    # -- reading -------------------------------------------------------------------------------
    def member(self, version: int) -> Member:
        found = next((m for m in self.members if m.version == version), None)
        if found is None:
            raise KeyError(f"v{version} is not in the pool")
        return found

    def scored(self) -> list[Scored]:
        return [m.scored for m in self.members]

    def frontier(self) -> list[Member]:
        """The members no other member dominates item by item, in version order."""
        return [self.member(s.version) for s in frontier(self.scored())]

    def dominated_by(self, candidate: Scored) -> Member | None:
        found = dominator(candidate, self.scored())
        return None if found is None else self.member(found.version)

    def ancestors(self, version: int) -> set[int]:
        """`version` and every member it descends from (both parents of a merge)."""
        out, todo = set(), [version]
        while todo:
            current = todo.pop()
            if current not in out:
                out.add(current)
                todo.extend(self.member(current).parents)
        return out

    def common_ancestor(self, a: int, b: int) -> int:
        """The most recent member both descend from (the initial skill at the latest)."""
        return max(self.ancestors(a) & self.ancestors(b))

    def lineage_rejects(self, version: int, epoch: int) -> list[Edit]:
        """Edits refused this epoch as children of `version` or of any of its ancestors."""
        lineage = sorted(self.ancestors(version))
        return [
            Edit.from_json(e)
            for v in lineage
            for rejected in self.member(v).rejected
            if rejected.epoch == epoch
            for e in rejected.edits
        ]

    def tried(self, a: int, b: int) -> bool:
        return any(set(t.pair) == {a, b} for t in self.merges)

    # -- state.json ----------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    @classmethod
    def from_json(cls, data: Any) -> Pool:
        """The pool in state.json; pydantic's ValidationError (a ValueError) when it is not one."""
        return cls.model_validate(data)

    def inconsistency(self, version: int, best_version: int) -> str | None:
        versions = [m.version for m in self.members]
        if versions[-1] > version:
            return f"pool member v{versions[-1]} is past the current version {version}"
        if best_version not in versions:
            return f"best_version {best_version} is not a member of the pool"
        return None


class _InState(BaseModel):
    pool: Pool  # where state.json keeps it: a validation error names `pool...`


def read_pool(data: Any) -> Pool:
    """state.json's `pool`; pydantic's ValidationError (located as `pool...`) when it is not one."""
    return _InState.model_validate({"pool": data}).pool


def pool_of(state: TrainState) -> Pool | None:
    """The frontier's pool in the state, if it has one."""
    return state.pool if isinstance(state.pool, Pool) else None


def read_state(data: Any) -> TrainState:
    """A checkpoint (state.json) with its pool, if any; StateError (one line) for what is not one."""
    return TrainState.from_json(data, read_pool)
