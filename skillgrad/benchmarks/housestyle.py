"""`housestyle`: generated tasks whose right answer depends on house conventions.

Every task is trivially easy apart from one convention: the fact asked for is stated in the task's
context, and the answer must be written in the house's style. Six rule families, each with ONE
crisp rule that the initial skill does not state:

    date    dates as YYYY-MM-DD                          "April 9, 2022"       -> 2022-04-09
    money   money as USD and the amount, 2 decimals      "12 dollars 5 cents"  -> USD 12.05
    name    person names as SURNAME, First               "Anna Berg"           -> BERG, Anna
    yesno   yes/no answers as YES or NO                  "... is open ..."     -> YES
    length  lengths in whole centimetres, then " cm"     "1.25 m"              -> 125 cm
    order   order numbers as ORD- and the digits         "order number 4821"   -> ORD-4821

Score: exact match after trimming (`options.match: contains` accepts the expected text anywhere in
the reply, for very small models that always answer in a sentence). The feedback shows the rule
family, the expected answer next to the given one, and (`options.state_rule`, default true) the
house rule itself, so an analyst that restates a failure precisely writes the rule into the skill.

Splits are deterministic from `benchmark.seed`: each split draws from its own seeded generator and
keeps only items whose key hashes into that split's bucket, so the splits never share an item and
one split's content does not depend on the others' sizes.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from skillgrad.benchmarks.splits import parse_options, split_sizes
from skillgrad.config import Config
from skillgrad.errors import UserError
from skillgrad.values import SPLITS, AgentResult, Score, Split, Task

Family = Literal["date", "money", "name", "yesno", "length", "order"]
FAMILIES: tuple[Family, ...] = ("date", "money", "name", "yesno", "length", "order")

RULES: dict[Family, tuple[str, str]] = {  # family -> (title, the one house rule)
    "date": ("date style", "write dates as YYYY-MM-DD, e.g. 2021-03-05"),
    "money": ("money style", "write money as USD, a space and the amount with 2 decimals, e.g. USD 12.50"),
    "name": (
        "name style",
        "write person names as SURNAME, First with the surname in capitals, e.g. BERG, Anna",
    ),
    "yesno": ("yes/no style", "answer yes/no questions with exactly YES or NO in capitals"),
    "length": ("length style", "write lengths in whole centimetres followed by ' cm', e.g. 125 cm"),
    "order": ("order numbers", "write order numbers as ORD- followed by the digits, e.g. ORD-4821"),
}

# fmt: off
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
           "October", "November", "December")
_FIRST = ("Anna", "Ben", "Clara", "David", "Eva", "Felix", "Grace", "Hugo", "Ines", "Jonas", "Karin",
          "Leo", "Mara", "Nils", "Olga", "Paul")
_LAST = ("Berg", "Lund", "Moreau", "Novak", "Olsen", "Petrov", "Quinn", "Rossi", "Silva", "Tanaka",
         "Weber", "Young", "Zeller", "Costa")
# fmt: on
_PLACES = ("library", "pharmacy", "bakery", "museum", "gym", "post office", "swimming pool", "garden centre")
_DAYS = ("on Sundays", "on Mondays", "on public holidays", "after 8 pm", "in August")
_THINGS = ("shelf", "desk", "rope", "cable", "plank", "curtain")


@dataclass(frozen=True)
class Item:
    """One generated task before it becomes a Task: context, question, expected answer."""

    family: Family
    context: str
    question: str
    answer: str

    @property
    def key(self) -> str:
        return f"{self.family}|{self.context}|{self.question}"


def _date(rng: random.Random) -> Item:
    y, m, d = rng.randint(1995, 2035), rng.randint(1, 12), rng.randint(1, 28)
    event, q = rng.choice(
        [
            ("The invoice was issued on", "When was the invoice issued?"),
            ("The meeting takes place on", "When does the meeting take place?"),
            ("The contract was signed on", "On what date was the contract signed?"),
        ]
    )
    return Item("date", f"{event} {_MONTHS[m - 1]} {d}, {y}.", q, f"{y}-{m:02d}-{d:02d}")


def _money(rng: random.Random) -> Item:
    dollars, cents = rng.randint(1, 250), rng.choice([0, 5, 10, 25, 40, 50, 75, 99])
    thing = rng.choice(["ticket", "lunch", "taxi ride", "book", "repair", "parking fee"])
    context = f"The {thing} costs {dollars} dollars and {cents} cents."
    return Item("money", context, f"How much does the {thing} cost?", f"USD {dollars}.{cents:02d}")


def _name(rng: random.Random) -> Item:
    first, last = rng.choice(_FIRST), rng.choice(_LAST)
    role, q = rng.choice(
        [
            ("The report was written by", "Who wrote the report?"),
            ("The package was signed for by", "Who signed for the package?"),
            ("The project is led by", "Who leads the project?"),
        ]
    )
    return Item("name", f"{role} {first} {last}.", q, f"{last.upper()}, {first}")


def _yesno(rng: random.Random) -> Item:
    place, when, is_open = rng.choice(_PLACES), rng.choice(_DAYS), rng.random() < 0.5
    context = f"The {place} is {'open' if is_open else 'closed'} {when}."
    return Item("yesno", context, f"Is the {place} open {when}?", "YES" if is_open else "NO")


def _length(rng: random.Random) -> Item:
    cm, thing = rng.randint(101, 399), rng.choice(_THINGS)
    context = f"The {thing} is {cm / 100:.2f} m long."
    return Item("length", context, f"How long is the {thing}?", f"{cm} cm")


def _order(rng: random.Random) -> Item:
    number = rng.randint(1000, 99999)
    context, q = rng.choice(
        [
            (f"The customer placed order number {number} yesterday.", "Which order did the customer place?"),
            (f"Order number {number} was shipped this morning.", "Which order was shipped?"),
            (f"The refund belongs to order number {number}.", "Which order does the refund belong to?"),
        ]
    )
    return Item("order", context, q, f"ORD-{number}")


GENERATORS: dict[Family, Callable[[random.Random], Item]] = {
    "date": _date,
    "money": _money,
    "name": _name,
    "yesno": _yesno,
    "length": _length,
    "order": _order,
}


MAX_MISSES = 20_000


def split_of(key: str) -> Split:
    """The one split an item may appear in (a stable hash of its key)."""
    bucket = int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:4], "big") % len(SPLITS)
    return SPLITS[bucket]


def generate(split: Split, size: int, seed: int, families: tuple[Family, ...] = FAMILIES) -> list[Item]:
    """`size` distinct items of `split`, families in rotation; deterministic from (seed, split)."""
    rng = random.Random(f"housestyle:{seed}:{split}")
    items: list[Item] = []
    seen: set[str] = set()
    misses = 0  # draws in a row that gave no new item: the pool is spent long before this many
    while len(items) < size:
        family = families[len(items) % len(families)]
        item = GENERATORS[family](rng)
        if item.key in seen or split_of(item.key) != split:
            misses += 1
            if misses > MAX_MISSES:
                raise UserError(
                    f"housestyle: cannot draw {size} distinct {split} items (the {split} split has "
                    f"{len(items)}); lower benchmark.{split}_size"
                )
            continue
        misses = 0
        seen.add(item.key)
        items.append(item)
    return items


def feedback(item_family: Family, expected: str, given: str, *, state_rule: bool) -> str:
    title, rule = RULES[item_family]
    shown = given.strip() or "(empty answer)"
    if len(shown) > 160:
        shown = shown[:157] + "..."
    text = f"[{title}] expected exactly {expected!r}, got {shown!r}."
    if state_rule:
        text += f" House rule ({title}): {rule}. Reply with the formatted answer only, no sentence."
    return text


class HousestyleOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    match: Literal["exact", "contains"] = "exact"
    state_rule: bool = True  # feedback states the house rule next to expected vs given
    families: list[Family] = Field(default_factory=lambda: list(FAMILIES), min_length=1)


class HousestyleBenchmark:
    """Generated house-convention tasks. `score` never raises (see benchmarks/contract.py)."""

    name = "housestyle"

    def __init__(self, sizes: dict[Split, int], seed: int, options: HousestyleOptions) -> None:
        self.sizes = sizes
        self.seed = seed
        self.options = options

    def load(self, split: Split) -> list[Task]:
        families = tuple(dict.fromkeys(self.options.families))
        items = generate(split, self.sizes[split], self.seed, families)
        return [
            Task(
                id=f"{split}-{i:03d}-{item.family}",
                question=item.question,
                context=item.context,
                answers=(item.answer,),
                meta={"family": item.family, "rule": RULES[item.family][0]},
            )
            for i, item in enumerate(items)
        ]

    def score(self, task: Task, result: AgentResult) -> Score:
        expected = task.answers[0]
        family: Family = task.meta.get("family", "date")
        given = result.answer.strip()
        if result.is_error:
            why = f"the agent failed: {result.error or 'unknown error'}"
            return Score(0.0, False, f"expected {expected!r}; {why}")
        ok = given == expected if self.options.match == "exact" else expected in given
        if ok:
            return Score(1.0, True, f"[{RULES[family][0]}] correct: {expected!r}.")
        return Score(0.0, False, feedback(family, expected, given, state_rule=self.options.state_rule))


def create(cfg: Config) -> HousestyleBenchmark:
    b = cfg.benchmark
    options = parse_options(HousestyleOptions, b)
    sizes = split_sizes(b)  # none given: FIXED_SIZES (the tasks are generated, not split)
    return HousestyleBenchmark(sizes, b.seed, options)
