"""Hand `skillgrad.train` your own strategies as objects: a validation gate and the agent under
training (docs/api.md, "Strategies as objects").

    pip install -e '.[local]' && python examples/custom_strategies.py

The agent is yours: here a rule follower that answers a question about a house fact from the
skill's lines (replace `run` with a call to your own agent); it is not cached, as nothing says
what shapes its answers, unless it names a `cache_identity`. The gate is yours too: it keeps a
candidate only when it fixes items and breaks none. The analyst is the config's model (the
packaged SmolLM2-135M here, offline; any other as in docs/api.md): it reads the scorer's feedback,
which states the fact a miss lacked, and proposes edits that write it into the skill.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import skillgrad
from skillgrad import AgentResult, GateDecision, Score, Task, Usage

# fact -> (what a right answer contains, the fact as one sentence, a question that asks for it)
FACTS: dict[str, tuple[str, str, str]] = {
    "support": ("help@quokka.dev", "Our support email address is help@quokka.dev.", "support email"),
    "staging": ("stage7.quokka.dev", "Our staging server is stage7.quokka.dev.", "staging server"),
    "oncall": ("#quokka-pager", "Our on-call chat channel is #quokka-pager.", "on-call chat channel"),
    "build": ("make ship", "Our build command is make ship.", "build command"),
}
LEAD_INS = (
    "What is our",
    "Remind me: what is our",
    "A new colleague asks: what is our",
    "For the onboarding notes, what is our",
    "Quick question: what is our",
    "Which is our",
)


def house_tasks() -> list[Task]:
    return [
        Task(id=f"{fact}-{i}", question=f"{lead} {asks}?", answers=(value,), meta={"fact": fact})
        for fact, (value, _, asks) in FACTS.items()
        for i, lead in enumerate(LEAD_INS)
    ]


def score(answer: str, task: Task) -> Score:
    value, statement, _ = FACTS[task.meta["fact"]]
    if value.casefold() in answer.casefold():
        return Score(1.0, True, f"correct: {value!r}")
    return Score(0.0, False, f"{statement} The answer must contain {value!r}.")


class RuleFollower:
    """An agent (`skillgrad.Agent`): `name`, `model` and `run(task, skill, workspace)`. It answers
    with the skill's line that names what the question asks for. A failure of one task is a
    result with `is_error=True`, never an exception."""

    name = "rule-follower"
    model = "skill-lines-v1"

    def run(self, task: Task, skill: str, workspace: Path) -> AgentResult:
        asks = FACTS[task.meta["fact"]][2]
        lines = [line for line in skill.splitlines() if asks in line.casefold()]
        answer = lines[0].strip("- ") if lines else "I do not know."
        # what the run used (here about four characters a token, at no cost); left out, a run
        # counts as one call of unknown cost
        usage = Usage(input_tokens=len(skill) // 4, output_tokens=len(answer) // 4, calls=1, cost_usd=0.0)
        return AgentResult(answer=answer, usage=usage)


class NoRegressionGate:
    """A gate (`skillgrad.Gate`): keep a candidate that raises at least `min_fixed` items and lowers
    none, item by item (each item's mean over its repeats)."""

    def __init__(self, min_fixed: int = 1) -> None:
        self.min_fixed = min_fixed

    def decide(
        self, candidate: Mapping[str, Sequence[float]], incumbent: Mapping[str, Sequence[float]]
    ) -> GateDecision:
        items = [i for i in incumbent if candidate.get(i) and incumbent[i]]
        change = {i: mean(candidate[i]) - mean(incumbent[i]) for i in items}
        fixed = sum(1 for d in change.values() if d > 0)
        broken = sum(1 for d in change.values() if d < 0)
        effect = sum(change.values()) / len(change) if change else 0.0
        accepted = broken == 0 and fixed >= self.min_fixed
        reason = f"{fixed} item(s) fixed, {broken} broken (needs {self.min_fixed} fixed, none broken)"
        return GateDecision(accepted, reason, "no regression", effect)


def mean(scores: Sequence[float]) -> float:
    return sum(scores) / len(scores)


CONFIG: dict[str, Any] = {
    "benchmark": {"train_size": 12, "val_size": 6, "test_size": 6, "seed": 0},
    "model": {"backend": "local", "max_output_tokens": 160},
    "train": {"epochs": 1, "batch_size": 4, "minibatch_size": 1},
    "optimizer": {
        "learning_rate": 2,
        "min_learning_rate": 2,
        "lr_schedule": "constant",
        "shape_example": False,  # a 135M analyst copies the example edit's wording
    },
}


def main(config: dict[str, Any], out: str) -> skillgrad.TrainResult:
    result = skillgrad.train(
        config,
        benchmark=house_tasks(),
        scorer=score,
        out=out,
        gate=NoRegressionGate(min_fixed=1),
        agent=RuleFollower(),
        observers=[skillgrad.progress_printer()],
    )
    print(f"val {result.baseline_val} -> {result.best_val}; {result.accepted} accepted")
    print(f"the trained skill:\n{result.best_skill.markdown}")
    return result


if __name__ == "__main__":
    main(CONFIG, out="runs/custom-strategies")
