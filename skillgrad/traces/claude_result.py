"""What a Claude Code result record says: its usage, its cost when known, and whether it failed."""

from __future__ import annotations

from typing import Any

from skillgrad.values import Usage


def _count(value: Any) -> int:
    """A token count from whatever the record holds; anything that is not a count is 0."""
    try:
        return max(0, int(value or 0))
    except (TypeError, ValueError, OverflowError):
        return 0


def result_usage(result: dict[str, Any]) -> Usage:
    raw = result.get("usage")
    raw = raw if isinstance(raw, dict) else {}
    tokens_in = sum(
        _count(raw.get(k)) for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    )
    return Usage(tokens_in, _count(raw.get("output_tokens")), 1, result_cost(result))


def result_cost(result: dict[str, Any]) -> float | None:
    """total_cost_usd when every model used is priced from Anthropic's list, else None (unknown).

    The CLI prices unknown model names too, with a made-up default; it marks its list prices with
    `costBasis: "list"` per model, so anything else (or no marking at all) counts as unknown.
    """
    cost = result.get("total_cost_usd")
    models = result.get("modelUsage") or result.get("model_usage") or {}
    if not isinstance(cost, int | float) or isinstance(cost, bool) or not isinstance(models, dict):
        return None
    if not models:  # no model was called (e.g. the first request failed): nothing was spent
        return float(cost) if float(cost) == 0.0 else None
    known = all(isinstance(e, dict) and e.get("costBasis") == "list" for e in models.values())
    return float(cost) if known else None


def result_failed(result: dict[str, Any]) -> bool:
    reason = result.get("terminal_reason")
    if result.get("is_error") or reason not in (None, "completed"):
        return True
    # Older CLIs say `subtype: error_max_turns` (and is_error false) with no terminal_reason.
    return reason is None and str(result.get("subtype") or "").startswith("error")
