"""What a validation tie comes to (optimizer.tie_break), chosen by name in `TIE_BREAKS`.

A gate compares scores, and a tie keeps the incumbent. One tie is not a tie of equals: on bbh
date_understanding seed 3 the empty skill answered "(B) 12/26/1951" to every val task, the form
fix's rule and four examples had the 1.5B answer a bare label to every one, and all 12 labels
happened to be wrong (six options: about 11 % of such draws), so the strict gate saw 0.000 against
0.000 and kept the skill whose answers no exact-match scorer can pass (its test score stayed 0.000,
the same rule and examples scored 0.375 as a reference). `form` breaks such a tie for the
candidate when its val answers hold the expected answers' form on at least `share` of the items
more than the incumbent's do (`state.val_forms`, recorded by `valruns` for a val split whose
expected answers share a form, `shapes.shared_shape`). It stays out wherever the form cannot be
what the scores miss: an item that scored while out of the form (a scorer that reads the answer
out of any form, GSM8K's last number), a candidate raced out or with missing runs, a skill
validated before the forms were recorded.

    form   a tie goes to the candidate whose answers hold the form on half the items more
    none   a tie keeps the incumbent

Racing must not stop a candidate that could still tie (`racing_gate`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from skillgrad.loop.decision.gate import Gate, GateDecision, ValResults, compared, optimistic
from skillgrad.loop.decision.racing import Validation

Forms = Mapping[str, Sequence[bool]]  # val item -> whether each outcome's answer held the form
EPSILON = 1e-9


class TieBreak(Protocol):
    """Error contract: pure and total; returns `decision` unchanged unless it breaks a tie."""

    def decide(
        self,
        decision: GateDecision,
        val: Validation,
        incumbent: ValResults,
        forms: Forms,
        incumbent_forms: Forms,
    ) -> GateDecision:
        """The decision on `val` (the candidate's validation) against `incumbent`, with each
        side's answer forms."""
        ...

    def racing_gate(self, gate: Gate, incumbent: ValResults, incumbent_forms: Forms) -> Gate:
        """The gate racing bounds with: `gate`, or one whose `can_pass` is also True while a
        tie the break could decide is still reachable."""
        ...


def _in_form(results: ValResults, forms: Forms, items: Sequence[str]) -> int | None:
    """Items whose every outcome held the form; None when the form is not what the scores
    miss: an item without forms, or one that scored while out of the form."""
    held = 0
    for item in items:
        bits = forms.get(item)
        if not bits:
            return None
        if not all(bits) and any(score > 0 for score in results[item]):
            return None
        held += all(bits)
    return held


@dataclass(frozen=True)
class FormTieBreak:
    share: float = 0.5  # of the compared items: more in form than the incumbent by this many

    def decide(
        self,
        decision: GateDecision,
        val: Validation,
        incumbent: ValResults,
        forms: Forms,
        incumbent_forms: Forms,
    ) -> GateDecision:
        tied = abs(decision.effect) <= EPSILON and not (decision.accepted or decision.held)
        if not tied or val.raced_out or val.missing:
            return decision
        mine, theirs = compared(val.results, incumbent)
        items = list(mine)
        ours, base = _in_form(mine, forms, items), _in_form(theirs, incumbent_forms, items)
        if ours is None or not self._breaks(ours, base, len(items)):
            return decision
        reason = (
            f"{decision.reason}; the tie goes to the candidate: its answers hold the expected "
            f"answers' form on {ours} of {len(items)} val items, the current skill's on {base}"
        )
        return replace(decision, accepted=True, reason=reason, test=f"{decision.test}, tie broken by form")

    def racing_gate(self, gate: Gate, incumbent: ValResults, incumbent_forms: Forms) -> Gate:
        # Only a tie a candidate with every answer in form would win is worth racing on for:
        # elsewhere racing bounds as it always did.
        items = list(incumbent_forms)
        base = _in_form(incumbent, incumbent_forms, items)
        return TieReachable(gate) if self._breaks(len(items), base, len(items)) else gate

    def _breaks(self, ours: int, base: int | None, items: int) -> bool:
        """Whether `ours` of `items` in form against the incumbent's `base` breaks a tie."""
        return items > 0 and base is not None and ours - base >= self.share * items


class NoTieBreak:
    def decide(
        self,
        decision: GateDecision,
        val: Validation,
        incumbent: ValResults,
        forms: Forms,
        incumbent_forms: Forms,
    ) -> GateDecision:
        return decision

    def racing_gate(self, gate: Gate, incumbent: ValResults, incumbent_forms: Forms) -> Gate:
        return gate


class TieReachable:
    """`gate` for racing: it may also go on while full marks on the rest would tie."""

    def __init__(self, gate: Gate) -> None:
        self.gate = gate
        self.repeats = gate.repeats

    def decide(self, candidate: Mapping[str, Sequence[float]], incumbent: ValResults) -> GateDecision:
        return self.gate.decide(candidate, incumbent)

    def can_pass(self, partial: Mapping[str, Sequence[float]], incumbent: ValResults) -> bool:
        if self.gate.can_pass(partial, incumbent):
            return True
        return self.gate.decide(optimistic(partial, incumbent, self.repeats), incumbent).effect >= -EPSILON

    def pool_test(self) -> Gate:
        return self.gate.pool_test()


TIE_BREAKS: dict[str, TieBreak] = {"form": FormTieBreak(), "none": NoTieBreak()}
