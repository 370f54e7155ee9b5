"""What the call cache keys a call on besides its request (see `skillgrad.cache`), read from the
config in this one place: the model that answers (backend, model, the file or CLI behind it by
`skillgrad.backends.registry.identity`), every setting that changes an answer, and a digest of the
prompt templates the backend renders around what it is given (the rest of what is sent, the
messages, the skill and the task, is in the request itself).

`UNKEYED` is the one list of the config keys and prompt templates no key holds, each with why.
`tests/test_cache_keys.py` walks every key of `Config` and every template file: a change that
alters no key must be listed here, and one listed must alter none, so a new key or template
cannot escape the cache's key.
"""

from __future__ import annotations

from typing import Any

from skillgrad.backend_specs import spec_for
from skillgrad.backends.chat_agent import EXAMPLES_SHOWN_AS
from skillgrad.backends.registry import identity
from skillgrad.config import Config
from skillgrad.templates import templates_digest
from skillgrad.values import Role

_B, _P = "skillgrad.backends", "skillgrad.package"
# Prompts a backend adds to a chat call's messages: the structured-output instruction and re-ask.
CHAT_TEMPLATES = ((_B, "json_retry"), (_B, "anthropic_json_instruction"))
# What a chat target is sent around the skill and the task (a package flattened into the prompt).
CHAT_TARGET_TEMPLATES = (
    *CHAT_TEMPLATES,
    (_B, "chat_target_system"),
    (_B, "chat_target_task"),
    (_P, "flattened"),
    (_P, "flattened_file"),
    (_P, "flattened_scripts"),
)
# What a harness target finds in its workspace and is prompted with.
HARNESS_TEMPLATES = (
    (_B, "claude_code_skill"),
    (_B, "claude_code_task_file"),
    (_B, "claude_code_context_note"),
    (_B, "claude_code_prompt"),
    (_B, "codex_prompt"),
)


def _answering(cfg: Config, role: Role, temperature: float | None) -> dict[str, Any]:
    m = cfg.model
    return {
        "backend": m.backend_for(role),
        "model": m.model_for(role),
        "identity": identity(cfg, role),
        "effort": m.effort_for(role),
        "temperature": m.temperature if temperature is None else temperature,
        "max_output_tokens": m.max_output_tokens_for(role),
        "base_url": m.base_url_for(role),
    }


def chat_settings(cfg: Config, role: Role = "optimizer", temperature: float | None = None) -> dict[str, Any]:
    """A chat model's part of every key it is asked under (`CachedChatModel(sampling=...)`);
    `temperature` overrides model.temperature (the analyst's extra proposals)."""
    return {**_answering(cfg, role, temperature), "templates": templates_digest(CHAT_TEMPLATES)}


def rollout_settings(cfg: Config) -> dict[str, Any]:
    """The target's part of every rollout key (`CachedAgent(settings=...)`): the chat settings,
    the agent settings of its spec's `cache_keys`, the templates around the skill and task, and
    for a chat target the form its examples are sent in (the skill holds them, not the form)."""
    spec = spec_for(cfg.model.backend_for("target"))
    templates: tuple[tuple[str, str], ...] = HARNESS_TEMPLATES if spec.harness else CHAT_TARGET_TEMPLATES
    shown = {} if spec.harness else {"examples_shown_as": EXAMPLES_SHOWN_AS[cfg.model.chat_examples]}
    return {
        **_answering(cfg, "target", None),
        **spec.cache_settings(cfg),
        **shown,
        "templates": templates_digest(templates),
    }


def resamples(cfg: Config) -> bool:
    """Whether asking the target again can answer differently: a harness samples (it has no
    temperature), a chat model does above temperature 0. Then a later epoch's train rollouts are
    new samples (salted by epoch, `loop.stages`), new evidence for the analyst."""
    spec = spec_for(cfg.model.backend_for("target"))
    return spec.harness or cfg.model.temperature > 0


def replays(cfg: Config) -> bool:
    """Whether a train task rolled out again with the same skill is its earlier answer replayed
    from the call cache (what the `no_failures` and `no_new_evidence` stops rely on)."""
    return cfg.cache.enabled and not resamples(cfg)


TASKS = "chooses or builds the tasks; each task's content is in the key"
SKILL = "the skill's text is in the key"
SCORING = "scores an answer after the call; no answer depends on it"
MESSAGES = "rendered into the messages of a chat call, which its key holds as sent"
BOUND = "a time or retry bound: a call it cuts short fails, and a failure is never cached"
DECISION = "decides which calls are made or kept, not what one of them answers"
REPEATS = "how many times a call is made: each repeat has a salt of its own"
SECRET = "a credential: who pays for a call, not what it answers"
WHERE = "where the run, its rollouts or its files are; not what is asked"
SPENDING = "caps stop calls; an answer is the same under any cap"
OBSERVED = "progress and tracking only"

UNKEYED: dict[str, str] = {
    # config keys (fnmatch patterns over `section.key`)
    "benchmark.name": TASKS,
    "benchmark.data": TASKS,
    "benchmark.scorer": SCORING,
    "benchmark.*_size": TASKS,
    "benchmark.seed": TASKS,
    "benchmark.options": TASKS + " (or scores them)",
    "benchmark.triggers": TASKS,
    "benchmark.trigger_negatives": TASKS,
    "benchmark.trigger_split": TASKS,
    "benchmark.trigger_repeats": REPEATS,
    "skill.init": SKILL,
    "skill.max_chars": DECISION,
    "skill.prompt_chars": MESSAGES,
    "skill.self_test_timeout_s": "a package's self-test runs in the sandbox, no model call",
    "skill.description_chars": MESSAGES + " (the description analyst's schema, also in its key)",
    "skill.max_examples": MESSAGES + " (the examples offered; the examples a skill holds are its text)",
    "skill.example_chars": SKILL,
    "model.backend": "the default of the role backends, resolved into them when a config loads",
    "model.*api_key": SECRET,
    "model.codex_reuse_login": SECRET,
    "model.timeout_s": BOUND,
    "model.max_retries": BOUND,
    "model.json_retries": BOUND + " (a reply that passes within fewer re-asks is the same reply)",
    "model.claude_code_timeout_s": BOUND,
    "model.codex_timeout_s": BOUND,
    "model.*trace_to_optimizer": MESSAGES,
    "trace.*": MESSAGES,
    "train.epochs": DECISION,
    "train.batch_size": DECISION,
    "train.minibatch_size": MESSAGES,
    "train.concurrency": WHERE,
    "train.seed": DECISION,
    "train.overlap": DECISION,
    "train.executor": WHERE,
    "train.rollout_retries": BOUND,
    "ray.*": WHERE,
    "optimizer.learning_rate": MESSAGES,
    "optimizer.min_learning_rate": MESSAGES,
    "optimizer.lr_schedule": MESSAGES,
    "optimizer.max_proposed_edits": MESSAGES,
    "optimizer.show_rejected": MESSAGES,
    "optimizer.edit_mode": MESSAGES,
    "optimizer.shape_example": MESSAGES,
    "optimizer.error_census": MESSAGES,
    "optimizer.contrasts": MESSAGES,
    "optimizer.form_summary": MESSAGES,
    "optimizer.form_fix": DECISION,
    "optimizer.reflection": DECISION + " (a digest or a workspace reflection: keyed apart by kind)",
    "optimizer.reflection_timeout_s": BOUND,
    "optimizer.val_repeats": REPEATS,
    "optimizer.proposals_per_minibatch": REPEATS,
    "optimizer.gate*": DECISION,
    "optimizer.validation": DECISION,
    "optimizer.race_waves": DECISION,
    "optimizer.tie_break": DECISION,
    "optimizer.merge*": DECISION,
    "optimizer.rank": DECISION,
    "optimizer.reask_dropped": DECISION,
    "optimizer.max_skill_chars": DECISION,
    "optimizer.allow_task_text": DECISION,
    "optimizer.task_*": DECISION,
    "optimizer.search": DECISION,
    "optimizer.parent": DECISION,
    "optimizer.target": DECISION,
    "budget.*": SPENDING,
    "cache.enabled": "whether the cache is asked at all, not what a key holds",
    "cache.dir": WHERE,
    "tracking.*": OBSERVED,
    # prompt templates (fnmatch patterns over their path in the package)
    "loop/prompts/*": MESSAGES,
    "prompts/*": SKILL + " (the examples section and the form rules skillgrad writes into a skill)",
    "loop/search/prompts/*": MESSAGES,
    "package/prompts/analyst_*": MESSAGES,
    "activation/prompts/description_*": MESSAGES,
    "benchmarks/prompts/judge_*": MESSAGES,
    "benchmarks/prompts/*_task.md": "rendered into a task's question, which the key holds",
    "evidence/prompts/guide.md": MESSAGES,
    "evidence/prompts/task_file.md": "a file of the reflection workspace, whose digest is in the key",
}
