"""Usage and cost in the report, read from either shape the run folder holds.

Summaries and eval.json hold the ledger's buckets (`known_usd` + `unknown_cost_calls`); history
rows and score.json hold `Usage` (`cost_usd`, None = unknown). Both become a `Bucket`, so a cost
that is only partly known shows as a lower bound instead of silently as $0 or as nothing.
"""

from __future__ import annotations

from typing import Any

from skillgrad.budget import Bucket
from skillgrad.report.data import Run
from skillgrad.values import Usage


def to_bucket(data: dict[str, Any]) -> Bucket:
    """Either shape as a Bucket; figures that are not numbers count as nothing (a report never
    fails on a damaged ledger)."""
    try:
        if "known_usd" in data or "unknown_cost_calls" in data:
            return Bucket.from_json(data)
        bucket = Bucket()
        bucket.add(Usage.from_json(data))
    except (TypeError, ValueError):
        return Bucket()
    return bucket


def merge(*buckets: Bucket) -> Bucket:
    total = Bucket()
    for b in buckets:
        total.input_tokens += b.input_tokens
        total.output_tokens += b.output_tokens
        total.calls += b.calls
        total.known_usd += b.known_usd
        total.unknown_cost_calls += b.unknown_cost_calls
    return total


def fmt_cost(bucket: Bucket) -> str:
    if not bucket.unknown_cost_calls:
        return f"${bucket.known_usd:.4f}"
    if bucket.known_usd > 0:
        return f"≥ ${bucket.known_usd:.4f} ({bucket.unknown_cost_calls} calls unpriced)"
    return "unknown"


def _ledger(run: Run) -> dict[str, Any]:
    for source in (run.summary, run.eval or {}):
        usage = source.get("usage")
        if isinstance(usage, dict) and usage:
            return usage
    return {}


def by_role(run: Run) -> list[tuple[str, Bucket]]:
    raw = _ledger(run).get("by_role")
    if isinstance(raw, dict):
        return sorted((role, to_bucket(u)) for role, u in raw.items() if isinstance(u, dict))
    totals: dict[str, Bucket] = {}  # a run without a summary yet: add up its steps
    for row in run.history:  # (report.data keeps only rows whose usage is a mapping)
        for role, u in (row.get("usage") or {}).items():
            if isinstance(u, dict):
                totals[role] = merge(totals.get(role, Bucket()), to_bucket(u))
    return sorted(totals.items())


def total(run: Run) -> Bucket:
    raw = _ledger(run).get("total")
    return to_bucket(raw) if isinstance(raw, dict) else merge(*(b for _, b in by_role(run)))


def by_stage(run: Run) -> list[tuple[str, str, Bucket]]:
    """(role, stage, usage) rows from the ledger's `by_role_stage` ("role/stage" keys)."""
    rows: list[tuple[str, str, Bucket]] = []
    flat = _ledger(run).get("by_role_stage")
    for key, u in flat.items() if isinstance(flat, dict) else []:
        role, _, stage = str(key).partition("/")
        if isinstance(u, dict):
            rows.append((role, stage, to_bucket(u)))
    return sorted(rows, key=lambda r: (r[0], r[1]))


def step_usage(row: dict[str, Any]) -> Bucket:
    usage = row.get("usage") or {}
    return merge(*(to_bucket(u) for u in usage.values() if isinstance(u, dict)))
