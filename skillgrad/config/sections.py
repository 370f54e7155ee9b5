"""The config's typed sections (pydantic): every key a YAML file or `--set` may give, with its
default and bounds; the backend names come from the registry (`skillgrad.backend_specs`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PlainValidator,
    PrivateAttr,
    SecretStr,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from skillgrad.backend_specs import BACKENDS, DEFAULT_BACKEND, backend_names, spec_for
from skillgrad.demos import DEFAULT_EXAMPLE_CHARS
from skillgrad.values import Effort


def _registered_backend(value: Any) -> str:
    """A backend name from the registry (read at validation time), else the error a Literal of
    the names would give."""
    if isinstance(value, str) and value in BACKENDS:
        return value
    names = [repr(n) for n in backend_names()]
    expected = f"{', '.join(names[:-1])} or {names[-1]}" if len(names) > 1 else "".join(names)
    raise PydanticCustomError("literal_error", "Input should be {expected}", {"expected": expected})


BackendName = Annotated[str, PlainValidator(_registered_backend)]
# Upper bounds of keys where a larger value is a typo that would hang or exhaust the machine.
DAY_S = 86_400.0  # any one call, CLI session or self-test
MAX_TOKENS = 1_000_000  # output tokens of one reply
MAX_TURNS = 10_000  # tool calls of one harness session
MAX_PARALLEL = 1024  # calls in flight, threads, workers, CPUs
Schedule = Literal["constant", "linear", "cosine"]
DEFAULT_MIN_LEARNING_RATE = 2


class _Section(BaseModel):
    # A field's docstring is its description: the configuration reference is generated from them.
    model_config = ConfigDict(extra="forbid", validate_assignment=True, use_attribute_docstrings=True)


class BenchmarkConfig(_Section):
    """The tasks: which benchmark, its data, how it is split, and (`optimizer.target: description` or
    `both`) the queries that should and should not load the skill."""

    name: str = "qa"
    """`qa`, `searchqa`, `gsm8k`, `bbh`, `humaneval`, `coding_tasks`, `housestyle`, `housefacts`,
    `housecli`, `custom`, `harvested`, or `module:function` (a factory returning a Benchmark);
    `--benchmark NAME`"""
    data: str | None = None
    """Data file or folder. Relative paths in a config file resolve against that file; given with
    `--set` or `--data FILE`, against the current folder."""
    scorer: str | None = None
    """`custom` only: `exact`, `f1`, `numeric`, `contains`, `regex` or `module:function`."""
    train_size: int | None = Field(None, ge=0)
    """Train split size (the splits are disjoint, drawn by `benchmark.seed`). Null with all three
    sizes null: half the data, at most 40 (the run says the sizes it chose); otherwise 40."""
    val_size: int | None = Field(None, ge=1)
    """Validation split size: the items the gate decides on. Null with all three null: a quarter
    of the data, at least 4, at most 20; otherwise 20."""
    test_size: int | None = Field(None, ge=0)
    """Test split size, run once at the end on the initial and the best skill (0: no test). Null
    with all three null: a quarter of the data, at most 20 (none for a benchmark that generates
    its tasks); otherwise 0."""
    _sizes_from: str = PrivateAttr("")  # where the sizes were given, for errors (config.loading)
    seed: int = 0
    """Seed of the split."""
    options: dict[str, Any] = Field(default_factory=dict)
    """Benchmark-specific settings (the guide "Your own benchmark" lists them)."""
    triggers: str | None = None
    """`optimizer.target: description` or `both`: a JSONL of `{"query", "should_trigger"}`
    rows; null: the task questions as positives plus `trigger_negatives`."""
    trigger_negatives: str | None = None
    """A JSONL of requests that should not load the skill (`{"query"}` or `{"question"}`
    rows: a neighbouring skill's task file works as it is)."""
    trigger_split: tuple[float, float, float] = (0.5, 0.25, 0.25)
    """Train / val / test shares of the queries, within each label (train and val above 0,
    test 0 or more)."""
    trigger_repeats: int = Field(3, ge=1, le=8)
    """Runs of each query per description (its trigger rate; the paired gate's repeats)."""
    trigger_max_turns: int = Field(4, ge=1)
    """Turns (Claude Code) or tool calls (Codex) a query's session may take before it counts
    as not loaded."""
    distractor_skills: str | None = None
    """A folder of skill folders installed beside the skill; null: the five shipped ones."""

    @field_validator("trigger_split")
    @classmethod
    def _shares(cls, value: tuple[float, float, float]) -> tuple[float, float, float]:
        if min(value) < 0 or value[0] <= 0 or value[1] <= 0:
            raise ValueError("three shares [train, val, test]: train and val above 0, test 0 or more")
        return value


class SkillConfig(_Section):
    """The skill being trained: where it starts, its name, its size budgets."""

    init: str | None = None
    """The initial skill: a file, or a folder (a package: `SKILL.md` plus references and scripts);
    an empty skill when absent."""
    name: str = Field("task-skill", pattern=r"^[a-z0-9][a-z0-9-]{0,63}$")
    """The skill's name (Claude Code installs it as `.claude/skills/<name>/`, Codex as
    `.agents/skills/<name>/`): lowercase letters, digits and hyphens, all that Claude Code accepts."""
    max_chars: int | None = Field(None, ge=200)
    """Size budget of the whole skill in characters (a package: all its text files), stated in
    the analyst's prompt; an edit or candidate past it is skipped with its size. Null: no budget."""
    prompt_chars: int = Field(12000, ge=1000)
    """A package's files the analyst sees in full (SKILL.md, then the files the failing tasks
    read), in characters; the rest are listed with their size and first line."""
    self_test_timeout_s: float = Field(60.0, gt=0, le=DAY_S)
    """Wall-clock limit of a package's front-matter `self_test` command."""
    description_chars: int = Field(1024, ge=40, le=1024)
    """The description's limit (Agent Skills: 1024 at most), in the analyst's reply schema; a
    longer initial description is refused."""
    max_examples: int = Field(3, ge=0, le=16)
    """Worked examples of train tasks the skill may hold: its section `<!-- examples -->` ...
    `<!-- /examples -->` (a package: `examples.md`, which SKILL.md then links to). The analyst
    names a train task by id (`add_example`, `replace_example`, `remove_example`); skillgrad
    writes the example, the task as the chat target receives it and the reply the scorer accepts
    (its expected answer, or a reply of the target that passed with full marks). A val or test id
    is dropped as "names no train task"; line edits cannot touch the section; examples do not
    count against the learning rate, this key bounds them. Offered where the step's expected
    answers share a form (option label, number, yes/no word, date format) or the skill holds
    examples; 0: none. 3: the rule + 3 examples that lifted the 1.5B on bbh date_understanding."""
    example_chars: int = Field(DEFAULT_EXAMPLE_CHARS, ge=300, le=20000)
    """One example's size bound: a longer task is cut (a long context around its answer first,
    then the middle of the question); a reply that does not fit gives no example."""


class ModelConfig(_Section):
    """The two roles' models (the optimizer, which reflects and edits; the target, the agent under
    training), their backends, and each backend's own settings."""

    backend: BackendName = DEFAULT_BACKEND
    """Backend of both roles unless a role is pinned (`--backend NAME`)."""
    optimizer_backend: BackendName | None = None
    """Pins the optimizer's backend (`--optimizer-backend NAME`)."""
    target_backend: BackendName | None = None
    """Pins the target's backend (`--target-backend NAME`)."""
    optimizer_model: str | None = None
    """The optimizer's model id (each backend has a default)."""
    target_model: str | None = None
    """The target's model id (each backend has a default)."""
    reasoning_effort: Effort | None = "medium"
    """Reasoning effort of models that take one; per role: `optimizer_reasoning_effort`,
    `target_reasoning_effort`."""
    optimizer_reasoning_effort: Effort | None = None
    """The optimizer's reasoning effort (null: `reasoning_effort`)."""
    target_reasoning_effort: Effort | None = None
    """The target's reasoning effort (null: `reasoning_effort`)."""
    base_url: str | None = None
    """OpenAI-compatible or Anthropic endpoint; per role: `optimizer_base_url`, `target_base_url`."""
    optimizer_base_url: str | None = None
    """The optimizer's endpoint (null: `base_url`)."""
    target_base_url: str | None = None
    """The target's endpoint (null: `base_url`)."""
    api_key: SecretStr | None = None
    """A secret, never written anywhere; per role: `optimizer_api_key`, `target_api_key`; else
    the SDK's environment variable (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`)."""
    optimizer_api_key: SecretStr | None = None
    """The optimizer's key (null: `api_key`)."""
    target_api_key: SecretStr | None = None
    """The target's key (null: `api_key`)."""
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    """Sampling temperature of chat backends."""
    max_output_tokens: int = Field(1024, ge=16, le=MAX_TOKENS)
    """Max tokens per reply."""
    optimizer_max_output_tokens: int | None = Field(None, ge=16, le=MAX_TOKENS)
    """The optimizer's max tokens per reply (null: `max_output_tokens`)."""
    target_max_output_tokens: int | None = Field(None, ge=16, le=MAX_TOKENS)
    """The target's max tokens per reply (null: `max_output_tokens`)."""
    timeout_s: float = Field(120.0, gt=0, le=DAY_S)
    """Per-request timeout of chat backends."""
    max_retries: int = Field(4, ge=0, le=20)
    """Transport retries with backoff (429, 5xx, timeouts), skillgrad's own (the SDKs' are off):
    each a call `budget.max_calls` reserves and counts."""
    json_retries: int = Field(2, ge=0, le=10)
    """Re-asks after a reply that is not schema-valid JSON; then a `StructuredOutputError`
    naming the stage."""
    trace_to_optimizer: bool = True
    """Show a harness target's trace steps (Claude Code, Codex) to the optimizer."""
    claude_trace_to_optimizer: bool = True
    """The Claude Code key: false hides Claude Code's trace steps (both keys must be true
    for Claude Code)."""
    claude_code_cli_path: str | None = None
    """Use this `claude` binary instead of the one claude-agent-sdk bundles."""
    claude_code_allowed_tools: list[str] = Field(
        default_factory=lambda: ["Read", "Glob", "Grep", "Bash", "Write", "Edit"]
    )
    """Tools the Claude Code target may use (auto-approved)."""
    claude_code_permission_mode: Literal["default", "acceptEdits", "bypassPermissions", "dontAsk"] = "default"
    """Claude Code's permission mode (`bypassPermissions` needs `IS_SANDBOX=1` as root)."""
    claude_code_max_turns: int = Field(20, ge=1, le=MAX_TURNS)
    """Max Claude Code turns per task."""
    claude_code_timeout_s: float = Field(600.0, gt=0, le=DAY_S)
    """Wall-time limit of a Claude Code task (a timeout fails the task: it runs again per
    `train.rollout_retries`, then is missing on val and test; the run goes on)."""
    codex_cli_path: str | None = None
    """Use this `codex` binary instead of the one on PATH."""
    codex_sandbox: Literal["read-only", "workspace-write", "danger-full-access"] = "workspace-write"
    """The sandbox of a Codex task (`danger-full-access` only where the container is the
    sandbox)."""
    codex_approval_policy: Literal["never", "on-request", "on-failure"] = "never"
    """Codex's approval policy (nobody answers in `exec`: a request for approval is a refusal)."""
    codex_max_turns: int = Field(20, ge=1, le=MAX_TURNS)
    """Max tool calls per Codex task; the session is stopped at the next one."""
    codex_timeout_s: float = Field(600.0, gt=0, le=DAY_S)
    """Wall-time limit of a Codex session."""
    codex_reuse_login: bool = False
    """Copy your Codex `auth.json` into the private `CODEX_HOME` (to use a ChatGPT login)."""
    local_model: str | None = None
    """`local` backend: a GGUF path or a Hugging Face `owner/repo:file.gguf`; null: the packaged
    SmolLM2-135M."""
    local_threads: int = Field(1, ge=1, le=MAX_PARALLEL)
    """Generation threads of the local model (1 holds its speed on a busy 2-core machine)."""
    local_ctx: int = Field(4096, ge=512, le=1_048_576)
    """Context size of the local model (part of every call-cache key of the local backend, with
    the model file's path, size and mtime)."""

    def backend_for(self, role: str) -> BackendName:
        value = self.optimizer_backend if role == "optimizer" else self.target_backend
        return value or self.backend

    def traces_to_optimizer(self, backend: str) -> bool:
        """Whether the analyst reads the trace steps of a target on `backend`: a harness that
        emits traces, with model.trace_to_optimizer and the backend's own switch (if any) on."""
        spec = spec_for(backend)
        switch = getattr(self, spec.trace_switch) if spec.trace_switch else True
        return spec.harness and self.trace_to_optimizer and bool(switch)

    def analyst_sees_traces(self) -> bool:
        """The one decision, for trainer and estimate alike: the analyst reads the target's traces."""
        return self.traces_to_optimizer(self.backend_for("target"))

    def model_for(self, role: str) -> str | None:
        return self.optimizer_model if role == "optimizer" else self.target_model

    def effort_for(self, role: str) -> Effort | None:
        value = self.optimizer_reasoning_effort if role == "optimizer" else self.target_reasoning_effort
        return value or self.reasoning_effort

    def max_output_tokens_for(self, role: str) -> int:
        value = self.optimizer_max_output_tokens if role == "optimizer" else self.target_max_output_tokens
        return value or self.max_output_tokens

    def base_url_for(self, role: str) -> str | None:
        value = self.optimizer_base_url if role == "optimizer" else self.target_base_url
        return value or self.base_url

    def api_key_for(self, role: str) -> str | None:
        value = self.optimizer_api_key if role == "optimizer" else self.target_api_key
        secret = value or self.api_key
        return secret.get_secret_value() if secret else None


class TraceConfig(_Section):
    """The budgeted view of a session that the analyst reads (concepts: "Traces and the reflection
    workspace")."""

    tool_result_chars: int = Field(200, ge=20)
    """Cap of one tool result's line in a trace view."""
    step_chars: int = Field(500, ge=20)
    """Cap of one other step's line in a trace view."""
    total_chars: int = Field(4000, ge=200)
    """The budget of one trace's view."""
    prompt_chars: int = Field(12000, ge=200)
    """The budget that all trace views of one analyst prompt share (failed tasks are sized
    first)."""


class TrainConfig(_Section):
    """Epochs, batches, and where the work runs."""

    epochs: int = Field(2, ge=1)
    """Passes over the train split (no upper bound: the steps are planned as they run); a later
    epoch reshuffles the batches, keeps the rejected edits while the skill is unchanged and, with a
    target that samples, runs the tasks afresh; a run whose remaining steps would only replay
    earlier ones stops (`no_new_evidence`)."""
    batch_size: int = Field(8, ge=1)
    """Train tasks per step."""
    minibatch_size: int = Field(4, ge=1)
    """Tasks per analyst call."""
    concurrency: int = Field(8, ge=1, le=MAX_PARALLEL)
    """Rollouts and analyst calls in flight, all stages together."""
    seed: int = 0
    """Seed of the batch order."""
    overlap: bool = True
    """Run independent work side by side (the baseline beside step 1, the next step's rollouts
    beside a validation); decisions and skills are exactly those of `false`."""
    executor: Literal["threads", "ray"] = "threads"
    """Where the target's rollouts run: `threads` or `ray` (`--executor ray`; the guide "Run on a
    cluster")."""
    rollout_retries: int = Field(1, ge=0, le=10)
    """Runs again of a task whose agent failed (a crash, a timeout, an outage: the answer is never
    cached), after the others; still failed, a val or test run is missing (left out of the
    comparison and the score, counted in `summary.json`), a train run is shown to the analyst as a
    failure."""


class RayConfig(_Section):
    """The Ray cluster of `train.executor: ray` (see skillgrad/executors/ray_cluster.py)."""

    address: str = Field("", pattern=r"^(|auto|ray://[^\s/:]+:\d+|[^\s/:]+:\d+)$")
    """`""` starts a local Ray cluster for the run; `auto` joins this machine's (`ray start
    --head`); `host:port` or `ray://host:port` a running one."""
    local_cpus: int | None = Field(None, ge=1, le=MAX_PARALLEL)
    """CPUs of the local cluster started for the run (null: all)."""
    workers: int = Field(0, ge=0, le=MAX_PARALLEL)
    """Worker processes running rollouts; 0: as many as the cluster's CPUs allow."""
    cpus_per_worker: float = Field(1.0, gt=0, le=MAX_PARALLEL)
    """CPUs Ray reserves per worker process (fractions allowed)."""
    max_retries: int = Field(3, ge=0, le=100)
    """Retries of a task whose worker or node was lost (0: none; a task sent while its worker
    restarts then fails too)."""
    pip: list[str] | None = None
    """Joining a cluster: pip requirements installed on workers (null: the target backend's extra;
    `[]`: none)."""


class OptimizerConfig(_Section):
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
    earlier), ask each of them once more with the skill shown as empty, so it writes the rules the
    failures need from scratch (single-file skills; `reflections/mb_NN_reask.json`, `reasked` in
    `merged_patch.json`; one more optimizer call each)."""
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
    `examples`, worked examples of the step's tasks up to `skill.max_examples`, beside the
    analysts' edits and through the same selection and gate (loop/formfix.py); `rule`: the rule
    alone; `none`: only the analysts propose."""
    gate_min_gain: float = Field(1.0, ge=0.0)
    """`strict` gate: the smallest gain it keeps, in val items' worth (one item's mean going
    0 -> 1, i.e. 1 / items of the score, whatever `val_repeats` is); with 0/1 scores and one repeat
    any gain, with more repeats a whole item (`1 / val_repeats` keeps one more right run), and with
    continuous scores (F1) it rejects a gain smaller than fixing one item outright; 0: any gain."""
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


class BudgetConfig(_Section):
    """Caps across both roles, on paid usage: the run stops at a safe point with `stopped: budget`.
    Every call (a retry, a re-ask and a judge's included) is reserved before it is sent, so the
    provider never bills more than `max_calls`; token and dollar caps are known only after a call,
    so the calls in flight can pass them."""

    max_usd: float | None = Field(None, gt=0)
    """Cap on the paid cost in US dollars (null: none)."""
    max_tokens: int | None = Field(None, gt=0)
    """Cap on the paid tokens (null: none)."""
    max_calls: int | None = Field(None, gt=0)
    """Cap on the paid calls, exact at any concurrency or cluster size (null: none)."""
    refuse_over_estimate: bool = True
    """Refuse a new run whose `--estimate` costs more than `max_usd`, before it starts (false:
    start it anyway; the cap stops it at a safe point with its best skill so far)."""


class CacheConfig(_Section):
    """The content-addressed call cache, keyed on what is sent: a resumed or repeated run's
    finished calls are answered from disk."""

    enabled: bool = True
    """Answer identical calls from disk, within and across runs (`--no-cache` turns it off for one
    run, kept in its config.json); a `--resume` keeps the run's setting."""
    dir: str | None = None
    """The cache folder; null: `~/.cache/skillgrad/calls`; a `--resume` may move it (its misses
    are paid again)."""
    salt: str = ""
    """Change it to deliberately resample every call; a `--resume` keeps the run's salt."""


class TrackingConfig(_Section):
    """Experiment tracking."""

    mlflow: bool = False
    """Log params, per-step metrics and skill versions to MLflow."""
    mlflow_uri: str | None = None
    """A server URL, `sqlite:///mlflow.db`, or a folder (MLflow 3 opens a folder store only with
    `MLFLOW_ALLOW_FILE_STORE=true`)."""


class Config(_Section):
    benchmark: BenchmarkConfig = Field(default_factory=BenchmarkConfig)
    skill: SkillConfig = Field(default_factory=SkillConfig)
    model: ModelConfig = Field(default_factory=ModelConfig)
    trace: TraceConfig = Field(default_factory=TraceConfig)
    train: TrainConfig = Field(default_factory=TrainConfig)
    optimizer: OptimizerConfig = Field(default_factory=OptimizerConfig)
    budget: BudgetConfig = Field(default_factory=BudgetConfig)
    cache: CacheConfig = Field(default_factory=CacheConfig)
    tracking: TrackingConfig = Field(default_factory=TrackingConfig)
    ray: RayConfig = Field(default_factory=RayConfig)
    base_dir: Path = Field(default=Path("."), exclude=True)  # relative paths resolve against the config

    def resolve_path(self, value: str) -> Path:
        path = Path(value).expanduser()
        return path if path.is_absolute() else (self.base_dir / path)

    def to_json(self) -> dict[str, Any]:
        """The resolved config in the YAML's nested shape; secrets redacted."""
        data: dict[str, Any] = json.loads(self.model_dump_json())
        return data

    def portable(self) -> Config:
        """A copy whose file paths are absolute, so it means the same when reloaded elsewhere."""
        copy = self.model_copy(deep=True)
        paths = [("benchmark", "data"), ("skill", "init"), ("cache", "dir")]
        paths += [("benchmark", k) for k in ("triggers", "trigger_negatives", "distractor_skills")]
        for section, key in paths:
            value = getattr(getattr(copy, section), key)
            if value and self.resolve_path(value).exists():  # hub ids and the like stay as given
                setattr(getattr(copy, section), key, str(self.resolve_path(value).resolve()))
        return copy
