"""`housecli`: agentic tasks that need a skill package. Each task asks for a shipping quote from
the house CLI (`tools/house.py` in the workspace, see `house_tool`), whose options are documented
only in the skill's references: the zone codes of the cities, the lanes, and that `--weight`
takes whole grams while tasks state kilograms. An agent without the reference cannot call the
tool right; the starter package (`skills/housecli/`) documents the flags but not the unit.

Score: the reply must contain the quote code the right call prints (exact code, case-sensitive).
The feedback names the call that would have given it, so an analyst can fix the reference.
Splits are deterministic from `benchmark.seed` and never share a task.
"""

from __future__ import annotations

import hashlib
import random
import shutil
from pathlib import Path

from skillgrad.benchmarks.contract import SPLITS, Split
from skillgrad.benchmarks.house_tool import LANES, ZONES, quote_code
from skillgrad.benchmarks.splits import split_sizes
from skillgrad.config import Config
from skillgrad.errors import UserError
from skillgrad.values import AgentResult, Score, Task

TOOL = Path(__file__).with_name("house_tool.py")
MAX_TASKS = 1000


def _split_of(key: str) -> Split:
    return SPLITS[int.from_bytes(hashlib.sha256(key.encode()).digest()[:4], "big") % len(SPLITS)]


def make_task(split: Split, index: int, city: str, lane: str, grams: int) -> Task:
    kilos = f"{grams / 1000:g}"
    question = (
        f"Get the house shipping quote for a {kilos} kg parcel to {city} on the {lane} lane, "
        "using the house CLI in tools/house.py. Reply with the quote code only."
    )
    zone = ZONES[city]
    return Task(
        id=f"{split}-{index:03d}",
        question=question,
        answers=(quote_code(zone, lane, grams),),
        meta={"call": f"python tools/house.py quote --zone {zone} --lane {lane} --weight {grams}"},
    )


def generate(split: Split, size: int, seed: int) -> list[Task]:
    rng = random.Random(f"housecli:{seed}:{split}")
    tasks: list[Task] = []
    seen: set[str] = set()
    for _ in range(MAX_TASKS * 20):
        if len(tasks) == size:
            return tasks
        city, lane, grams = rng.choice(sorted(ZONES)), rng.choice(LANES), rng.randrange(200, 9800, 100)
        key = f"{city}|{lane}|{grams}"
        if key in seen or _split_of(key) != split:
            continue
        seen.add(key)
        tasks.append(make_task(split, len(tasks), city, lane, grams))
    raise UserError(f"housecli: cannot draw {size} distinct {split} tasks; lower benchmark.{split}_size")


class HouseCliBenchmark:
    """Agentic: `prepare` puts the CLI in the workspace; `score` never raises."""

    name = "housecli"

    def __init__(self, sizes: dict[Split, int], seed: int) -> None:
        self.sizes = sizes
        self.seed = seed

    def load(self, split: Split) -> list[Task]:
        return generate(split, self.sizes[split], self.seed)

    def prepare(self, task: Task, workspace: Path) -> None:
        (workspace / "tools").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(TOOL, workspace / "tools" / "house.py")

    def score(self, task: Task, result: AgentResult) -> Score:
        expected = task.answers[0]
        if result.is_error:
            why = result.error or "unknown error"
            return Score(0.0, False, f"the agent failed ({why}); expected {expected}")
        if expected in result.answer:
            return Score(1.0, True, f"correct quote {expected}")
        given = result.answer.strip()[:160] or "(empty answer)"
        return Score(
            0.0,
            False,
            f"expected quote {expected}, the output of `{task.meta['call']}`; got {given!r}",
        )


def create(cfg: Config) -> HouseCliBenchmark:
    if cfg.benchmark.options:
        given = sorted(cfg.benchmark.options)
        raise UserError(f"benchmark.options: benchmark 'housecli' takes no options (got {given})")
    b = cfg.benchmark
    return HouseCliBenchmark(split_sizes(b), b.seed)  # none given: FIXED_SIZES (generated tasks)
