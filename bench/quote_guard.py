"""How the task-copy guard does on real answers: quotes caught, rule words let through.

    python bench/quote_guard.py --data-root ../shared/data [--pools 200] [--train 12] [--shown 6]

For each data set (XQuAD English, the SearchQA sample, GSM8K test, the BBH tasks named below),
`--pools` random train sets of `--train` tasks are drawn (seeded); the analyst is taken to have
been shown the first `--shown`. For each shown task an edit that quotes its expected answer as a
rule's example ("Reply with the span alone, e.g. <answer>.") is put to the guard (caught or not),
and so is every rule of `RULES` (rules of the kinds an analyst writes where the feedback says only
"expected X, got Y": a rule flagged is a false positive). Prints one row per data set.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

from skillgrad.benchmarks.bbh import read_bbh
from skillgrad.benchmarks.gsm8k import read_gsm8k
from skillgrad.benchmarks.qa import read_qa_jsonl
from skillgrad.loop.taskcopy import TaskCopyGuard, TaskIndex
from skillgrad.skilldoc import Edit
from skillgrad.values import Task

RULES = [
    "Answer with the shortest span from the context that answers the question.",
    "Give only the name, date or number the question asks for, not a full sentence.",
    "If the question asks how many, answer with a number only.",
    "Copy the answer exactly as it is written in the context, without extra words.",
    "Do not repeat the question in the answer.",
    "When the question asks for a person, give the full name only.",
    "When the question asks when, answer with the date or year only.",
    "Answer with a noun phrase taken from the passage, not a complete sentence.",
    "Leave out words like 'the answer is' and end without a period.",
    "For questions that ask what caused something, answer with the cause only.",
    "If the question asks which country, city or organization, answer with its name only.",
    "Give the final answer as a plain number without units, e.g. 42.",
    "Answer Yes or No only.",
    "Answer True or False only.",
    "Answer with the option letter in parentheses, e.g. (A).",
    "Round money to 2 decimal places.",
    "Answer in three words or fewer.",
    "Keep the answer under five words unless the question asks for a list.",
    "Write numbers as digits, e.g. 12 instead of twelve.",
]
BBH = ["date_understanding", "web_of_lies", "object_counting", "word_sorting", "sports_understanding"]


def xquad(root: Path) -> list[Task]:
    data = json.loads((root / "squad_xquad_en" / "xquad.en.json").read_text(encoding="utf-8"))
    return [
        Task(qa["id"], qa["question"], paragraph["context"], tuple(a["text"] for a in qa["answers"]))
        for article in data["data"]
        for paragraph in article["paragraphs"]
        for qa in paragraph["qas"]
    ]


def data_sets(root: Path) -> dict[str, list[Task]]:
    sets = {
        "xquad (en)": xquad(root),
        "searchqa sample": read_qa_jsonl(root / "searchqa_sample" / "searchqa_256.jsonl"),
        "gsm8k test": read_gsm8k(root / "gsm8k" / "test.jsonl"),
    }
    return {**sets, **{f"bbh {name}": read_bbh(root / "bbh" / f"{name}.json") for name in BBH}}


def measure(tasks: list[Task], pools: int, train: int, shown: int, seed: int = 26) -> dict[str, float]:
    """Quotes caught and rules flagged over `pools` random train sets of `tasks`."""
    rng = random.Random(seed)
    caught = quotes = flagged = 0
    for _ in range(pools):
        pool = rng.sample(tasks, train)
        guard = TaskCopyGuard(pool[:shown], 10, index=TaskIndex(pool, 3))
        flagged += sum(1 for rule in RULES if guard(Edit("add", "end", rule)))
        for task in pool[:shown]:
            quotes += 1
            caught += (
                guard(Edit("add", "end", f"Reply with the span alone, e.g. {task.answers[0]}.")) is not None
            )
    return {"quotes_caught": caught / quotes, "rules_flagged": flagged / (pools * len(RULES))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-root", type=Path, required=True, help="the folder holding the data sets")
    parser.add_argument("--pools", type=int, default=200)
    parser.add_argument("--train", type=int, default=12)
    parser.add_argument("--shown", type=int, default=6)
    args = parser.parse_args()
    print("| data set | quotes of a shown task's answer caught | generic rules flagged |")
    print("| --- | --- | --- |")
    for name, tasks in data_sets(args.data_root).items():
        row = measure(tasks, args.pools, args.train, args.shown)
        print(f"| {name} | {row['quotes_caught']:.1%} | {row['rules_flagged']:.2%} |")


if __name__ == "__main__":
    main()
