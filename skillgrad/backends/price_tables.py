"""What each backend's models cost and how fast they answer, read without loading a backend or
its SDK: the list-price tables the API backends bill with, each backend's default model, and the
speed the estimate turns tokens into minutes with.

Pure data and pure functions (only `re` and the leaf `values`): `openai_compat` and
`anthropic_api` price every call from these tables; `skillgrad train --estimate` and
`skillgrad config` read them where the SDK is not installed.

Speeds say where they come from (`Speed.source`): the packaged local model's were measured
(docs/benchmarks.md, "Quickstart on the embedded local model": `LocalChat.stats()` on one
thread); the hosted APIs publish none, so theirs are a stated assumption of skillgrad's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from skillgrad.values import Role

# OpenAI list prices in USD per 1M tokens (input, output); dated snapshots match their base name.
OPENAI_PER_MTOK: dict[str, tuple[float, float]] = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-5": (1.25, 10.00),
    "gpt-5-mini": (0.25, 2.00),
    "gpt-5-nano": (0.05, 0.40),
    "o1": (15.00, 60.00),
    "o3": (2.00, 8.00),
    "o3-mini": (1.10, 4.40),
    "o4-mini": (1.10, 4.40),
}

# Anthropic list prices in USD per 1M tokens (input, output), matched by model-id prefix (dated
# snapshots and `-latest` aliases included), as the bundled Claude Code CLI 2.1.332 prices them
# (its `costBasis: "list"` entries).
ANTHROPIC_PER_MTOK: dict[str, tuple[float, float]] = {
    "claude-fable-5-2": (8.00, 40.00),
    "claude-mythos-5-2": (8.00, 40.00),
    "claude-fable-5-1": (10.00, 50.00),
    "claude-mythos-5-1": (10.00, 50.00),
    "claude-fable-5": (10.00, 50.00),
    "claude-mythos-5": (10.00, 50.00),
    "claude-opus-5-5": (4.00, 20.00),
    "claude-opus-5": (5.00, 25.00),
    "claude-sonnet-5-5": (2.00, 10.00),
    "claude-sonnet-5": (2.00, 10.00),
    "claude-haiku-5-5": (0.50, 0.50),
    "claude-opus-4-8": (5.00, 25.00),
    "claude-opus-4-7": (5.00, 25.00),
    "claude-opus-4-6": (5.00, 25.00),
    "claude-opus-4-5": (5.00, 25.00),
    "claude-opus-4-1": (15.00, 75.00),
    "claude-opus-4": (15.00, 75.00),
    "claude-sonnet-4-6": (3.00, 15.00),
    "claude-sonnet-4-5": (3.00, 15.00),
    "claude-sonnet-4": (3.00, 15.00),
    "claude-3-7-sonnet": (3.00, 15.00),
    "claude-3-5-sonnet": (3.00, 15.00),
    "claude-haiku-4-5": (1.00, 5.00),
    "claude-3-5-haiku": (0.80, 4.00),
}

_DATE_SUFFIX = re.compile(r"-\d{4}-\d{2}-\d{2}$")
_SNAPSHOT = re.compile(r"(-\d{8}|-latest)$")


def openai_per_mtok(model: str) -> tuple[float, float] | None:
    """(input, output) USD per 1M tokens of a known OpenAI model, else None."""
    return OPENAI_PER_MTOK.get(_DATE_SUFFIX.sub("", model.lower()))


def anthropic_per_mtok(model: str) -> tuple[float, float] | None:
    """(input, output) USD per 1M tokens of a known Claude model (the longest prefix wins), else None."""
    base = _SNAPSHOT.sub("", model.lower().rsplit("/", 1)[-1])
    for prefix in sorted(ANTHROPIC_PER_MTOK, key=len, reverse=True):
        if base == prefix or base.startswith(prefix + "-"):
            return ANTHROPIC_PER_MTOK[prefix]
    return None


# The model a role gets when its `model.<role>_model` is null. Absent: the backend picks it itself
# (a CLI's own default, unknown before it runs) or, for `local`, the packaged file.
DEFAULT_MODELS: dict[str, str] = {"openai_chat": "gpt-4o-mini", "anthropic_chat": "claude-sonnet-5-5"}
CLI_DEFAULT = {"claude_code_exec": "the claude CLI's default", "codex_exec": "the codex CLI's default"}

# The table each backend's calls are billed by; `local` costs nothing; a backend absent here has
# no known prices.
_TABLES = {
    "openai_chat": openai_per_mtok,
    "codex_exec": openai_per_mtok,
    "anthropic_chat": anthropic_per_mtok,
    "claude_code_exec": anthropic_per_mtok,
}
FREE_BACKENDS = frozenset({"local"})


def per_mtok(backend: str, model: str | None) -> tuple[float, float] | None:
    """(input, output) USD per 1M tokens of `model` on `backend`: (0, 0) for a local model, None
    where the price is not known (a model outside the tables, a CLI's unnamed default)."""
    if backend in FREE_BACKENDS:
        return (0.0, 0.0)
    table = _TABLES.get(backend)
    return table(model) if table is not None and model else None


@dataclass(frozen=True)
class Speed:
    """How fast a backend's model answers: prompt and generated tokens per second, a fixed time
    per model turn (the network's round trip; a harness's tool runs), and where the figures come
    from."""

    prompt_tps: float
    output_tps: float
    turn_s: float
    source: str
    parallel: bool = True  # False: one call at a time, whatever train.concurrency says

    def seconds(self, turns: int, input_tokens: int, output_tokens: int) -> float:
        return turns * self.turn_s + input_tokens / self.prompt_tps + output_tokens / self.output_tps

    def scaled(self, factor: float, source: str) -> Speed:
        return Speed(self.prompt_tps * factor, self.output_tps * factor, self.turn_s, source, self.parallel)


# Measured: docs/benchmarks.md, the packaged SmolLM2-135M-Instruct Q4_1 on one thread of the
# project's 2-core machine (plain chat for the target, JSON-schema constrained for the optimizer).
PACKAGED_FILE_BYTES = 98_362_432
_MEASURED = "measured: the packaged SmolLM2-135M on 1 thread (docs/benchmarks.md)"
LOCAL_PACKAGED: dict[Role, Speed] = {
    "target": Speed(132.0, 74.0, 0.0, _MEASURED, parallel=False),
    "optimizer": Speed(118.0, 57.0, 0.0, _MEASURED, parallel=False),
}
# Assumed: hosted APIs publish no speed; these are typical of their small and mid-size models.
_ASSUMED = "assumed: a hosted API's typical speed (none is published)"
HOSTED_CHAT = Speed(4000.0, 60.0, 0.8, _ASSUMED)
HARNESS_TURN = Speed(4000.0, 60.0, 2.0, "assumed: a hosted API's typical speed, 2 s a turn for its tools")
_SPEEDS = {
    "openai_chat": HOSTED_CHAT,
    "anthropic_chat": HOSTED_CHAT,
    "claude_code_exec": HARNESS_TURN,
    "codex_exec": HARNESS_TURN,
}


def hosted_speed(backend: str) -> Speed | None:
    """The assumed speed of a hosted backend; None for `local` (see `LOCAL_PACKAGED`) and a
    backend this catalog does not know."""
    return _SPEEDS.get(backend)
