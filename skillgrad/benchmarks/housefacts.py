"""`housefacts`: questions about a project's house facts that only the skill can tell the agent.

A team's skill carries project knowledge: where support mail goes, which host is staging, which
branch ships. Each task asks for one such fact in one of 30 wordings (a question and a lead-in);
the fact is stated nowhere in the task, so an agent knows it only if its skill says it:

    support   the support address            help@quokka.dev
    staging   the staging host               stage7.quokka.dev
    branch    the release branch             release/oak
    oncall    the on-call chat channel       #quokka-pager
    tickets   the ticket prefix              QK-
    build     the command that builds it     make ship

Score: the expected fact appears in the reply (case-insensitive; small models answer in a
sentence). The feedback of a miss opens with the house fact as one sentence (`options.state_fact`,
default true; false shows the expected value and the given answer only), so an analyst that
restates a failure writes the fact, not the task's answer, into the skill, and one learned fact
serves every question about it.

Splits are disjoint and evenly sized: the wordings of each fact are dealt to train, val and test
in a fixed order; each split then draws from its share with a generator seeded by
`benchmark.seed`, so seeds differ in which questions they ask and in what order.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from skillgrad.backends.interface import AgentResult
from skillgrad.benchmarks.contract import SPLITS, Score, Split, Task
from skillgrad.benchmarks.splits import parse_options, split_sizes
from skillgrad.config import Config
from skillgrad.errors import UserError

Fact = Literal["support", "staging", "branch", "oncall", "tickets", "build"]
FACTS: tuple[Fact, ...] = ("support", "staging", "branch", "oncall", "tickets", "build")


@dataclass(frozen=True)
class HouseFact:
    title: str
    value: str
    statement: str  # the fact as one sentence of a skill
    asks: tuple[str, ...]  # question wordings


HOUSE: dict[Fact, HouseFact] = {
    "support": HouseFact(
        "support address", "help@quokka.dev", "Our support email address is help@quokka.dev.",
        ("What is our support email address?", "Which email address handles support requests?",
         "Where do customers email for support?", "Which address should a bug report be emailed to?",
         "What email address do users write to for help?", "Which support address do we give a customer?"),
    ),
    "staging": HouseFact(
        "staging host", "stage7.quokka.dev", "Our staging server is stage7.quokka.dev.",
        ("What is our staging server?", "Which host is the staging server?",
         "Where do we deploy to test a change on staging?", "What is the hostname of staging?",
         "Which server runs staging?", "Which staging host should a tester log in to?"),
    ),
    "branch": HouseFact(
        "release branch", "release/oak", "Our release branch is release/oak.",
        ("What is our release branch?", "Which git branch are releases cut from?",
         "Which branch does a hotfix for the release go into?", "What is the name of the release branch?",
         "Which branch holds the next release?", "From which branch do we ship releases?"),
    ),
    "oncall": HouseFact(
        "on-call channel", "#quokka-pager", "Our on-call chat channel is #quokka-pager.",
        ("What is our on-call chat channel?", "Which chat channel reaches the on-call team?",
         "Where do we report an outage in chat?", "Which channel pages the on-call engineer?",
         "What is the name of the on-call channel?", "Where in chat do we say that the site is down?"),
    ),
    "tickets": HouseFact(
        "ticket prefix", "QK-", "Our ticket ids start with QK-.",
        ("What do our ticket ids start with?", "Which prefix do our ticket numbers use?",
         "How does a ticket id in our tracker begin?", "What is our ticket prefix?",
         "Which letters start every ticket id?", "Which prefix goes before a ticket number?"),
    ),
    "build": HouseFact(
        "build command", "make ship", "Our build command is make ship.",
        ("What is our build command?", "Which command builds the project?",
         "How do we build the project from the shell?", "What do we run to build a release?",
         "Which shell command builds our code?", "What command does a new colleague run to build?"),
    ),
}  # fmt: skip

_LEAD_INS = ("", "Quick question: ", "For the onboarding notes: ", "A new colleague asks: ", "Remind me: ")


@dataclass(frozen=True)
class Item:
    fact: Fact
    question: str


def pool(fact: Fact, split: Split) -> list[Item]:
    """The items of `fact` that belong to `split`: every wording of the fact, in a fixed shuffle,
    dealt to train, val and test in turn (so the splits are disjoint and evenly sized)."""
    items = [Item(fact, lead + ask) for lead in _LEAD_INS for ask in HOUSE[fact].asks]
    random.Random(f"housefacts-pool:{fact}").shuffle(items)
    return items[SPLITS.index(split) :: len(SPLITS)]


def generate(split: Split, size: int, seed: int, facts: tuple[Fact, ...] = FACTS) -> list[Item]:
    """`size` distinct items of `split`, facts in rotation; deterministic from (seed, split)."""
    rng = random.Random(f"housefacts:{seed}:{split}")
    pools = {fact: rng.sample(pool(fact, split), len(pool(fact, split))) for fact in facts}
    if size > sum(len(p) for p in pools.values()):
        raise UserError(
            f"housefacts: {split} has {sum(len(p) for p in pools.values())} items for these facts; "
            f"lower benchmark.{split}_size"
        )
    items: list[Item] = []
    while len(items) < size:
        for fact in facts:
            if pools[fact] and len(items) < size:
                items.append(pools[fact].pop())
    return items


def feedback(fact: Fact, given: str, *, state_fact: bool) -> str:
    """A miss's feedback. The house fact comes first: small analysts copy the first sentence they
    read, and a copied fact is a skill line that serves every question about it."""
    house = HOUSE[fact]
    if state_fact:
        return f"{house.statement} The answer must contain {house.value!r}."
    shown = given.strip() or "(empty answer)"
    if len(shown) > 160:
        shown = shown[:157] + "..."
    return f"[{house.title}] the answer must contain {house.value!r}; got {shown!r}."


class HousefactsOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    state_fact: bool = True  # a miss's feedback states the house fact as a sentence
    facts: list[Fact] = Field(default_factory=lambda: list(FACTS), min_length=1)


class HousefactsBenchmark:
    """Generated house-fact questions. `score` never raises (see benchmarks/contract.py)."""

    name = "housefacts"

    def __init__(self, sizes: dict[Split, int], seed: int, options: HousefactsOptions) -> None:
        self.sizes = sizes
        self.seed = seed
        self.options = options

    def load(self, split: Split) -> list[Task]:
        facts = tuple(dict.fromkeys(self.options.facts))
        items = generate(split, self.sizes[split], self.seed, facts)
        return [
            Task(
                id=f"{split}-{i:03d}-{item.fact}",
                question=item.question,
                answers=(HOUSE[item.fact].value,),
                meta={"fact": item.fact, "title": HOUSE[item.fact].title},
            )
            for i, item in enumerate(items)
        ]

    def score(self, task: Task, result: AgentResult) -> Score:
        fact: Fact = task.meta.get("fact", "support")
        expected = task.answers[0]
        if result.is_error:
            why = f"the agent failed: {result.error or 'unknown error'}"
            return Score(0.0, False, f"[{HOUSE[fact].title}] expected {expected!r}; {why}")
        if expected.casefold() in result.answer.casefold():
            return Score(1.0, True, f"[{HOUSE[fact].title}] correct: {expected!r}.")
        return Score(0.0, False, feedback(fact, result.answer, state_fact=self.options.state_fact))


def create(cfg: Config) -> HousefactsBenchmark:
    b = cfg.benchmark
    options = parse_options(HousefactsOptions, b)
    sizes = split_sizes(b)  # none given: FIXED_SIZES (the tasks are generated, not split)
    return HousefactsBenchmark(sizes, b.seed, options)
