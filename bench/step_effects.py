"""What each step of skillgrad's bench runs did on test, beside what its gate saw on val.

    python bench/step_effects.py --target-model Q15.gguf WORK/bbh_date/seed2 WORK/bbh_date/seed3 ...
    python bench/step_effects.py --table-only SEED_FOLDER ...   # only the scores already known

SEED_FOLDER: a seed's folder under bench/vs_peers.py's --work (its `skillgrad/run` run folder,
its `config.yaml` and its `test_scores*.json`, the test scores the bench measured, by skill text).
For every step that validated a candidate: the val items the candidate won and lost against the
incumbent, the one-sided exact p-value of those (the paired gate's test, `optimizer.gate: paired`;
with one run per item, the sign test on the items that differ), the kind of its edits (`swaps`:
every one a `replace_example`; `adds`: examples added, with or without a rule; `other`), the
gate's decision; for an accepted step, the test score of the skill before and after it. A skill
without a known test score is evaluated with `skillgrad eval --split test` against the target
served as the bench serves it (bench/peers_server.py, --threads, the benchmark's output cap), and
its score is added to the seed folder's test scores (at temperature 0 the same skill gets the
same answers: bench/peers_systems.TestScores). Then per kind of step: the accepted steps' mean
test change, how many rose and fell, and the two-sided sign test.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from peers_bench import BENCHMARKS  # noqa: E402
from peers_server import Served  # noqa: E402
from peers_systems import TestScores, eval_test, skill_key, test_folder  # noqa: E402
from peers_tables import sign_test  # noqa: E402

from skillgrad.loop.decision.gate import PairedGate, compared  # noqa: E402
from skillgrad.loop.shapes import named_answer  # noqa: E402
from skillgrad.loop.state import ValResults  # noqa: E402
from skillgrad.skilldoc import SkillDoc, normalize_text  # noqa: E402


@dataclass(frozen=True)
class Step:
    """One validated candidate of one run."""

    seed_folder: str
    step: int
    kind: str  # swaps | adds | other
    wins: int
    losses: int
    p_value: float
    accepted: bool
    before: str  # the incumbent's skill text
    after: str  # the candidate's


def edit_kind(ops: Sequence[str]) -> str:
    """`swaps` (example replacements alone), `adds` (examples added, rules too or not), `other`."""
    if ops and all(op == "replace_example" for op in ops):
        return "swaps"
    if "add_example" in ops and not {"replace_example", "remove_example"} & set(ops):
        return "adds"
    return "other"


def wins_losses(candidate: ValResults, incumbent: ValResults) -> tuple[int, int, float]:
    """Items whose mean the candidate raised and lowered, and the paired test's one-sided p."""
    mine, theirs = compared(candidate, incumbent)

    def mean(values: Sequence[float]) -> float:
        return sum(values) / len(values)

    wins = sum(1 for item in mine if mean(mine[item]) > mean(theirs[item]))
    losses = sum(1 for item in mine if mean(mine[item]) < mean(theirs[item]))
    return wins, losses, float(PairedGate(0.05).decide(candidate, incumbent).p_value or 1.0)


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def steps_of(seed_folder: Path) -> list[Step]:
    """The validated steps of the seed folder's run, in order, each against its incumbent."""
    run = seed_folder / "skillgrad" / "run"
    results = read_json(run / "state.json")["val_results"]
    incumbent = (run / "skills" / "v0000.md").read_text(encoding="utf-8")
    found = []
    for folder in sorted(p for p in (run / "steps").iterdir() if (p / "candidate_skill.md").is_file()):
        gate = read_json(folder / "gate.json")
        candidate = (folder / "candidate_skill.md").read_text(encoding="utf-8")
        # keyed as the trainer keys them (state.val_results: the skill's content hash)
        mine, theirs = (results.get(SkillDoc(text).content_hash) for text in (candidate, incumbent))
        if mine is None or theirs is None:
            continue  # a skipped step (nothing validated)
        ops = [e["op"] for e in read_json(folder / "merged_patch.json").get("selected", [])]
        wins, losses, p_value = wins_losses(mine, theirs)
        step = Step(str(seed_folder), int(folder.name), edit_kind(ops), wins, losses, p_value,
                    bool(gate["accepted"]), incumbent, candidate)  # fmt: skip
        found.append(step)
        incumbent = candidate if step.accepted else incumbent
    return found


def score_file(seed_folder: Path) -> Path:
    found = sorted(seed_folder.glob("test_scores*.json"))
    return found[0] if found else seed_folder / "test_scores.json"


def evaluator(seed_folder: Path, base_url: str) -> Callable[[Path], float]:
    """`skillgrad eval --split test` of a skill file with the seed folder's config, at `base_url`."""
    config, seed = seed_folder / "config.yaml", int(seed_folder.name.removeprefix("seed"))
    return lambda skill: eval_test(config, seed, skill, f"model.base_url={base_url}")


def test_scores(
    steps: Sequence[Step], evaluator: Callable[[Path], Callable[[Path], float]] | None
) -> dict[tuple[str, str], float]:
    """The test score of every accepted step's skills, by (seed folder, text): a skill scores
    otherwise on another seed's items. Known ones are read from the seed folder's test scores;
    the others, with an `evaluator` (a seed folder's evaluation of a skill file), are evaluated
    in the seed's test folder and kept in its test scores, or left out without one."""
    skills: dict[str, dict[str, None]] = {}  # each seed folder's skills, once, in step order
    for step in steps:
        if step.accepted:
            skills.setdefault(step.seed_folder, {}).update(dict.fromkeys((step.before, step.after)))
    known: dict[tuple[str, str], float] = {}
    for name, texts in skills.items():
        folder = Path(name)
        scores = TestScores(score_file(folder))
        evaluate = evaluator(folder) if evaluator is not None else None
        for text in texts:
            if evaluate is not None:  # a known score is read, not evaluated again
                known[name, text] = scores.get(text, evaluate, test_folder(folder, text))
            elif skill_key(text) in scores.scores:
                known[name, text] = scores.scores[skill_key(text)]
    return known


def top_label(folder: Path) -> tuple[str, float] | None:
    """The expected answer the test answers of an evaluation give most (`shapes.named_answer`
    against the test items' expected answers) and the share of the items that give it; None
    without the evaluation's answers."""
    scores = [read_json(p) for p in sorted((folder / "eval" / "rollouts" / "test").glob("*/score.json"))]
    if not scores:
        return None
    labels = {normalize_text(str(e)) for s in scores for e in s.get("expected") or []}
    named = Counter(named_answer(str(s.get("answer") or ""), labels) for s in scores)
    named.pop(None, None)
    if not named:
        return None
    label, count = max(sorted(named.items()), key=lambda item: item[1])
    return str(label), count / len(scores)


def change(step: Step, known: Mapping[tuple[str, str], float]) -> tuple[float, float] | None:
    """An accepted step's test score before and after it (None: not both known)."""
    before, after = (known.get((step.seed_folder, text)) for text in (step.before, step.after))
    return (before, after) if step.accepted and before is not None and after is not None else None


Spread = tuple[str, float] | None  # `top_label` of a skill's test answers


def spreads_of(steps: Sequence[Step]) -> dict[tuple[str, str], Spread]:
    """`top_label` of each accepted step's skills, by (seed folder, text)."""
    texts = {(s.seed_folder, t) for s in steps if s.accepted for t in (s.before, s.after)}
    return {(folder, t): top_label(test_folder(Path(folder), t)) for folder, t in texts}


def _spread_cell(before: Spread, after: Spread) -> str:
    if before is None or after is None:
        return "-"
    return f"{before[0]} {before[1]:.2f} -> {after[0]} {after[1]:.2f}"


def _change_line(name: str, changes: Sequence[float]) -> str:
    up, down, p = sign_test(changes)
    return f"| {name} | {len(changes)} | {sum(changes) / len(changes):+.3f} | {up} / {down} ({p:.3f}) |"


def table(
    steps: Sequence[Step],
    known: Mapping[tuple[str, str], float],
    spreads: Mapping[tuple[str, str], Spread] | None = None,
) -> list[str]:
    """The steps, then the accepted steps' test changes per kind of edit and, where the test
    answers are at hand, per kind and by whether the step spread them over more labels (the share
    of the label they give most fell) or gathered them (it rose)."""
    spreads = spreads or {}
    lines = ["| run | step | edits | val wins / losses | p (paired) | gate | test before -> after "
             "| test answers' top label, share |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]  # fmt: skip
    moved: dict[str, list[float]] = {}
    for s in steps:
        scored = change(s, known)
        test = f"{scored[0]:.3f} -> {scored[1]:.3f}" if scored else "-"
        run = "/".join(Path(s.seed_folder).parts[-2:])
        gate = "accepted" if s.accepted else "rejected"
        before, after = (spreads.get((s.seed_folder, t)) for t in (s.before, s.after))
        lines.append(
            f"| {run} | {s.step} | {s.kind} | {s.wins} / {s.losses} | {s.p_value:.3f} | {gate} | {test} "
            f"| {_spread_cell(before, after)} |"
        )
        if scored and before and after and abs(after[1] - before[1]) > 1e-9:
            way = "spread (top share fell)" if after[1] < before[1] else "gathered (top share rose)"
            moved.setdefault(f"{s.kind}, answers {way}", []).append(scored[1] - scored[0])
    lines += ["", "| edits | accepted steps scored | mean test change | rose / fell (sign test p) |",
              "| --- | --- | --- | --- |"]  # fmt: skip
    for kind in ("adds", "swaps", "other"):
        changes = [c[1] - c[0] for s in steps if s.kind == kind and (c := change(s, known))]
        if changes:
            lines.append(_change_line(kind, changes))
    lines += [_change_line(name, changes) for name, changes in sorted(moved.items())]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("seed_folders", nargs="+", type=Path)
    parser.add_argument(
        "--target-model", type=Path, help="GGUF of the target (to score skills not scored yet)"
    )
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--ctx", type=int, default=4096)
    parser.add_argument("--table-only", action="store_true", help="the scores already known only")
    args = parser.parse_args(argv)
    for folder in args.seed_folders:
        if not (folder / "skillgrad" / "run" / "state.json").is_file():
            print(
                f"{folder}: no skillgrad/run/state.json: pass a seed folder of vs_peers --work",
                file=sys.stderr,
            )
            return 2
    steps = [s for folder in args.seed_folders for s in steps_of(folder)]
    if args.table_only or args.target_model is None:
        known = test_scores(steps, None)
    else:
        with Served(
            {"target": args.target_model}, {"target": 0}, ctx=args.ctx, threads=args.threads
        ) as served:

            def evaluator_at(seed_folder: Path) -> Callable[[Path], float]:
                served.router.caps["target"] = BENCHMARKS[seed_folder.parent.name].target_cap  # as the bench
                return evaluator(seed_folder, served.router.base_url)

            known = test_scores(steps, evaluator_at)
    print("\n".join(table(steps, known, spreads_of(steps))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
