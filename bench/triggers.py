"""Trigger F1 before and after description training, with a real local model as the router.

Five skills, twelve requests each (60 queries). For each skill in turn the run trains its
description (`optimizer.target: description`): its own twelve requests should load it, three
requests of each other skill should not (24 queries, split 40 / 30 / 30 % within each label), and
the other four skills are installed beside it with good descriptions
(`benchmark.distractor_skills`). Each skill starts from a weak description: about something else
(`unit-convert`: dates and times, `git-commits`: version numbers), too vague (`sql-queries`,
`email-drafting`) or too broad (`recipe-scaling`: "use this skill for every request"). The target
is a chat model as router (it picks one installed skill or none from their names and descriptions,
`benchmark.trigger_repeats` runs per query at `model.temperature`); the optimizer rewrites the
description. Each (router, skill,
seed) is one `skillgrad train` subprocess; the seed draws the trigger split and the batch order.

Printed: per run the trigger F1 of the initial and the trained description on val and on test
(and, when a description was kept, the initial one and the trained one as a diff), and
the longest description any analyst proposed (the limit is `skill.description_chars`); then per
router the mean test F1 before and after over skills and seeds.

    flock /work/helpers/model.lock python bench/triggers.py --router /path/qwen05.gguf \\
        --optimizer /path/qwen15.gguf --seeds 0 1 2
    python bench/triggers.py --router packaged --optimizer packaged --seeds 0   # SmolLM2-135M
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from skillgrad.activation.description import own_description

ROOT = Path(__file__).resolve().parent.parent
LIMIT = 300  # skill.description_chars of every run

SKILLS: dict[str, dict[str, Any]] = {
    "unit-convert": {
        "initial": "Formats dates and times for reports.",
        "good": "Converts measurements between units (length, weight, volume, temperature, speed). Use "
        "when the user asks to convert a quantity from one unit to another.",
        "queries": [
            "How many kilometres is 26.2 miles?",
            "Convert 350 degrees Fahrenheit to Celsius.",
            "What is 5 feet 11 inches in centimetres?",
            "How many ounces are in 2.5 kilograms?",
            "Convert 60 miles per hour to metres per second.",
            "How many litres is 3 US gallons?",
            "What is 100 square metres in square feet?",
            "Turn 12 stone into kilograms.",
            "Convert 2 cups of water to millilitres.",
            "What is 30 knots in kilometres per hour?",
            "How many inches is 1.8 metres?",
            "Convert 72 degrees Celsius to Kelvin.",
        ],
    },
    "git-commits": {
        "initial": "Explains how version numbers work in software releases.",
        "good": "Writes and rewords git commit messages: subject line, body, conventional commits. Use "
        "when the user asks for a commit message or to improve one.",
        "queries": [
            "Write a commit message for a change that fixes the login timeout bug.",
            "Summarise my staged diff as a conventional commit.",
            "Suggest a commit subject for renaming the config loader module.",
            "My commit message is too long, can you shorten it to 50 characters?",
            "Write the commit body explaining why we removed the cache layer.",
            "What should the commit message be for bumping the version to 2.3.0?",
            "Reword this commit message: 'stuff', for a refactor of the parser.",
            "Give me a good commit message for adding unit tests to the payment service.",
            "Write a one-line commit message for deleting dead code in the router.",
            "Turn these notes into a commit message: add retries, log failures.",
            "Suggest a commit message for upgrading the Django dependency.",
            "Is 'fixed bug' a good commit message? Write a better one for my null check fix.",
        ],
    },
    "sql-queries": {
        "initial": "Database helper.",
        "good": "Writes and fixes SQL queries (PostgreSQL, MySQL, SQLite): selects, joins, grouping, "
        "deletes. Use when the user asks for a query over database tables.",
        "queries": [
            "Write a SQL query that lists customers who ordered twice in May.",
            "How do I count rows per category in Postgres?",
            "Join the orders and users tables to get each user's last order date.",
            "Write a query for the top 5 products by revenue.",
            "Select duplicate email addresses from the accounts table.",
            "Why is my GROUP BY query failing with a column not in aggregate error?",
            "Delete rows older than 30 days from the events table.",
            "Write an SQLite query to average salary by department.",
            "Write a query that finds orders with no matching customer.",
            "How do I update the price column for all rows in category 7?",
            "Write a SQL window function that ranks employees by salary within each team.",
            "Create an index on the email column of the users table.",
        ],
    },
    "recipe-scaling": {
        "initial": "Use this skill for every request.",
        "good": "Scales cooking and baking recipes to another number of servings and adjusts ingredient "
        "amounts. Use when the user wants more or fewer portions of a recipe.",
        "queries": [
            "Scale this pancake recipe from 4 servings to 10.",
            "I want to halve a recipe that uses 3 eggs and 250 g flour.",
            "How much butter do I need for 1.5 times this cookie recipe?",
            "Triple the ingredients of my chili recipe for a party.",
            "Adjust a cake recipe for 6 people instead of 8.",
            "My bread recipe makes two loaves; give me amounts for five.",
            "Scale down a soup recipe that serves 12 to serve 3.",
            "Make this lasagne recipe for 4 work for 9 guests.",
            "Double my grandmother's apple pie recipe.",
            "I only have 2 eggs; scale this 4-egg brownie recipe down to match.",
            "Make a quarter batch of this muffin recipe.",
            "Scale this curry for 20 people at a potluck.",
        ],
    },
    "email-drafting": {
        "initial": "Writing assistant for documents.",
        "good": "Drafts and polishes emails: requests, follow-ups, apologies, introductions, replies. Use "
        "when the user asks to write or compose an email.",
        "queries": [
            "Draft an email asking my manager for Friday off.",
            "Write a polite follow-up email to a client who has not paid the invoice.",
            "Compose an email declining a meeting invitation.",
            "Help me write an email introducing myself to a new team.",
            "Write a short thank-you email after a job interview.",
            "Draft an email apologising for a delayed shipment.",
            "Write an email to reschedule tomorrow's call to next week.",
            "Compose a cold outreach email to a potential partner.",
            "Write an email to my landlord about a broken heater.",
            "Draft a reply accepting the job offer and confirming my start date.",
            "Compose an email reminding the team about Thursday's deadline.",
            "Write a farewell email to colleagues on my last day.",
        ],
    },
}
NEGATIVES_PER_OTHER = 3


def write_inputs(skill: str, folder: Path) -> Path:
    """The skill, its trigger set and the other four as distractors under `folder`; the config."""
    folder.mkdir(parents=True, exist_ok=True)
    spec = SKILLS[skill]
    (folder / "SKILL.md").write_text(
        f"---\nname: {skill}\ndescription: {json.dumps(spec['initial'])}\n---\n\nDo the task well.\n",
        encoding="utf-8",
    )
    rows = [{"id": f"{skill}-{i}", "query": q, "should_trigger": True} for i, q in enumerate(spec["queries"])]
    for other, other_spec in SKILLS.items():
        if other == skill:
            continue
        queries = other_spec["queries"][:NEGATIVES_PER_OTHER]
        rows += [{"id": f"{other}-{i}", "query": q, "should_trigger": False} for i, q in enumerate(queries)]
        distractor = folder / "distractors" / other
        distractor.mkdir(parents=True, exist_ok=True)
        description = json.dumps(other_spec["good"])
        text = f"---\nname: {other}\ndescription: {description}\n---\n\nDo the task well.\n"
        (distractor / "SKILL.md").write_text(text, encoding="utf-8")
    (folder / "triggers.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return folder


def config_lines(
    folder: Path, skill: str, router: str, optimizer: str, seed: int, args: argparse.Namespace
) -> list[str]:
    def model(value: str) -> str:
        return "null" if value == "packaged" else json.dumps(str(Path(value).resolve()))

    return [
        "benchmark:",
        f"  triggers: {folder / 'triggers.jsonl'}",
        f"  distractor_skills: {folder / 'distractors'}",
        f"  trigger_repeats: {args.repeats}",
        "  trigger_split: [0.4, 0.3, 0.3]",
        f"  seed: {seed}",
        "skill:",
        f"  init: {folder / 'SKILL.md'}",
        f"  name: {skill}",
        f"  description_chars: {LIMIT}",
        "model:",
        "  backend: local",
        f"  target_model: {model(router)}",
        f"  optimizer_model: {model(optimizer)}",
        f"  temperature: {args.temperature}",
        "  target_max_output_tokens: 32",
        "  optimizer_max_output_tokens: 400",
        "  local_ctx: 4096",
        "train:",
        f"  epochs: {args.epochs}",
        "  batch_size: 8",
        "  concurrency: 1",
        f"  seed: {seed}",
        "optimizer:",
        "  target: description",
        "cache:",
        f"  dir: {args.cache}",
    ]


def proposed_lengths(run: Path) -> list[int]:
    """The length of every description an analyst proposed in the run."""
    lengths = []
    for record in run.glob("steps/*/reflections/*.json"):
        reply = json.loads(record.read_text(encoding="utf-8")).get("reply") or ""
        try:
            lengths.append(len(str(json.loads(reply).get("description", ""))))
        except (ValueError, AttributeError):
            continue
    return lengths


def one_run(skill: str, router: str, seed: int, args: argparse.Namespace) -> dict[str, Any]:
    label = Path(router).stem if router != "packaged" else "smollm2-135m"
    base = args.out / label / f"{skill}-s{seed}"
    folder = write_inputs(skill, base / "inputs")
    config = base / "config.yaml"
    config.write_text("\n".join(config_lines(folder, skill, router, args.optimizer, seed, args)) + "\n")
    run = base / "run"
    started = time.monotonic()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "skillgrad.cli",
            "train",
            "--config",
            str(config),
            "--out",
            str(run),
            "--resume",
        ]
        if (run / "config.json").is_file()
        else [sys.executable, "-m", "skillgrad.cli", "train", "--config", str(config), "--out", str(run)],
        capture_output=True,
        text=True,
        check=False,
    )
    row: dict[str, Any] = {
        "router": label,
        "skill": skill,
        "seed": seed,
        "wall_s": round(time.monotonic() - started),
    }
    if done.returncode != 0:
        row["error"] = (done.stderr or done.stdout).strip().splitlines()[-1:]
        return row
    summary = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    test = summary.get("test") or {}
    lengths = proposed_lengths(run)
    best = (run / "best_skill.md").read_text(encoding="utf-8")
    row.update(
        trained=own_description(best) if summary["accepted"] else None,
        val=(summary["baseline_val_score"], summary["best_val_score"]),
        test=(test.get("baseline"), test.get("best")),
        accepted=summary["accepted"],
        proposals=len(lengths),
        longest=max(lengths, default=0),
        over_limit=sum(n > LIMIT for n in lengths),
    )
    return row


def show(row: dict[str, Any]) -> str:
    head = f"{row['router']:<14} {row['skill']:<15} seed {row['seed']}"
    if "error" in row:
        return f"{head}  failed: {row['error']}"
    (v0, v1), (t0, t1) = row["val"], row["test"]
    return (
        f"{head}  val F1 {v0:.3f} -> {v1:.3f}  test F1 {t0:.3f} -> {t1:.3f}  accepted {row['accepted']}  "
        f"proposals {row['proposals']} (longest {row['longest']} chars, {row['over_limit']} over {LIMIT})  "
        f"{row['wall_s']} s"
    ) + (f"\n    - {SKILLS[row['skill']]['initial']}\n    + {row['trained']}" if row["trained"] else "")


def main(argv: list[str] | None = None) -> int:
    fmt = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=fmt)
    parser.add_argument("--router", action="append", default=[], help="a GGUF, or 'packaged' (repeatable)")
    parser.add_argument("--optimizer", default="packaged", help="a GGUF, or 'packaged' (SmolLM2-135M)")
    parser.add_argument("--skills", nargs="+", default=list(SKILLS), choices=list(SKILLS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--repeats", type=int, default=3, help="benchmark.trigger_repeats")
    parser.add_argument("--temperature", type=float, default=0.7)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "triggers")
    parser.add_argument("--cache", type=Path, help="the call cache (default: OUT/cache)")
    args = parser.parse_args(argv)
    args.out = args.out.resolve()
    args.cache = (args.cache or args.out / "cache").resolve()
    rows = []
    for router in args.router or ["packaged"]:
        for skill in args.skills:
            for seed in args.seeds:
                rows.append(one_run(skill, router, seed, args))
                print(show(rows[-1]), flush=True)
    for router in dict.fromkeys(r["router"] for r in rows):
        done = [r for r in rows if r["router"] == router and "error" not in r]
        if not done:
            continue
        before = sum(r["test"][0] for r in done) / len(done)
        after = sum(r["test"][1] for r in done) / len(done)
        better = sum(r["test"][1] > r["test"][0] for r in done)
        worse = sum(r["test"][1] < r["test"][0] for r in done)
        over = sum(r["over_limit"] for r in done)
        print(
            f"{router}: mean test F1 {before:.3f} -> {after:.3f} over {len(done)} runs "
            f"({better} better, {worse} worse); descriptions over {LIMIT} chars proposed: {over}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
