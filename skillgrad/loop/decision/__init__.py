"""The accept/reject decision on a candidate skill, in one place.

One protocol, `gate.Gate` (its error contract in its docstring): `decide` compares a candidate's
per-item validation outcomes with the incumbent's, `can_pass` bounds what the outcomes not run yet
could still make of it (racing stops on it) and `pool_test` is the test a frontier child passes.

- `gate`: the protocol, `GateDecision`, the `strict` and `paired` gates, `make_gate`;
- `significance`: the paired gate's exact permutation test and its racing bound;
- `racing`: validation in waves, stopped once `can_pass` says no outcome could pass;
- `judge`: the decision on a validation as it ran (missing runs, a raced-out candidate, its score);
- `pool_entry`: the frontier's pool entry, a `Gate` around the configured one.

The description's gate (trigger F1) is `activation.metrics.TriggerGate`, a `Gate` too.
"""
