"""`skillgrad.estimate(...)` and `skillgrad train --estimate`: what a run would make and cost,
spending nothing (docs/api.md).

`Estimate.summary()` (also `str(estimate)`) is the few lines the CLI prints: calls, tokens,
dollars and minutes per role, the source of the speed, the budget's verdict; `as_dict()` is the
full projection `--estimate --json` prints (every stage, what was measured, what is assumed).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from skillgrad.api.inputs import (
    BenchmarkLike,
    ConfigLike,
    Scorer,
    SkillLike,
    as_benchmark,
    as_config,
    as_skill,
)
from skillgrad.api.scope import PROCESS
from skillgrad.config import Config
from skillgrad.session.commands import project
from skillgrad.session.costing import projected_usd, unpriced


@dataclass(frozen=True)
class RoleEstimate:
    """One role's projected share: calls and tokens, the model that answers it, its dollars at
    the backend's list prices and its minutes at the backend's speed (None: not known)."""

    role: str
    backend: str
    model: str
    calls: int
    input_tokens: int
    output_tokens: int
    usd: float | None
    minutes: float | None
    speed_source: str | None

    @classmethod
    def from_json(cls, role: str, data: Mapping[str, Any]) -> RoleEstimate:
        speed = data.get("speed") or {}
        return cls(
            role,
            str(data.get("backend", "")),
            str(data.get("model", "")),
            int(data.get("calls", 0)),
            int(data.get("input_tokens", 0)),
            int(data.get("output_tokens", 0)),
            data.get("usd"),
            data.get("minutes"),
            speed.get("source"),
        )


def _k(tokens: int) -> str:
    return f"{tokens / 1000:.1f}k" if tokens >= 1000 else str(tokens)


def _money(usd: float | None) -> str:
    return "?" if usd is None else f"${usd:.2f}" if usd >= 0.01 or usd == 0 else f"${usd:.4f}"


def _mins(minutes: float | None) -> str:
    return "?" if minutes is None else f"{minutes:.1f}"


def _row(cells: tuple[Any, ...], width: int) -> str:
    role, backend, model, calls, tokens, usd, minutes = cells
    return (
        f"  {role:<10} {backend:<16} {model:<{width}} {calls:>6} {tokens:>17} {usd:>8} {minutes:>8}".rstrip()
    )


@dataclass(frozen=True)
class Estimate:
    """The projection of one configured run. `parts`: the body's projection (`"body"`) and, with
    `optimizer.target` description or both, the description's (`"description"`), each as
    `--estimate --json` prints it. `body_only`: the config trains the body alone (the JSON is
    then that one projection)."""

    parts: Mapping[str, Mapping[str, Any]]
    budget_usd: float | None = None  # budget.max_usd, to say the verdict
    body_only: bool = True

    @classmethod
    def of(cls, cfg: Config, parts: Mapping[str, Mapping[str, Any]]) -> Estimate:
        """The estimate of `cfg`'s run from its projected `parts` (`session.commands.project`)."""
        return cls(parts, cfg.budget.max_usd, body_only=cfg.optimizer.target == "body")

    def roles(self, part: str) -> list[RoleEstimate]:
        return [RoleEstimate.from_json(r, d) for r, d in self.parts[part]["by_role"].items()]

    @property
    def calls(self) -> int:
        return sum(int(p["total"]["calls"]) for p in self.parts.values())

    @property
    def tokens(self) -> int:
        return sum(int(p["total"]["total_tokens"]) for p in self.parts.values())

    @property
    def usd(self) -> float | None:
        """The projected dollars of the whole run (None: some role's model has no known price)."""
        return projected_usd({k: dict(v) for k, v in self.parts.items()})

    @property
    def minutes(self) -> float | None:
        values = [p["total"].get("minutes") for p in self.parts.values()]
        return None if None in values else round(sum(v or 0.0 for v in values), 2)

    def as_dict(self) -> dict[str, Any]:
        """What `skillgrad train --estimate --json` prints."""
        if self.body_only:
            return dict(self.parts["body"])
        return {name: dict(part) for name, part in self.parts.items()}

    def summary(self) -> str:
        lines = []
        for name, part in self.parts.items():
            lines += self._part_lines(name, part)
        if len(self.parts) > 1:
            tokens = f"{_k(self.tokens)} tokens"
            lines.append(
                f"  both parts: {self.calls} calls, {tokens}, {_money(self.usd)}, {_mins(self.minutes)} min"
            )
        lines += self._notes()
        lines.append("every stage and what the projection assumes: --estimate --json")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    def __repr__(self) -> str:  # a notebook shows the summary, not the nested projection
        return self.summary()

    def _part_lines(self, name: str, part: Mapping[str, Any]) -> list[str]:
        tasks = part["measured"]["tasks"]
        what = "the description, on trigger queries" if name == "description" else "the skill"
        epochs = part["steps"] // part["steps_per_epoch"] if part["steps_per_epoch"] else 0
        head = (
            f"Estimate for training {what}: {epochs} epoch(s) of {part['steps_per_epoch']} step(s) on "
            f"{tasks['train']} train, {tasks['val']} val, {tasks['test']} test tasks; nothing is spent."
        )
        roles = self.roles(name)
        width = max(len(r.model) for r in roles)
        rows = [_row(("role", "backend", "model", "calls", "tokens in / out", "dollars", "minutes"), width)]
        for r in roles:
            tokens = f"{_k(r.input_tokens)} / {_k(r.output_tokens)}"
            rows.append(
                _row((r.role, r.backend, r.model, r.calls, tokens, _money(r.usd), _mins(r.minutes)), width)
            )
        total = part["total"]
        tokens = f"{_k(total['input_tokens'])} / {_k(total['output_tokens'])}"
        cells = (
            "total",
            "",
            "",
            total["calls"],
            tokens,
            _money(total.get("usd")),
            _mins(total.get("minutes")),
        )
        rows.append(_row(cells, width))
        return [head, *rows]

    def _notes(self) -> list[str]:
        roles = [r for name in self.parts for r in self.roles(name) if r.calls]
        sources = list(dict.fromkeys(r.speed_source for r in roles if r.speed_source))
        notes = [f"minutes: {'; '.join(sources) or 'no known speed'}"]
        if None in (r.minutes for r in roles):
            slow = ", ".join(dict.fromkeys(f"{r.role} ({r.model})" for r in roles if r.minutes is None))
            notes.append(f"  no speed known for {slow}: its minutes are not projected")
        notes.append(f"dollars: {self._price_note(roles)}")
        notes.append(f"budget: {self._budget_note()}")
        return notes

    def _price_note(self, roles: list[RoleEstimate]) -> str:
        parts = {k: dict(v) for k, v in self.parts.items()}
        priced = {}
        for part in parts.values():
            for usage in part["by_role"].values():
                prices = usage.get("usd_per_mtok")
                if prices and usage["calls"]:
                    priced[usage["model"]] = "free (runs here)" if prices == [0, 0] else (
                        f"${prices[0]:g} / ${prices[1]:g}")  # fmt: skip
        listed = "; ".join(f"{m} {p}" for m, p in priced.items())
        note = f"list prices per 1M tokens in / out: {listed}" if listed else "no list price known"
        if all(p == "free (runs here)" for p in priced.values()) and priced:
            note = "a local model costs nothing"
        if missing := unpriced(parts):
            note += f"; no list price for {', '.join(missing)}, so the total is not known"
        return note + (
            "" if note.startswith("a local") else "; prompt caching and reasoning tokens not counted"
        )

    def _budget_note(self) -> str:
        checks = [line for p in self.parts.values() for line in p.get("budget_check", [])]
        usd, cap = self.usd, self.budget_usd
        if cap is not None and usd is not None:
            if usd > cap:
                refused = "the run is refused before it starts (budget.refuse_over_estimate)"
                checks.insert(0, f"projected {_money(usd)} exceeds budget.max_usd={cap:g}: {refused}")
            else:
                checks.insert(0, f"{_money(usd)} is within budget.max_usd={cap:g}")
        elif cap is not None:
            checks.insert(0, f"budget.max_usd={cap:g} caps the priced calls only")
        return "; ".join(checks) if checks else "no cap set (budget.max_usd, max_calls, max_tokens)"


def estimate(
    config: ConfigLike,
    *,
    benchmark: BenchmarkLike | None = None,
    scorer: Scorer | str | None = None,
    skill: SkillLike | None = None,
) -> Estimate:
    """The projection of `train(config, benchmark=..., scorer=..., skill=...)`: calls, tokens,
    dollars and minutes per role, spending nothing (the inputs are those of `train`). Print it for
    the summary; `as_dict()` holds every stage and what the projection assumes.

    Raises UserError for bad input, as `train` would."""
    with PROCESS.call():
        cfg = as_config(config)
        bench = as_benchmark(cfg, benchmark, scorer)
        text = as_skill(cfg, skill)
        return Estimate.of(cfg, project(cfg, bench, text))
