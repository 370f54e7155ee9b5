"""Which gate judges a candidate that only swaps worked examples (optimizer.swap_gate), chosen by
name in `swap_gate`.

A candidate whose every applied edit is a `replace_example` holds as many examples as the
incumbent and the same rules: one draw of examples against another. Such a draw moves a small
model's answers by the label its examples favour, and a 12-item val split sees one or two of those
answers move: on the 1.5B of bench/vs_peers.py the strict gate kept swaps whose val wins were 1-0
to 4-0 with no loss, and their test score then fell more often than it rose (docs/benchmarks.md,
"Example swaps need a significant win"). So such a candidate must win the paired test at
`optimizer.gate_alpha` (one-sided, exact: with one run per item, 1-0 is p 0.5, 2-0 p 0.25, 5-0 p
0.031), whatever `optimizer.gate` is; a candidate with any other edit (an example added or
removed, a rule) is judged by the configured gate as before.

    paired   a swap of examples alone must win the paired test (`SWAP_GATE` in gate.json's `gate`)
    gate     it is judged by the configured gate, like any candidate
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from skillgrad.loop.decision.gate import Gate, PairedGate
from skillgrad.skilldoc import Edit

SwapGateName = Literal["paired", "gate"]
SWAP_GATE = "paired (examples swapped)"  # gate.json's `gate` for a candidate it judged


def swaps_only(edits: Sequence[Edit]) -> bool:
    """Whether `edits` (those applied) are example swaps and nothing else."""
    return bool(edits) and all(edit.op == "replace_example" for edit in edits)


def swap_gate(name: SwapGateName, alpha: float, repeats: int | None) -> Gate | None:
    """The gate a swap of examples alone must pass; None: the configured gate judges it."""
    return PairedGate(alpha, repeats) if name == "paired" else None
