"""The config's typed sections (pydantic): every key a YAML file or `--set` may give, with its
default and bounds; the backend names come from the registry (`skillgrad.backend_specs`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PlainValidator, SecretStr, field_validator
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


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class BenchmarkConfig(_Section):
    name: str = "qa"
    data: str | None = None
    scorer: str | None = None  # custom JSONL benchmarks: exact | f1 | numeric | contains | regex | module:fn
    train_size: int = Field(40, ge=0)
    val_size: int = Field(20, ge=1)
    test_size: int = Field(0, ge=0)
    seed: int = 0
    options: dict[str, Any] = Field(default_factory=dict)  # benchmark-specific settings
    # Activation (optimizer.target: description | both; see skillgrad/activation): the queries
    # that should and should not load the skill, and the other skills installed beside it.
    triggers: str | None = None  # JSONL of {query, should_trigger}; None: task questions + negatives
    trigger_negatives: str | None = None  # JSONL of requests that must not load it ({query} or {question})
    trigger_split: tuple[float, float, float] = (0.5, 0.25, 0.25)  # train / val / test shares
    trigger_repeats: int = Field(3, ge=1, le=8)  # runs of each query per skill: its trigger rate
    trigger_max_turns: int = Field(4, ge=1)  # a harness's turns (Claude) / tool calls (Codex) per query
    distractor_skills: str | None = None  # folder of skill folders installed beside it; None: shipped

    @field_validator("trigger_split")
    @classmethod
    def _shares(cls, value: tuple[float, float, float]) -> tuple[float, float, float]:
        if min(value) < 0 or value[0] <= 0 or value[1] <= 0:
            raise ValueError("three shares [train, val, test]: train and val above 0, test 0 or more")
        return value


class SkillConfig(_Section):
    init: str | None = None
    # The skill's name (Claude Code: .claude/skills/<name>/SKILL.md): Claude Code accepts only
    # lowercase letters, digits and hyphens, so anything else would fail every task at run time.
    name: str = Field("task-skill", pattern=r"^[a-z0-9][a-z0-9-]{0,63}$")
    # The whole skill's size budget in characters (a package: all its text files), stated in the
    # analyst's prompt; an edit or candidate past it is skipped. None: no budget.
    max_chars: int | None = Field(None, ge=200)
    # A package's files the analyst sees in full (SKILL.md, then those the failing tasks read),
    # in characters; the rest are listed with their size and first lines.
    prompt_chars: int = Field(12000, ge=1000)
    self_test_timeout_s: float = Field(60.0, gt=0, le=DAY_S)  # a package's front-matter `self_test` command
    # The description's limit in characters (Agent Skills: at most 1024), in the analyst's reply
    # schema; an initial description longer than this is refused.
    description_chars: int = Field(1024, ge=40, le=1024)
    # Worked examples of train tasks the skill may hold (its examples section; a package's
    # examples.md), each written by skillgrad from a task the analyst names (skillgrad/demos.py);
    # 0: none. 3: the rule + 3 examples that lifted the 1.5B on bbh date_understanding (issue 36).
    max_examples: int = Field(3, ge=0, le=16)
    example_chars: int = Field(DEFAULT_EXAMPLE_CHARS, ge=300, le=20000)  # one: the task as seen + its reply


class ModelConfig(_Section):
    backend: BackendName = DEFAULT_BACKEND
    optimizer_backend: BackendName | None = None
    target_backend: BackendName | None = None
    optimizer_model: str | None = None
    target_model: str | None = None
    reasoning_effort: Effort | None = "medium"
    optimizer_reasoning_effort: Effort | None = None
    target_reasoning_effort: Effort | None = None
    base_url: str | None = None
    optimizer_base_url: str | None = None
    target_base_url: str | None = None
    api_key: SecretStr | None = None
    optimizer_api_key: SecretStr | None = None
    target_api_key: SecretStr | None = None
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    max_output_tokens: int = Field(1024, ge=16, le=MAX_TOKENS)
    optimizer_max_output_tokens: int | None = Field(
        None, ge=16, le=MAX_TOKENS
    )  # per role; None: max_output_tokens
    target_max_output_tokens: int | None = Field(None, ge=16, le=MAX_TOKENS)
    timeout_s: float = Field(120.0, gt=0, le=DAY_S)
    max_retries: int = Field(4, ge=0, le=20)
    json_retries: int = Field(2, ge=0, le=10)
    trace_to_optimizer: bool = True  # the analyst reads the harness target's trace steps
    claude_trace_to_optimizer: bool = True  # the Claude Code key; both must be true for Claude Code
    claude_code_cli_path: str | None = None
    claude_code_allowed_tools: list[str] = Field(
        default_factory=lambda: ["Read", "Glob", "Grep", "Bash", "Write", "Edit"]
    )
    claude_code_permission_mode: Literal["default", "acceptEdits", "bypassPermissions", "dontAsk"] = "default"
    claude_code_max_turns: int = Field(20, ge=1, le=MAX_TURNS)
    claude_code_timeout_s: float = Field(600.0, gt=0, le=DAY_S)
    codex_cli_path: str | None = None  # default: `codex` on PATH
    codex_sandbox: Literal["read-only", "workspace-write", "danger-full-access"] = "workspace-write"
    codex_approval_policy: Literal["never", "on-request", "on-failure"] = "never"
    codex_max_turns: int = Field(20, ge=1, le=MAX_TURNS)  # tool calls per task before the session is stopped
    codex_timeout_s: float = Field(600.0, gt=0, le=DAY_S)
    codex_reuse_login: bool = False  # copy the user's Codex auth.json into the private CODEX_HOME
    local_model: str | None = None
    local_threads: int = Field(1, ge=1, le=MAX_PARALLEL)
    local_ctx: int = Field(4096, ge=512, le=1_048_576)

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
    tool_result_chars: int = Field(200, ge=20)
    step_chars: int = Field(500, ge=20)
    total_chars: int = Field(4000, ge=200)  # the budget of one trace's view
    prompt_chars: int = Field(12000, ge=200)  # the budget all trace views of one analyst prompt share


class TrainConfig(_Section):
    epochs: int = Field(2, ge=1)
    batch_size: int = Field(8, ge=1)
    minibatch_size: int = Field(4, ge=1)
    concurrency: int = Field(8, ge=1, le=MAX_PARALLEL)  # calls in flight at once, all stages together
    seed: int = 0
    # Run independent work side by side (baseline beside step 1, the next step's rollouts beside
    # a validation); decisions and skills are exactly those of the sequential order.
    overlap: bool = True
    executor: Literal["threads", "ray"] = "threads"  # where the target's rollouts run


class RayConfig(_Section):
    """The Ray cluster of `train.executor: ray` (see skillgrad/executors/ray_cluster.py)."""

    # "" = a local cluster started for the run; "auto" = this machine's cluster; ray://host:port
    address: str = Field("", pattern=r"^(|auto|ray://[^\s/:]+:\d+|[^\s/:]+:\d+)$")
    local_cpus: int | None = Field(
        None, ge=1, le=MAX_PARALLEL
    )  # CPUs of the local cluster (default: all of them)
    workers: int = Field(0, ge=0, le=MAX_PARALLEL)  # worker processes; 0 = as many as the CPUs allow
    cpus_per_worker: float = Field(1.0, gt=0, le=MAX_PARALLEL)
    max_retries: int = Field(3, ge=0, le=100)  # retries of a task whose worker or node was lost
    pip: list[str] | None = None  # joining a cluster: workers install these (None: the target's extra)


class OptimizerConfig(_Section):
    learning_rate: int = Field(4, ge=1)  # max edits applied per step
    min_learning_rate: int = Field(2, ge=1)
    lr_schedule: Schedule = "cosine"
    gate: Literal["strict", "paired"] = "strict"
    gate_alpha: float = Field(0.05, gt=0, lt=1)  # paired gate: the significance level
    val_repeats: int = Field(1, ge=1, le=8)  # runs of each val item per skill (paired gate: k)
    # racing: validate in waves and stop a candidate once it cannot pass; full: one wave
    validation: Literal["racing", "full"] = "racing"
    race_waves: int = Field(2, ge=1)
    merge: Literal["union"] = "union"
    rank: Literal["support"] = "support"
    show_rejected: bool = True  # feed the epoch's rejected edits back to later analysts
    max_proposed_edits: int = Field(4, ge=1, le=16)  # edits one analyst reply may hold; selection clips
    edit_mode: Literal["patch", "rewrite"] = "patch"  # edits as JSON, or a revised skill diffed into edits
    proposals_per_minibatch: int = Field(1, ge=1, le=16)  # analyst replies per minibatch (support counts)
    proposal_temperature: float = Field(0.8, ge=0.0, le=2.0)  # sampling of the proposals after the first
    # the analyst prompt shows one edit from another domain (chess) to teach the shape; a model
    # too small to write rules copies its wording instead (off in configs/quickstart.yaml)
    shape_example: bool = True
    reask_dropped: bool = True  # every proposed edit dropped: ask once more, the skill shown as empty
    max_skill_chars: int = Field(8000, ge=200)  # an edit set that grows the skill past this is clipped
    allow_task_text: bool = False  # keep edits that copy a task's question, context or answer
    task_text_ngram: int = Field(10, ge=3)  # shared consecutive words that make an edit a copy
    # greedy: one incumbent; frontier: a pool of candidates kept by their per-item wins (loop/search)
    search: Literal["greedy", "frontier"] = "greedy"
    parent: Literal["pareto", "lexicase", "best"] = "lexicase"  # frontier: how a step's parent is drawn
    merge_every: int = Field(3, ge=0)  # frontier: every n-th step merges two lineages (0: never)
    # How the analyst reads the minibatch's sessions. digest: the budgeted views in its prompt;
    # workspace: a harness optimizer also reads every rollout's full trace in a read-only folder,
    # the views' gap markers pointing into it (skillgrad.evidence). None: workspace when the
    # optimizer is a harness (claude_code_exec, codex_exec), else digest.
    reflection: Literal["digest", "workspace"] | None = None
    reflection_turns: int = Field(12, ge=1, le=200)  # turns that may open files (Codex: tool calls)
    reflection_timeout_s: float = Field(600.0, gt=0)  # wall time of one reflection in a workspace
    # a run of this many words of 4+ letters that only one train task has ("private bill
    # committees") makes an edit a copy of that task; 0: only whole fields, ngrams and answers
    task_phrase_words: int = Field(3, ge=0)
    # the analyst reads the step's answers counted by kind of miss, and passed/failed pairs of one
    # answer shape; off: the 1.5B analyst wrote no rule with them on XQuAD and was drawn from the
    # rule housestyle's feedback states (docs/benchmarks.md, issue 26)
    error_census: bool = False
    contrasts: int = Field(0, ge=0, le=8)
    # the analyst reads how the step's answers differ from the form every expected answer shares
    # (an option label, a bare number, a yes/no word, a date format: loop/shapes.py); shown only
    # when they share one, so a step of mixed answers (housestyle) reads the prompt as before
    form_summary: bool = True
    # when that form is what fails the step's answers, skillgrad proposes the rule it implies and
    # worked examples of the step's tasks beside the analysts' edits (loop/formfix.py): examples |
    # rule | none
    form_fix: Literal["examples", "rule", "none"] = "examples"
    # strict gate: the smallest gain kept, in outcomes' worth (one val item 0 -> 1); it changes
    # nothing for 0/1 scores and rejects a one-item wiggle of F1; 0: any gain
    gate_min_gain: float = Field(1.0, ge=0.0)
    # What the run trains: the body on tasks, the description on triggers (when the harness loads
    # the skill), or both in alternating steps (skillgrad/activation).
    target: Literal["body", "description", "both"] = "body"


class BudgetConfig(_Section):
    max_usd: float | None = Field(None, gt=0)
    max_tokens: int | None = Field(None, gt=0)
    max_calls: int | None = Field(None, gt=0)


class CacheConfig(_Section):
    enabled: bool = True  # identical calls are answered from disk, within and across runs
    dir: str | None = None  # default: ~/.cache/skillgrad/calls
    salt: str = ""  # change to deliberately resample every call


class TrackingConfig(_Section):
    mlflow: bool = False
    mlflow_uri: str | None = None


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
