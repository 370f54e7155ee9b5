"""Replay a run's analyst calls against an optimizer: what would this checkout's analyst propose?

    python bench/analyst_replay.py RUN --config CFG [--steps 1 2] [--set KEY=VALUE ...] [--stored]

For each step of the run folder RUN (default: every step with a first analyst prompt,
`steps/NNNN/reflections/mb_NN.json`), the minibatch's rollouts are read back from the step's
`rollouts/train`, the analyst prompt is rebuilt with this checkout's code and CFG's optimizer
settings (census, contrasts, example edit; `--stored` sends the prompt stored in the run
instead), and CFG's optimizer is asked once. Each proposed edit is put through the filters that
selection applies (copied from the prompt, copies a task of the run's train set). One optimizer
call per prompt, no target calls: a prompt change is measured in minutes instead of a training
run. Prints each edit with its verdict.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from pathlib import Path
from typing import Any

from skillgrad.backends.registry import Backends
from skillgrad.config import load_config
from skillgrad.loop.analyst_prompt import AnalystInputs, analyst_messages, parse_patch, patch_schema
from skillgrad.loop.candidate import prompt_copy_guard
from skillgrad.loop.taskcopy import TaskCopyGuard, TaskIndex
from skillgrad.run_folder import RunFiles
from skillgrad.skilldoc import Edit
from skillgrad.traces.steps import TraceCaps
from skillgrad.values import AgentResult, Message, Rollout, Score, Task

_SKILL = re.compile(r"<skill>\n(.*?)\n</skill>", re.DOTALL)
EMPTY_SKILL = "(the skill is empty)"


def read_rollout(folder: Path) -> Rollout:
    task = json.loads((folder / RunFiles.TASK).read_text(encoding="utf-8"))
    score = json.loads((folder / RunFiles.SCORE).read_text(encoding="utf-8"))
    answer = (folder / RunFiles.ANSWER).read_text(encoding="utf-8")
    return Rollout(
        Task(task["id"], task["question"], task.get("context"), tuple(task.get("answers", ()))),
        AgentResult(answer),
        Score(score["value"], score["passed"], score["feedback"]),
    )


def train_rollouts(step: Path) -> dict[str, Rollout]:
    """The step's train rollouts, in the order its analysts were shown them (the batch's order)."""
    folder = step / "rollouts" / "train"
    done = [read_rollout(d) for d in sorted(folder.iterdir()) if (d / RunFiles.SCORE).is_file()]
    found = {r.task.id: r for r in done}
    shown = [
        task
        for path in sorted((step / "reflections").glob("mb_[0-9][0-9].json"))
        for task in json.loads(path.read_text(encoding="utf-8")).get("tasks", [])
    ]
    order = [t for t in dict.fromkeys(shown) if t in found] + [t for t in found if t not in shown]
    return {t: found[t] for t in order}


def shown_skill(record: dict[str, Any]) -> str:
    """The skill the stored prompt showed ("" for an empty one)."""
    user = next(m["content"] for m in record["prompt"] if m["role"] == "user")
    found = _SKILL.search(user)
    text = found.group(1) if found else ""
    return "" if text.strip() == EMPTY_SKILL else text + "\n"


def verdicts(edits: list[Edit], echo: Any, guard: TaskCopyGuard) -> list[tuple[Edit, str]]:
    out = []
    for edit in edits:
        copy = guard(edit)
        why = "copied from the prompt" if echo(edit) else (f"copies task text ({copy})" if copy else "")
        out.append((edit, why))
    return out


def show(title: str, seconds: float, judged: list[tuple[Edit, str]]) -> None:
    print(f"## {title} ({seconds:.0f} s)")
    for edit, why in judged:
        print(f"  {json.dumps(edit.to_json(), ensure_ascii=False)}\n    => {why or 'kept'}")
    if not judged:
        print("  (no edits)")


def analyst_inputs(
    cfg: Any,
    skill: str,
    minibatch: list[Rollout],
    batch: list[Rollout],
) -> AnalystInputs:
    """The analyst's inputs as the trainer builds them (no traces: these are chat targets)."""
    o = cfg.optimizer
    return AnalystInputs(
        skill,
        minibatch,
        [],
        max(o.learning_rate, o.max_proposed_edits),
        False,
        TraceCaps(),
        cfg.trace.prompt_chars,
        shape_example=o.shape_example,
        batch=tuple(batch),
        census=o.error_census,
        contrasts=o.contrasts,
    )


def ask(chat: Any, messages: list[Message], skill: str, max_edits: int) -> tuple[list[Edit], float]:
    start = time.perf_counter()
    reply = chat.complete(messages, schema=patch_schema(skill, max_edits), stage="reflect")
    return parse_patch(reply.data, 0, 0, max_edits).edits, time.perf_counter() - start


def replay_step(args: argparse.Namespace, chat: Any, step: Path, index: TaskIndex) -> None:
    """Every first analyst prompt of `step`, replayed."""
    cfg = args.cfg
    rollouts = train_rollouts(step)
    batch = list(rollouts.values())
    echo = prompt_copy_guard().with_failed_answers([r.result.answer for r in batch if not r.score.passed])
    graded = {r.task.id: (r.result.answer, r.score.feedback) for r in batch}
    for path in sorted((step / "reflections").glob("mb_[0-9][0-9].json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        if "prompt" not in record:
            continue
        minibatch = [rollouts[t] for t in record["tasks"] if t in rollouts]
        skill = shown_skill(record)
        inputs = analyst_inputs(cfg, skill, minibatch, batch)
        stored = [Message(m["role"], m["content"]) for m in record["prompt"]]
        messages = stored if args.stored else analyst_messages(inputs)
        guard = TaskCopyGuard(
            [r.task for r in batch], cfg.optimizer.task_text_ngram, index=index, graded=graded, skill=skill
        )
        edits, seconds = ask(chat, messages, skill, inputs.max_edits)
        judged = verdicts(edits, echo, guard)
        show(f"{step.name}/{path.stem}", seconds, judged)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path)
    parser.add_argument("--config", type=Path, required=True, help="the optimizer and its settings")
    parser.add_argument("--steps", type=int, nargs="*", help="default: every step with a prompt")
    parser.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--stored", action="store_true", help="send the prompts stored in the run")
    args = parser.parse_args()
    args.cfg = load_config(args.config, args.sets)
    every = sorted(d for d in (args.run / "steps").glob("[0-9]*") if (d / "rollouts" / "train").is_dir())
    steps = [s for s in every if not args.steps or int(s.name) in args.steps]
    pool = [r.task for s in every for r in train_rollouts(s).values()]  # the run's train set
    index = TaskIndex(list({t.id: t for t in pool}.values()), args.cfg.optimizer.task_phrase_words)
    chat = Backends(args.cfg).chat("optimizer")
    for step in steps:
        replay_step(args, chat, step, index)


if __name__ == "__main__":
    main()
