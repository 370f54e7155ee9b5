"""Renders the report templates (Jinja2, autoescaped) into one self-contained HTML file.

Answers, feedback, traces and skills are untrusted model output: autoescaping escapes every
interpolated value by default, and no template passes run data through `|safe` or into `<script>`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from skillgrad.atomic import write_text_atomic
from skillgrad.errors import UserError
from skillgrad.report.context import compare_context, run_context
from skillgrad.report.data import Run, load_run
from skillgrad.report.files import Partial
from skillgrad.report.usage import fmt_cost


def _score(value: Any) -> str:
    return "–" if value is None else f"{float(value):.3f}"


def _score_class(value: Any) -> str:
    if value is None:
        return "na"
    return "good" if value >= 1 else ("mid" if value > 0 else "bad")


def _clip(text: Any, limit: int = 500) -> str:
    """At most `limit` characters; what is cut is counted (or, for text read in part from a
    larger file or value, the whole's size is named)."""
    whole = text.whole if isinstance(text, Partial) else None
    text = "" if text is None else str(text)
    if whole is not None:
        return f"{text[:limit]}… [{whole} in all]"
    return text if len(text) <= limit else f"{text[:limit]}… [+{len(text) - limit:,} chars]"


def _delta(value: Any) -> str:
    return "" if value is None else f"{value:+.2f}"


def environment() -> Environment:
    env = Environment(
        loader=PackageLoader("skillgrad.report", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,  # a typo in a template fails the tests instead of rendering blank
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        score=_score,
        score_class=_score_class,
        cost=fmt_cost,
        clip=_clip,
        delta=_delta,
        split_lines=str.splitlines,
    )
    return env


def render_report(runs: list[Run]) -> str:
    """HTML of the report for one run, or the comparison page for two."""
    env = environment()
    if len(runs) == 1:
        return env.get_template("report.html.j2").render(**run_context(runs[0]))
    return env.get_template("compare.html.j2").render(**compare_context(runs[0], runs[1]))


def write_report(
    run_dirs: list[Path], out: Path | None = None, *, on_warning: Callable[[str], None] | None = None
) -> Path:
    """Write the report; default `<run>/report.html`, or `<first run>/compare.html` for two runs.
    Each damaged file the report skipped is also passed to `on_warning` (one line each)."""
    if len(run_dirs) not in (1, 2):
        raise UserError(f"report takes one run folder or two to compare, got {len(run_dirs)}")
    runs = [load_run(Path(p)) for p in run_dirs]
    html = render_report(runs)  # its sections may skip more damaged files: warnings come after
    for warning in (w for run in runs for w in run.warnings):
        if on_warning is not None:
            on_warning(warning)
    if out is None:
        out = Path(run_dirs[0]) / ("report.html" if len(run_dirs) == 1 else "compare.html")
    try:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(Path(out), html)
    except OSError as exc:
        raise UserError(f"{out}: cannot write the report ({exc.strerror}); choose another --out") from None
    return Path(out)
