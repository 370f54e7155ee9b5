"""Can noise fool the gate? The `paired` and `strict` gates against a target that answers at random.

    python bench/gate_noise.py                     # the figures of docs/benchmarks.md
    python bench/gate_noise.py --trials 50 --aa-trials 200 --k 3 --alpha 0.05

The scripted target answers each val item correctly with that item's own fixed probability, drawn
anew on every call (seeded). Both gates run through skillgrad's own validation: `run_rollouts`
with the scripted agent, `validate` in racing waves (`optimizer.race_waves`, default 2) and the
gate object the trainer builds. The incumbent's results are measured once per trial, as in a run.

- A/A: the candidate is the incumbent (same probabilities). Any acceptance is noise; the paired
  gate must accept at most `alpha` of the time. The strict gate's rate is printed beside it. The
  rate is printed with its standard error: at 200 trials an exact test at 5 % shows anything
  from 2 % to 8 %, so A/A runs `--aa-trials` (2000) trials.
- A/B: the candidate truly adds +10 points (the mean probability rises by 0.10): the share of
  trials it is accepted in (the gate's power), and the calls each gate spent per trial.

Noise models (16 val items; how the item probabilities are drawn, and where the gain goes):
- `uniform`:  p ~ U(0, 1); the gain spread evenly (+0.10 on every item, topped up where capped).
- `u-shaped`: p ~ Beta(0.2, 0.2) (most items nearly always right or wrong, a few flaky); the gain
  fixes the weakest items (a learned rule fixes the items it applies to).
- `stable`:   p in {0, 1} (the target is deterministic on most items); the gain makes two failing
  items right 80 % of the time.

    python bench/gate_noise.py --false-acceptance --null-trials 2000 --k 3   # the null table

`--false-acceptance`: every gate the trainer builds, under the null (the child is drawn from its
parent's distribution, item by item), each through racing `validate` and `judge` at the same k:
`strict`, `paired`, the frontier's pool entry (`EntryGate`) around each, and the trigger gate of a
description run (`TriggerGate`, half the items labelled "should load"). The share of children
accepted is a false acceptance; it is printed with its standard error beside alpha.
"""

from __future__ import annotations

import argparse
import random
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from statistics import mean

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from skillgrad.activation.metrics import TriggerF1, TriggerGate  # noqa: E402
from skillgrad.budget import Ledger  # noqa: E402
from skillgrad.loop.accounting import Accounting  # noqa: E402
from skillgrad.loop.decision.gate import Gate, ValResults, make_gate  # noqa: E402
from skillgrad.loop.decision.judge import judge  # noqa: E402
from skillgrad.loop.decision.pool_entry import EntryGate  # noqa: E402
from skillgrad.loop.decision.racing import Race, ValUnit, validate  # noqa: E402
from skillgrad.loop.rollout import run_rollouts  # noqa: E402
from skillgrad.loop.search.dominance import Scored, item_means  # noqa: E402
from skillgrad.values import AgentResult, Rollout, Score, Task, Usage  # noqa: E402

ITEMS = 16
GAIN = 0.10


class NoisyTarget:
    """Answers "right" with the item's probability under the skill it is given, per call."""

    name, model = "scripted", "noisy"

    def __init__(self, probabilities: dict[str, dict[str, float]], seed: int) -> None:
        self.probabilities = probabilities  # skill -> task id -> P(correct)
        self.rng = random.Random(seed)
        self.lock = threading.Lock()

    def run(self, task: Task, skill: str, workspace: Path) -> AgentResult:
        with self.lock:
            right = self.rng.random() < self.probabilities[skill][task.id]
        return AgentResult(answer="right" if right else "wrong", usage=Usage(10, 1, 1))


class ExactBenchmark:
    name = "noisy"

    def load(self, split: str) -> list[Task]:
        return [Task(id=f"item{i:02d}", question="?", answers=("right",)) for i in range(ITEMS)]

    def score(self, task: Task, result: AgentResult) -> Score:
        ok = result.answer == "right"
        return Score(float(ok), ok, "")


def spread_gain(probs: list[float]) -> list[float]:
    out, need = list(probs), GAIN * len(probs)
    while need > 1e-9:
        room = [i for i, p in enumerate(out) if p < 1.0]
        share = need / len(room)
        for i in room:
            up = min(share, 1.0 - out[i])
            out[i] += up
            need -= up
    return out


def fix_weakest(probs: list[float], per_item: float = 1.0) -> list[float]:
    out, need = list(probs), GAIN * len(probs)
    for i in sorted(range(len(out)), key=lambda i: out[i]):
        up = min(need, per_item, 1.0 - out[i])
        out[i] += up
        need -= up
        if need <= 1e-9:
            break
    return out


def draw_model(name: str, rng: random.Random) -> tuple[list[float], list[float]]:
    """(incumbent probabilities, the +10 point candidate's probabilities)."""
    if name == "uniform":
        probs = [rng.random() for _ in range(ITEMS)]
        return probs, spread_gain(probs)
    if name == "u-shaped":
        probs = [rng.betavariate(0.2, 0.2) for _ in range(ITEMS)]
        return probs, fix_weakest(probs)
    probs = [float(rng.random() < 0.5) for _ in range(ITEMS)]
    probs[0] = probs[1] = 0.0  # at least two failing items to fix
    return probs, fix_weakest(probs, per_item=0.8)


def runner(agent: NoisyTarget, skill: str) -> Callable[[list[ValUnit]], list[Rollout]]:
    accounting = Accounting(Ledger())  # no caps: the simulated target costs nothing

    def run_units(units: list[ValUnit]) -> list[Rollout]:
        return run_rollouts(
            lambda _i: agent,
            ExactBenchmark(),
            [u.task for u in units],
            skill,
            workspace_for=lambda _i, _t: Path("."),
            on_done=lambda _i, _r: None,
            reserve=lambda: accounting.reserved("target", "val"),
            concurrency=8,
        )

    return run_units


GateFor = Callable[[ValResults], Gate]  # the gate a candidate faces, given the incumbent's results


def trial(
    gate_for: GateFor, k: int, waves: int, incumbent_p: list[float], candidate_p: list[float], seed: int
) -> tuple[bool, int]:
    tasks = ExactBenchmark().load("val")
    probabilities = {
        "incumbent": {t.id: p for t, p in zip(tasks, incumbent_p, strict=True)},
        "candidate": {t.id: p for t, p in zip(tasks, candidate_p, strict=True)},
    }
    agent = NoisyTarget(probabilities, seed)
    incumbent = validate(tasks, k, {}, runner(agent, "incumbent")).results
    gate = gate_for(incumbent)
    val = validate(tasks, k, {}, runner(agent, "candidate"), Race(gate, incumbent, waves))
    return judge(gate, val, incumbent).accepted, val.calls


def measure(
    model: str, gate_name: str, k: int, alpha: float, waves: int, trials: int, aa_trials: int
) -> dict[str, float]:
    gate = make_gate(gate_name, alpha)
    gate_for: GateFor = lambda _incumbent: gate  # noqa: E731
    rng = random.Random(f"{model}:{gate_name}")
    aa, ab, aa_calls, ab_calls = [], [], [], []
    for t in range(max(trials, aa_trials)):
        incumbent_p, better_p = draw_model(model, rng)
        if t < aa_trials:
            accepted, calls = trial(gate_for, k, waves, incumbent_p, incumbent_p, seed=2 * t)
            aa.append(accepted)
            aa_calls.append(calls)
        if t < trials:
            accepted, calls = trial(gate_for, k, waves, incumbent_p, better_p, seed=2 * t + 1)
            ab.append(accepted)
            ab_calls.append(calls)
    rate = mean(aa)
    return {
        "aa_rate": rate,
        "aa_se": (rate * (1 - rate) / len(aa)) ** 0.5,
        "ab_rate": mean(ab),
        "aa_calls": mean(aa_calls),
        "ab_calls": mean(ab_calls),
        "incumbent_calls": ITEMS * k,
    }


NULL_GATES = ("strict", "paired", "entry: strict", "entry: paired", "trigger: paired")


def null_gate(name: str, alpha: float) -> GateFor:
    """The gate `name` as the trainer builds it, for a parent whose results are given: the pool
    entry is a child's of that parent in a pool of the parent alone; the trigger gate labels the
    even items "should load"."""
    kind, _, inner = name.rpartition(": ")
    base = make_gate(inner, alpha)
    if kind == "entry":
        return lambda parent: EntryGate(base, [Scored(0, item_means(parent), 0)], chars=1)
    if kind == "trigger":
        labels = {f"item{i:02d}": i % 2 == 0 for i in range(ITEMS)}
        return lambda _parent: TriggerGate(base, TriggerF1(labels))
    return lambda _parent: base


def false_acceptance(model: str, gate_name: str, k: int, alpha: float, waves: int, trials: int) -> float:
    """The share of children drawn from their parent's distribution that `gate_name` accepts."""
    gate_for = null_gate(gate_name, alpha)
    rng = random.Random(f"null:{model}")
    accepted = [
        trial(gate_for, k, waves, probs, probs, seed=t)[0]
        for t in range(trials)
        for probs in [draw_model(model, rng)[0]]
    ]
    return mean(accepted)


def null_table(k: int, alpha: float, waves: int, trials: int) -> None:
    print(
        f"{ITEMS} val items, k = {k} repeats, {trials} trials per null, racing in {waves} waves; "
        f"alpha = {alpha}\n"
    )
    print("| gate | " + " | ".join(f"{m} null" for m in ("uniform", "u-shaped", "stable")) + " |")
    print("|---|---|---|---|")
    for gate_name in NULL_GATES:
        cells = []
        for model in ("uniform", "u-shaped", "stable"):
            rate = false_acceptance(model, gate_name, k, alpha, waves, trials)
            cells.append(f"{rate:.1%} +- {(rate * (1 - rate) / trials) ** 0.5:.1%}")
        print(f"| {gate_name} | " + " | ".join(cells) + " |")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--trials", type=int, default=200, help="A/B trials per model and gate")
    parser.add_argument("--aa-trials", type=int, default=2000, help="A/A trials per model and gate")
    parser.add_argument("--k", type=int, default=3, help="val_repeats of the paired gate")
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--waves", type=int, default=2, help="racing waves (1 = full validation)")
    parser.add_argument(
        "--false-acceptance", action="store_true", help="print the null table of every gate instead"
    )
    parser.add_argument("--null-trials", type=int, default=2000, help="trials per null and gate")
    args = parser.parse_args()
    if args.false_acceptance:
        null_table(args.k, args.alpha, args.waves, args.null_trials)
        return 0
    print(
        f"{ITEMS} val items, {args.aa_trials} A/A and {args.trials} A/B trials per model, "
        f"racing in {args.waves} waves; "
        f"paired: k = {args.k}, alpha = {args.alpha}; strict: k = 1\n"
    )
    print("| noise model | gate | A/A accepted (noise) | A/B accepted (+10 points) | calls A/A | calls A/B |")
    print("|---|---|---|---|---|---|")
    for model in ("uniform", "u-shaped", "stable"):
        for gate_name, k in (("paired", args.k), ("strict", 1)):
            r = measure(model, gate_name, k, args.alpha, args.waves, args.trials, args.aa_trials)
            print(
                f"| {model} | {gate_name} (k={k}) | {r['aa_rate']:.1%} +- {r['aa_se']:.1%} | "
                f"{r['ab_rate']:.1%} | {r['aa_calls']:.1f} | {r['ab_calls']:.1f} |"
            )
    print("\nCalls: a candidate's validation per trial (the incumbent's 16 x k are paid once).")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
