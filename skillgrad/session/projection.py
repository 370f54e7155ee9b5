"""`skillgrad train --estimate`: the calls and tokens a run is projected to make, spending nothing.

Measured, not assumed: the tasks (loaded from the benchmark, as the target's prompt renders them),
the initial skill, the target's prompt templates, the analyst's prompt (rendered from its
templates around a real minibatch of train tasks) and the target backend's turns per task (its
spec). What the projection must still assume is printed with it (`assumptions`): characters per
token, a target answer's length, a grader's feedback, how much of a validation racing runs, how
many candidates are accepted and how much the skill grows. Calls are counted as the trainer makes
them: the baseline on val; per step the batch's rollouts (and, with train.overlap, the next
batch's again after a rejection), one analyst call per minibatch and proposal, and a validation
of the candidate; the final test of the initial skill and of the best one. A frontier search
(`optimizer.search: frontier`) never rolls out ahead (nothing is redone); a merge step spends no
train batch and no reflection, and one analyst call when the lineages conflict; the final test also
reports frontier members. An analyst that reads a
workspace (`optimizer.reflection`) takes several model turns per call (`model_turns`), each
re-reading its prompt and what it opened so far. A retry is a call the provider bills and
`budget.max_calls` counts, so each stage's calls include its retries (`retries`: the assumed share
of calls retried once) wherever skillgrad's retry loop makes them: every backend but `local`, and
not a harness target's rollout (the CLI retries inside its one session).
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import asdict, dataclass
from typing import Any

from skillgrad.backend_specs import spec_for
from skillgrad.backends.chat_agent import task_prompt
from skillgrad.backends.interface import AgentResult
from skillgrad.benchmarks.contract import Score, Task
from skillgrad.config import BudgetConfig, Config
from skillgrad.demos import demo_from_task, render_entry
from skillgrad.evidence.mode import reflection_mode
from skillgrad.loop.analyst_prompt import AnalystInputs, analyst_messages
from skillgrad.loop.rewrite import rewrite_messages
from skillgrad.loop.rollout import Rollout
from skillgrad.loop.search.resolve import Side, merge_messages
from skillgrad.loop.search.threeway import Conflict
from skillgrad.loop.shapes import form_rule
from skillgrad.package.model import skill_chars
from skillgrad.skilldoc import Edit
from skillgrad.templates import render
from skillgrad.traces.steps import TraceCaps


@dataclass(frozen=True)
class Assumptions:
    """What the projection cannot measure before the run; each is printed with it."""

    chars_per_token: float = 4.0  # English text and code with common BPE tokenizers
    message_overhead_tokens: int = 8  # chat framing of one message (role markers)
    answer_tokens: int = 50  # a target's answer (a sentence or two), at most its max_output_tokens
    feedback_chars: int = 200  # a grader's feedback on one task
    edit_chars: int = 250  # one edit in an analyst's JSON reply (content, target, rationale)
    rule_chars: int = 70  # the skill line one applied edit adds
    # of a candidate's validation that runs: all of it, but with racing (optimizer.validation) half
    # the candidates are taken to stop after their first wave
    racing_stops_early: float = 0.5
    accepted_share: float = 0.5  # of the steps whose candidate is accepted (the skill grows)
    # frontier search: of its merge steps, those that find two lineages to merge (the others make
    # a child as usual); of those, the ones whose lines conflict (one analyst call); the members
    # on the frontier at the end besides the best (the final test reports them)
    merges_made: float = 0.5
    merge_conflicts: float = 0.5
    frontier_reported: int = 1
    # optimizer.reflection: workspace: the share of optimizer.reflection_turns an analyst reads for,
    # what one turn opens (a Read window or a search's hits) and the tokens of one tool call
    reading_turns_share: float = 0.5
    read_chars_per_turn: int = 3000
    tool_call_tokens: int = 40
    # of the calls of a backend that retries (a 429, a 5xx, a timeout), those retried once
    retry_share: float = 0.05


def _tokens(chars: float, a: Assumptions) -> int:
    return math.ceil(chars / a.chars_per_token)


def _stage(calls: int, input_per_call: float, output_per_call: float) -> dict[str, int]:
    return {
        "calls": calls,
        "input_tokens": round(calls * input_per_call),
        "output_tokens": round(calls * output_per_call),
    }


def _sum(stages: list[dict[str, int]]) -> dict[str, int]:
    return {k: sum(s[k] for s in stages) for k in ("calls", "input_tokens", "output_tokens")}


def _batches(n_train: int, batch: int) -> list[int]:
    full, rest = divmod(n_train, batch)
    return [batch] * full + ([rest] if rest else [])


ANSWER_SAMPLE = 12  # train tasks whose expected answers tell whether they share a form


def example_growth(cfg: Config, train: list[Task], a: Assumptions) -> int:
    """What worked examples add to the skill: where the train tasks' expected answers share a form
    (the analyst is offered examples, the form fix proposes them), skill.max_examples of the mean
    entry's size, in the accepted share of runs."""
    sample = [t for t in train if t.answers][:ANSWER_SAMPLE]
    if not cfg.skill.max_examples or form_rule([t.answers[0] for t in sample]) is None:
        return 0
    sizes = []
    for task in sample:
        with contextlib.suppress(ValueError):  # a task whose entry does not fit gives no example
            sizes.append(len(render_entry(demo_from_task(task, max_chars=cfg.skill.example_chars))))
    return round(a.accepted_share * cfg.skill.max_examples * sum(sizes) / len(sizes)) if sizes else 0


def target_prompt_chars(skill: str, tasks: list[Task]) -> float:
    """Mean characters of the target's prompt (system + task) over `tasks`, as rendered."""
    system = len(render("skillgrad.backends", "chat_target_system", skill="")) + skill_chars(skill)
    return system + sum(len(task_prompt(t)) for t in tasks) / max(1, len(tasks))


def analyst_prompt_chars(cfg: Config, skill: str, tasks: list[Task], a: Assumptions, trace_chars: int) -> int:
    """Characters of one analyst prompt over `tasks` (answers and feedback of the assumed sizes)."""
    answer = "x" * round(a.answer_tokens * a.chars_per_token)
    rollouts = [Rollout(t, AgentResult(answer), Score(0.0, False, "f" * a.feedback_chars)) for t in tasks]
    o = cfg.optimizer
    inputs = AnalystInputs(
        skill,
        rollouts,
        [],
        max(o.learning_rate, o.max_proposed_edits),
        False,
        TraceCaps(),
        shape_example=o.shape_example,
        census=o.error_census,
        contrasts=o.contrasts,
    )
    messages = rewrite_messages(inputs) if o.edit_mode == "rewrite" else analyst_messages(inputs)
    return sum(len(m.content) for m in messages) + trace_chars


def _analyst_tokens(
    cfg: Config, skill: str, sample: list[Task], a: Assumptions, half_grown: int
) -> tuple[int, int, int]:
    """(trace chars, input tokens, output tokens) of one analyst call halfway through the run."""
    model, opt, train = cfg.model, cfg.optimizer, cfg.train
    per_prompt = min(train.minibatch_size, train.batch_size)
    trace_chars = 0
    if model.analyst_sees_traces():
        trace_chars = min(per_prompt * cfg.trace.total_chars, cfg.trace.prompt_chars)
    reflect_in = _tokens(analyst_prompt_chars(cfg, skill, sample, a, trace_chars) + half_grown, a)
    reflect_in += 2 * a.message_overhead_tokens
    edits = max(opt.learning_rate, opt.max_proposed_edits)
    if opt.edit_mode == "rewrite":  # the whole skill comes back, some lines changed
        reply_chars = skill_chars(skill) + half_grown + edits * a.rule_chars
    else:
        reply_chars = edits * a.edit_chars
    return trace_chars, reflect_in, min(model.max_output_tokens_for("optimizer"), _tokens(reply_chars, a))


def _reading(cfg: Config, a: Assumptions, reflect_in: int, reflect_out: int) -> tuple[int, int, int]:
    """(model turns, input tokens, output tokens) of one reflection. In a workspace each turn
    re-reads the prompt (its guide included) and everything opened before it, then calls a tool;
    the last turn answers."""
    if reflection_mode(cfg) == "digest":
        return 1, reflect_in, reflect_out
    reading = max(1, round(cfg.optimizer.reflection_turns * a.reading_turns_share))
    listing = "\n".join(f"- tasks/{i:02d}/: task {i}" for i in range(1, cfg.train.minibatch_size + 1))
    guide = render("skillgrad.evidence", "guide", listing=listing, tools="Read, Grep and Glob", turns=reading)
    prompt = reflect_in + _tokens(len(guide), a)
    opened = _tokens(a.read_chars_per_turn, a)
    tokens_in = (reading + 1) * prompt + opened * reading * (reading + 1) // 2
    return reading + 1, tokens_in, reading * a.tool_call_tokens + reflect_out


def _validated_share(cfg: Config, a: Assumptions) -> float:
    """The share of a validation that runs: racing in waves stops some candidates early."""
    opt = cfg.optimizer
    if opt.validation == "racing" and opt.race_waves > 1:
        return 1 - a.racing_stops_early * (1 - 1 / opt.race_waves)
    return 1.0


def _rollout_tokens(
    skill: str, tasks: list[Task], a: Assumptions, turns: int, answer: int, half_grown: int
) -> tuple[int, int]:
    """(input, output) tokens of one rollout: every turn re-reads the prompt and answers."""
    prompt = _tokens(target_prompt_chars(skill, tasks) + half_grown, a) + 2 * a.message_overhead_tokens
    return turns * prompt, turns * answer


def _retried(cfg: Config, stages: dict[str, dict[str, int]], a: Assumptions) -> None:
    """Each stage's retries counted as calls (see the module docstring)."""
    m = cfg.model
    target = spec_for(m.backend_for("target"))
    target_retries = target.name != "local" and not target.harness
    for name, stage in stages.items():
        role_retries = (
            m.backend_for("optimizer") != "local" if name in ("reflect", "merge") else target_retries
        )
        stage["retries"] = round(stage["calls"] * a.retry_share) if role_retries and m.max_retries else 0
        stage["calls"] += stage["retries"]


def _totals(stages: dict[str, dict[str, int]]) -> tuple[dict[str, dict[str, int]], dict[str, int]]:
    """The stages summed by role (the target's rollouts, the optimizer's reflections) and in all."""
    roles = {
        "target": _sum([stages[s] for s in ("baseline", "rollout", "validate", "test")]),
        "optimizer": _sum([stages[s] for s in ("reflect", "merge") if s in stages]),
    }
    total = _sum(list(roles.values()))
    total["total_tokens"] = total["input_tokens"] + total["output_tokens"]
    return roles, total


def _merge_tokens(cfg: Config, a: Assumptions) -> tuple[int, int]:
    """(input, output) tokens of a merge's analyst call: one conflict of a rule a side, each side's
    edits of a learning rate."""
    rule = "x" * a.rule_chars
    side = Side("v0001", 0.5, 1, [Edit("add", "end", rule)] * cfg.optimizer.learning_rate)
    messages = merge_messages([Conflict("SKILL.md", [rule], [rule], [rule])], side, side)
    prompt = sum(len(m.content) for m in messages)
    return _tokens(prompt, a) + 2 * a.message_overhead_tokens, _tokens(2 * a.rule_chars + 60, a)


def frontier_steps(cfg: Config, steps: int, a: Assumptions) -> tuple[int, int]:
    """(merge steps that merge, of those the ones with an analyst call) of a run of `steps`."""
    opt = cfg.optimizer
    if opt.search != "frontier" or not opt.merge_every:
        return 0, 0
    merged = round(a.merges_made * (steps // opt.merge_every))
    return merged, round(a.merge_conflicts * merged)


def estimate(
    cfg: Config,
    splits: dict[str, list[Task]],
    skill: str,
    a: Assumptions | None = None,
    test_repeats: int = 1,
) -> dict[str, Any]:
    """The projection for a run over the loaded `splits` starting from `skill` (see the module);
    each test item runs `test_repeats` times (a description's: `benchmark.trigger_repeats`)."""
    a = a or Assumptions()
    train, model, opt = cfg.train, cfg.model, cfg.optimizer
    n_train, n_val, n_test = (len(splits.get(s, [])) for s in ("train", "val", "test"))
    turns = spec_for(model.backend_for("target")).turns_per_task  # the backend's own: 1 for a chat target
    batches = _batches(n_train, train.batch_size) if n_train else []
    steps = train.epochs * len(batches)
    growth = round(a.accepted_share * steps * opt.learning_rate * a.rule_chars)
    growth += example_growth(cfg, splits.get("train", []), a) if steps else 0
    half_grown = growth // 2  # the skill halfway through the run has grown this much

    answer = min(a.answer_tokens, model.max_output_tokens_for("target"))
    all_tasks = [t for s in ("train", "val", "test") for t in splits.get(s, [])]
    rollout_in, rollout_out = _rollout_tokens(skill, all_tasks, a, turns, answer, half_grown)
    sample = splits.get("train", [])[: min(train.minibatch_size, train.batch_size)]
    trace_chars, reflect_in, reflect_out = _analyst_tokens(cfg, skill, sample, a, half_grown)
    reflect_turns, reflect_in, reflect_out = _reading(cfg, a, reflect_in, reflect_out)
    calls = _call_counts(cfg, a, batches, steps, n_train, n_val)
    frontier = opt.search == "frontier"
    tested = 2 if steps and a.accepted_share > 0 else 1
    tested += a.frontier_reported if frontier and steps else 0
    stages = {
        "baseline": _stage(n_val * opt.val_repeats, rollout_in, rollout_out),
        "rollout": _stage(calls.rollouts + calls.redone, rollout_in, rollout_out),
        "validate": _stage(calls.validate, rollout_in, rollout_out),
        "test": _stage(tested * n_test * test_repeats, rollout_in, rollout_out),
        "reflect": _stage(calls.reflect, reflect_in, reflect_out),
    }
    if frontier:
        stages["merge"] = _stage(calls.merge_calls, *_merge_tokens(cfg, a))
    stages["reflect"]["model_turns"] = calls.reflect * reflect_turns
    _retried(cfg, stages, a)
    roles, total = _totals(stages)
    measured = {
        "tasks": {"train": n_train, "val": n_val, "test": n_test},
        "initial_skill_chars": skill_chars(skill),
        "target_prompt_chars": round(target_prompt_chars(skill, all_tasks)),
        "analyst_prompt_chars": analyst_prompt_chars(cfg, skill, sample, a, trace_chars),
    }
    assumed = {
        **asdict(a),
        "agent_turns": turns,
        "answer_tokens": answer,
        "skill_growth_chars": growth,
        "validated_share": round(calls.val_share, 3),
        "rollouts_redone": calls.redone,
        **({"merge_steps": calls.merges} if frontier else {}),
        "reflection": reflection_mode(cfg),
        "analyst_turns": reflect_turns,
        "not_counted": "call-cache hits, steps with no edit to validate, a judge's calls",
    }
    return {
        "steps": steps,
        "steps_per_epoch": len(batches),
        "by_stage": stages,
        "by_role": roles,
        "total": total,
        "measured": measured,
        "assumptions": assumed,
        "budget_check": _budget_verdict(cfg.budget, total),
    }


@dataclass(frozen=True)
class _Calls:
    """The calls a run's steps make, by what makes them."""

    reflect: int  # analyst calls
    merges: int  # frontier merge steps (no batch, no reflection)
    merge_calls: int  # the merge steps' optimizer calls
    val_share: float  # the share of steps that reach validation
    validate: int
    redone: int  # rollouts redone when train.overlap rolled a batch out beside a rejected candidate
    rollouts: int


def _call_counts(
    cfg: Config, a: Assumptions, batches: list[int], steps: int, n_train: int, n_val: int
) -> _Calls:
    train, opt = cfg.train, cfg.optimizer
    reflect = train.epochs * sum(math.ceil(b / train.minibatch_size) for b in batches)
    reflect *= opt.proposals_per_minibatch
    merges, merge_calls = frontier_steps(cfg, steps, a)
    if merges:
        reflect -= round(merges * reflect / steps)
    val_share = _validated_share(cfg, a)
    # with train.overlap, the next batch is rolled out beside a validation and redone if it fails;
    # the frontier draws a parent after the gate, so nothing runs ahead
    overlapped = train.overlap and opt.search != "frontier"
    redone = round((1 - a.accepted_share) * max(0, steps - 1) * train.batch_size) if overlapped else 0
    merged_rollouts = round(merges * train.epochs * n_train / steps) if merges else 0
    return _Calls(
        reflect=reflect,
        merges=merges,
        merge_calls=merge_calls,
        val_share=val_share,
        validate=round(steps * n_val * opt.val_repeats * val_share),
        redone=redone,
        rollouts=train.epochs * n_train - merged_rollouts,
    )


def _budget_verdict(budget: BudgetConfig, total: dict[str, int]) -> list[str]:
    """Which configured caps the projection would reach (usd cannot be projected: no prices)."""
    notes = []
    if budget.max_calls is not None and total["calls"] > budget.max_calls:
        notes.append(f"projected {total['calls']} calls exceed budget.max_calls={budget.max_calls}")
    if budget.max_tokens is not None and total["total_tokens"] > budget.max_tokens:
        notes.append(f"projected {total['total_tokens']} tokens exceed budget.max_tokens={budget.max_tokens}")
    return notes
