"""The config's typed sections (pydantic): every key a YAML file or `--set` may give, with its
default and bounds; the backend names come from the registry (`skillgrad.backend_specs`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    Field,
    PrivateAttr,
    field_validator,
)

from skillgrad.config.fields import DAY_S, MAX_PARALLEL, Section
from skillgrad.config.model_section import ModelConfig
from skillgrad.config.optimizer_section import OptimizerConfig
from skillgrad.demos import DEFAULT_EXAMPLE_CHARS


class BenchmarkConfig(Section):
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


class SkillConfig(Section):
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
    max_examples: int = Field(4, ge=0, le=16)
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


class TraceConfig(Section):
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


class TrainConfig(Section):
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


class RayConfig(Section):
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


class BudgetConfig(Section):
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


class CacheConfig(Section):
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


class TrackingConfig(Section):
    """Experiment tracking."""

    mlflow: bool = False
    """Log params, per-step metrics and skill versions to MLflow."""
    mlflow_uri: str | None = None
    """A server URL, `sqlite:///mlflow.db`, or a folder (MLflow 3 opens a folder store only with
    `MLFLOW_ALLOW_FILE_STORE=true`)."""


class Config(Section):
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
