"""The estimate in dollars and minutes: which model answers each role (its configured id or the
backend's default), what its tokens cost at the backend's list prices (`backends.price_tables`), and
how long its calls take at the backend's measured or assumed speed.

`priced(cfg, part)` adds to one projection of `session.projection` (its `by_role` and `total`):
each role's backend, model, prices, dollars, speed and minutes; a price or a speed that is not
known stays None and says why. Minutes: each stage's model turns, prompt and generated tokens at
the role's speed, over the calls that run at once (`train.concurrency`, at most a stage's calls
of one step; one at a time on the local model, which has one slot).

`over_budget(cfg, parts)` is the line that refuses a run before it starts: its projected dollars
over `budget.max_usd` (see `budget.refuse_over_estimate`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from skillgrad.backends import price_tables
from skillgrad.backends.price_tables import Speed
from skillgrad.config import Config
from skillgrad.values import Role

ROLES: tuple[Role, ...] = ("target", "optimizer")
TARGET_STAGES = ("baseline", "rollout", "validate", "test")
OPTIMIZER_STAGES = ("reflect", "merge")


@dataclass(frozen=True)
class RoleModel:
    """The model that answers one role: its backend, its id (None: a CLI picks its own), and
    where that id comes from, in words."""

    backend: str
    model: str | None
    source: str

    @property
    def name(self) -> str:
        return self.model or price_tables.CLI_DEFAULT.get(self.backend, "the backend's default")


def role_model(cfg: Config, role: Role) -> RoleModel:
    """The resolved model of `role`, as the backend will pick it."""
    backend = cfg.model.backend_for(role)
    own = cfg.model.model_for(role)
    key = f"model.{role}_model"
    if backend == "local":
        value = own or cfg.model.local_model
        if value:
            return RoleModel(backend, value, key if own else "model.local_model")
        from skillgrad.backends.local_models import DEFAULT_MODEL

        return RoleModel(backend, DEFAULT_MODEL.filename, "the packaged default: model.local_model is null")
    if own:
        return RoleModel(backend, own, key)
    default = price_tables.DEFAULT_MODELS.get(backend)
    if default is not None:
        return RoleModel(backend, default, f"the backend's default: {key} is null")
    return RoleModel(backend, None, f"{key} is null")


def _local_speed(cfg: Config, role: Role, chosen: RoleModel) -> Speed | None:
    """The packaged model's measured speed; another model file's scaled by its size (CPU
    decoding reads the whole model per token); None for a file not on this machine."""
    measured = price_tables.LOCAL_PACKAGED[role]
    if chosen.source.startswith("the packaged default"):
        return measured
    path = cfg.resolve_path(chosen.model or "")
    try:
        size = path.stat().st_size if path.is_file() else 0
    except OSError:
        size = 0
    if not size:
        return None
    note = f"the packaged model's measured speed scaled by file size ({size / 1e6:.0f} MB)"
    return measured.scaled(min(1.0, price_tables.PACKAGED_FILE_BYTES / size), note)


def role_speed(cfg: Config, role: Role, chosen: RoleModel) -> Speed | None:
    if chosen.backend == "local":
        return _local_speed(cfg, role, chosen)
    return price_tables.hosted_speed(chosen.backend)


def _widths(cfg: Config, part: dict[str, Any]) -> dict[str, int]:
    """The calls of each stage one step makes, which may run at once."""
    tasks = part["measured"]["tasks"]
    train, opt = cfg.train, cfg.optimizer
    batch = min(train.batch_size, tasks["train"]) or 1
    val = tasks["val"] * opt.val_repeats
    return {
        "baseline": val,
        "rollout": batch,
        "validate": val,
        "test": tasks["test"],
        "reflect": math.ceil(batch / train.minibatch_size) * opt.proposals_per_minibatch,
        "merge": 1,
    }


def _seconds(cfg: Config, part: dict[str, Any], stages: tuple[str, ...], speed: Speed) -> float:
    widths = _widths(cfg, part)
    turns_per_call = part["assumptions"]["agent_turns"]
    total = 0.0
    for name in stages:
        stage = part["by_stage"].get(name)
        if not stage or not stage["calls"]:
            continue
        turns = stage.get("model_turns", stage["calls"] * (turns_per_call if name in TARGET_STAGES else 1))
        at_once = min(cfg.train.concurrency, max(1, widths[name])) if speed.parallel else 1
        total += speed.seconds(turns, stage["input_tokens"], stage["output_tokens"]) / at_once
    return total


def _usd(prices: tuple[float, float] | None, usage: dict[str, int]) -> float | None:
    if prices is None:
        return None
    return (usage["input_tokens"] * prices[0] + usage["output_tokens"] * prices[1]) / 1_000_000


def priced(cfg: Config, part: dict[str, Any]) -> dict[str, Any]:
    """`part` (one projection) with each role's model, dollars and minutes, and their totals."""
    usd: list[float | None] = []
    minutes: list[float | None] = []
    for role in ROLES:
        usage = part["by_role"][role]
        chosen = role_model(cfg, role)
        prices = price_tables.per_mtok(chosen.backend, chosen.model)
        speed = role_speed(cfg, role, chosen)
        stages = TARGET_STAGES if role == "target" else OPTIMIZER_STAGES
        role_minutes = None if speed is None else round(_seconds(cfg, part, stages, speed) / 60, 2)
        role_usd = _usd(prices, usage) if usage["calls"] else 0.0
        usage.update(
            backend=chosen.backend,
            model=chosen.name,
            model_from=chosen.source,
            usd_per_mtok=None if prices is None else list(prices),
            usd=None if role_usd is None else round(role_usd, 4),
            speed=None if speed is None else _speed_json(speed),
            minutes=role_minutes if usage["calls"] else 0.0,
        )
        usd.append(usage["usd"])
        minutes.append(usage["minutes"])
    part["total"]["usd"] = None if None in usd else round(sum(u or 0.0 for u in usd), 4)
    part["total"]["minutes"] = None if None in minutes else round(sum(m or 0.0 for m in minutes), 2)
    return part


def _speed_json(speed: Speed) -> dict[str, Any]:
    return {
        "prompt_tokens_per_s": round(speed.prompt_tps, 1),
        "output_tokens_per_s": round(speed.output_tps, 1),
        "seconds_per_turn": speed.turn_s,
        "one_call_at_a_time": not speed.parallel,
        "source": speed.source,
    }


def projected_usd(parts: dict[str, dict[str, Any]]) -> float | None:
    """The dollars of every part together; None when any is unpriced."""
    values = [p["total"].get("usd") for p in parts.values()]
    return None if None in values else round(sum(v or 0.0 for v in values), 4)


def unpriced(parts: dict[str, dict[str, Any]]) -> list[str]:
    """'role: model on backend' of each role whose price is not known."""
    found = []
    for part in parts.values():
        for role, usage in part["by_role"].items():
            if usage.get("usd") is None:
                found.append(f"{role}: {usage['model']} on {usage['backend']}")
    return list(dict.fromkeys(found))


def over_budget(cfg: Config, parts: dict[str, dict[str, Any]]) -> str | None:
    """Why the run is refused before it starts (its projected dollars over budget.max_usd), or None."""
    cap = cfg.budget.max_usd
    usd = projected_usd(parts)
    if cap is None or usd is None or usd <= cap or not cfg.budget.refuse_over_estimate:
        return None
    shown = f"${usd:.2f}" if usd >= 0.01 else f"${usd:.4f}"
    return (
        f"budget.max_usd={cap:g}: the run is projected to cost {shown} (skillgrad train --estimate "
        "shows how); raise budget.max_usd, make the run smaller (train.epochs, benchmark.train_size, "
        "benchmark.val_size), or set budget.refuse_over_estimate=false to start it anyway and let the "
        "cap stop it"
    )


def models_lines(cfg: Config) -> list[str]:
    """One line per role: the backend, the model it resolves to and why, its list price."""
    lines = []
    roles: tuple[Role, ...] = ("optimizer", "target")
    for role in roles:
        chosen = role_model(cfg, role)
        prices = price_tables.per_mtok(chosen.backend, chosen.model)
        if prices == (0.0, 0.0):
            cost = "free (runs here)"
        elif prices is None:
            cost = "no list price known"
        else:
            cost = f"${prices[0]:g} / ${prices[1]:g} per 1M tokens in / out"
        lines.append(f"{role}: {chosen.backend}, model {chosen.name} ({chosen.source}); {cost}")
    return lines
