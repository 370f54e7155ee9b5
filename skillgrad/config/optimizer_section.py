"""The `optimizer` section: how the analyst reflects and edits, and how candidates are judged."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from skillgrad.config.fields import DEFAULT_MIN_LEARNING_RATE, Schedule, Section


class OptimizerConfig(Section):
    """How the analyst proposes edits, how many are applied, how a candidate is judged and which
    skills are kept (concepts: "The loop", "The gate", "Search")."""

    learning_rate: int = Field(4, ge=1)
    """Max edits applied per step (at the start of the schedule)."""
    min_learning_rate: int = Field(DEFAULT_MIN_LEARNING_RATE, ge=1)
    """The schedule's floor, at most `learning_rate` (a larger value is a config error; left unset
    with `learning_rate: 1` it is 1)."""
    lr_schedule: Schedule = "cosine"
    """How the learning rate goes from `learning_rate` to `min_learning_rate` over the run."""
    gate: Literal["strict", "paired"] = "strict"
    """The acceptance test: `strict` (more val outcomes, by at least `gate_min_gain`) or `paired`
    (an exact permutation test at `gate_alpha` over `val_repeats` runs per item)."""
    gate_alpha: float = Field(0.05, gt=0, lt=1)
    """`paired` gate: the significance level of its one-sided test."""
    val_repeats: int = Field(1, ge=1, le=8)
    """Runs of each val item per skill (the paired gate compares them item by item)."""
    validation: Literal["racing", "full"] = "racing"
    """`racing`: validate in waves, stop a candidate once it can no longer pass; `full`: one wave."""
    race_waves: int = Field(2, ge=1)
    """At most this many waves in a racing validation (a first wave is split off only when it
    can save twice its calls)."""
    merge: Literal["union"] = "union"
    """How the minibatches' patches are merged."""
    rank: Literal["support"] = "support"
    """How merged edits are ranked (`support`: by how many analysts proposed them)."""
    show_rejected: bool = True
    """Show the epoch's rejected edits to later analysts."""
    max_proposed_edits: int = Field(4, ge=1, le=16)
    """Edits one analyst reply may hold (lines a rewrite may change); selection then keeps at
    most the learning rate of those that apply."""
    edit_mode: Literal["patch", "rewrite"] = "patch"
    """`patch`: the analyst proposes edits whose targets are the skill's lines; `rewrite`: it
    returns the whole revised skill, diffed into line edits (same learning rate, selection and
    edit report)."""
    proposals_per_minibatch: int = Field(1, ge=1, le=16)
    """Analyst replies per minibatch; the first at `model.temperature`, the others at
    `proposal_temperature`; identical edits add support for the ranking."""
    proposal_temperature: float = Field(0.8, ge=0.0, le=2.0)
    """The sampling temperature of the extra proposals."""
    shape_example: bool = True
    """The analyst prompt shows one edit from a domain no task comes from (chess) to teach an
    edit's shape; copies of it are dropped. A model too small to write rules imitates its wording
    instead: off in `configs/quickstart.yaml` (measured in the results)."""
    reask_dropped: bool = True
    """When selection drops every edit a step's analysts proposed (identical replacements, rules
    the skill already states, copies of the prompt or of a task, edits rejected
    earlier), ask each of them once more with the skill's rules shown as empty (its examples section
    as it is), so it writes the rules the failures need from scratch (single-file skills with
    rules; `reflections/mb_NN_reask.json`, `reasked` in `merged_patch.json`; one more optimizer
    call each)."""
    max_skill_chars: int = Field(8000, ge=200)
    """An edit that would grow the skill (a package: one of its files, or a created file) past
    this is skipped."""
    allow_task_text: bool = False
    """Keep edits that copy a task's question, context or expected answer (normally dropped as
    "copies task text", counted in `summary.json` `task_text_copies`)."""
    task_text_ngram: int = Field(10, ge=3)
    """Consecutive words an edit shares with a task's text that make it a copy."""
    search: Literal["greedy", "frontier"] = "greedy"
    """`greedy`: one incumbent, replaced by a candidate that passes the gate; `frontier`: a pool of
    candidates kept by the val items they win."""
    parent: Literal["pareto", "lexicase", "best"] = "lexicase"
    """`frontier`: how each step's parent is drawn from the frontier: `lexicase` (items in a random
    order, keep the best on each in turn), `pareto` (weighted by the items a member wins; a win
    shared by k members counts 1/k), `best` (the highest val mean)."""
    merge_every: int = Field(3, ge=0)
    """`frontier`: every n-th step merges two frontier members with a common ancestor instead of
    making a child (0: never)."""
    reflection: Literal["digest", "workspace"] | None = None
    """How the analyst reads the minibatch's sessions. `digest`: the budgeted trace views in its
    prompt; `workspace`: a Claude Code or Codex analyst also reads every rollout's full session in
    a read-only folder the views' gap markers point into. Null: `workspace` when the optimizer is
    a harness, else `digest`."""
    reflection_turns: int = Field(12, ge=1, le=200)
    """Turns a workspace analyst may spend reading before it answers (Codex: tool calls); past
    it the reflection ends with an error and the step goes on without its edits."""
    reflection_timeout_s: float = Field(600.0, gt=0)
    """Wall time of one workspace reflection, re-asks included; past it, the same."""
    task_phrase_words: int = Field(3, ge=0)
    """A run of this many words of 4 letters or more that only one train task has ("private
    bill committees") makes an edit a copy of that task, unless the grader's feedback or the skill
    states it; 0 turns the term check off (whole fields, `task_text_ngram` and quoted answers
    still count)."""
    error_census: bool = False
    """The analyst prompt counts the step's answers by kind of miss (extra words around the
    expected span, part of it, another form, a different number, a different answer), with answer
    lengths, before asking for rules. Off: with it the 1.5B analyst wrote no rule on XQuAD and was
    drawn from the rule housestyle's feedback states (measured in the results)."""
    contrasts: int = Field(0, ge=0, le=8)
    """Passed/failed pairs shown to the analyst: a failed task beside a passed task of the step
    that expects the same shape of answer (number, option letter, yes/no, short phrase, longer
    text); 0: none."""
    form_summary: bool = True
    """The analyst prompt shows, over the whole step, the form every expected answer shares (an
    option label in parentheses, a bare number, a yes/no word, a date format) and the answers
    counted by their own form, how many failed, and how many failed ones hold the expected answer
    with other text around it; shown only where the expected answers share such a form and some
    answer lacks it (a step of mixed answers, as housestyle's, reads the prompt as before)."""
    form_fix: Literal["examples", "rule", "none"] = "examples"
    """When that form is what fails the step (no answer of another form passed, most failed
    answers have another form), skillgrad proposes the rule the form implies and, with
    `examples`, worked examples of the step's tasks up to `skill.max_examples` (no label more
    than an even share), beside the analysts' edits and through the same selection and gate
    (loop/formfix.py); with the examples at the cap, a later step whose answers give one wrong
    label twice or more swaps one example of that label for one of the label shown least; where
    the train answers share no form a rule can state, a step that selected no edit, or whose
    rules would follow rules the gate rejected while no example was ever judged, gives a skill
    holding no example worked examples of its tasks, alone; `rule`: the rule alone; `none`: only
    the analysts propose."""
    gate_min_gain: float = Field(1.0, ge=0.0)
    """`strict` gate: the smallest gain it keeps, in val items' worth (one item's mean going
    0 -> 1, i.e. 1 / items of the score, whatever `val_repeats` is); with 0/1 scores and one repeat
    any gain, with more repeats a whole item (`1 / val_repeats` keeps one more right run), and with
    continuous scores (F1) it rejects a gain smaller than fixing one item outright; 0: any gain."""
    tie_break: Literal["form", "none"] = "form"
    """What a validation tie comes to (loop/decision/tie_break.py): `form` keeps the candidate
    when its val answers hold the form the val split's expected answers share (an option label,
    a bare number, a date format) on at least half the items more than the current skill's, and
    no item scored while out of that form (its scores then cannot tell a wrong label from an
    answer no exact-match scorer passes); `none`: a tie keeps the current skill. Only the
    configured `strict` or `paired` gate of the greedy search is tie-broken."""
    target: Literal["body", "description", "both"] = "body"
    """What the run trains: `body` (on tasks), `description` (when the skill is loaded, on
    triggers) or `both` in alternating steps; needs `optimizer.search: greedy`."""

    @model_validator(mode="before")
    @classmethod
    def _floor_follows_a_low_rate(cls, data: Any) -> Any:
        """`learning_rate: 1` alone means at most one edit a step: the default floor follows it."""
        if isinstance(data, dict) and "min_learning_rate" not in data:
            rate = data.get("learning_rate")
            if isinstance(rate, int) and 1 <= rate < DEFAULT_MIN_LEARNING_RATE:
                return {**data, "min_learning_rate": rate}
        return data

    @field_validator("min_learning_rate")
    @classmethod
    def _floor_below_rate(cls, value: int, info: ValidationInfo) -> int:
        rate = info.data.get("learning_rate")
        if isinstance(rate, int) and value > rate:
            raise PydanticCustomError(
                "learning_rate_floor",
                "must be at most optimizer.learning_rate ({rate}), the most edits a step applies; "
                "lower it or raise learning_rate",
                {"rate": rate},
            )
        return value
