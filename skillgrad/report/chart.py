"""Geometry of the report's inline SVG charts; the template draws it (no JS chart library).

Computing coordinates here keeps the template declarative and lets tests check the numbers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from skillgrad.loop.decision.judge import RacedOut

WIDTH, HEIGHT = 980, 300
LEFT, RIGHT, TOP, BOTTOM = 52, 20, 16, 44


@dataclass(frozen=True)
class Point:
    x: float
    y: float
    step: int
    score: float | None
    action: str  # "baseline" | "accepted" | "rejected" | "skipped" | "raced" (y: its bound)
    label: str


@dataclass
class Series:
    name: str
    css: str  # colour class: "solo" (single run) | "a" | "b"
    points: list[Point] = field(default_factory=list)
    best_path: str = ""  # SVG path of the best-so-far step curve


@dataclass
class Chart:
    width: int
    height: int
    left: int
    top: int
    plot_w: int
    plot_h: int
    y_ticks: list[tuple[float, str]]
    x_ticks: list[tuple[float, str]]
    series: list[Series]

    @property
    def bottom(self) -> int:
        return self.top + self.plot_h

    @property
    def right(self) -> int:
        return self.left + self.plot_w


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _x_ticks(max_step: int, sx: Any) -> list[tuple[float, str]]:
    stride = max(1, -(-max_step // 12))  # at most ~12 labels however long the run
    return [(sx(s), str(s)) for s in range(0, max_step + 1, stride)]


def _series(
    name: str, css: str, baseline: float | None, history: list[dict[str, Any]], sx: Any, sy: Any
) -> Series:
    out = Series(name, css)
    best = baseline
    path: list[str] = []
    if baseline is not None:
        out.points.append(Point(sx(0), sy(baseline), 0, baseline, "baseline", f"baseline: {baseline:.3f}"))
        path.append(f"M{sx(0):.1f},{sy(baseline):.1f}")
    for row in history:
        step = int(row.get("step", 0))
        score, action = _num(row.get("val_score")), str(row.get("action", "skipped"))
        raced = RacedOut.from_json(row.get("raced_out")) if score is None else None
        if raced is not None:  # no val score: drawn as the bound its full validation stays under
            label = f"step {step}: {action}, {raced_label(raced)}"
            out.points.append(Point(sx(step), sy(raced.bound), step, None, "raced", label))
        else:
            y = sy(score) if score is not None else sy(0)
            label = f"step {step}: {action}" + (
                f", val {score:.3f}" if score is not None else ", not validated"
            )
            out.points.append(
                Point(sx(step), y, step, score, action if score is not None else "skipped", label)
            )
        row_best = _num(row.get("best_score"))
        known = [x for x in (best, score) if x is not None]
        new_best = row_best if row_best is not None else (max(known) if known else None)
        if new_best is None:
            continue
        if not path:
            path.append(f"M{sx(step):.1f},{sy(new_best):.1f}")
        else:  # a step curve: hold the old best until this step, then jump
            path.append(f"H{sx(step):.1f}V{sy(new_best):.1f}")
        best = new_best
    out.best_path = "".join(path)
    return out


def raced_label(raced: RacedOut) -> str:
    return (
        f"raced out after {raced.items} of {raced.of} items ({raced.score:.3f} on those): "
        f"its val score is at most {raced.bound:.3f}"
    )


def score_chart(runs: list[tuple[str, float | None, list[dict[str, Any]]]]) -> Chart:
    """Validation score per step for each `(name, baseline, history)`, plus best-so-far curves."""
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    max_step = max([1] + [int(r.get("step", 0)) for _, _, hist in runs for r in hist])
    scores = [
        s for _, b, hist in runs for s in [b, *(_num(r.get("val_score")) for r in hist)] if s is not None
    ]
    top = max([1.0, *scores])  # scores live in [0, 1]; a custom scorer above 1 still fits

    pad = 0.3  # keep the first and last markers off the axes

    def sx(step: float) -> float:
        return LEFT + plot_w * (step + pad) / (max_step + 2 * pad)

    def sy(score: float) -> float:
        return TOP + plot_h * (1 - score / top)

    y_ticks = [(sy(top * f), f"{top * f:.2f}") for f in (0, 0.25, 0.5, 0.75, 1)]
    # one run: markers coloured by action; several: coloured by run (shape still tells the action)
    css = ["solo"] if len(runs) == 1 else ["a", "b"]
    series = [
        _series(name, css[i % len(css)], base, hist, sx, sy) for i, (name, base, hist) in enumerate(runs)
    ]
    return Chart(WIDTH, HEIGHT, LEFT, TOP, plot_w, plot_h, y_ticks, _x_ticks(max_step, sx), series)


@dataclass(frozen=True)
class Bar:
    label: str
    value: float | None
    css: str
    y: float
    width: float


@dataclass
class BarChart:
    width: int
    height: int
    label_w: int
    bar_h: int
    bars: list[Bar]


def bar_chart(items: list[tuple[str, float | None, str]], width: int = 520) -> BarChart:
    """Horizontal bars for a few named scores (baseline / best / test); None draws no bar."""
    label_w, bar_h, gap = 150, 22, 10
    top = max([1.0, *(v for _, v, _ in items if v is not None)])
    span = width - label_w - 60
    bars = [
        Bar(label, value, css, i * (bar_h + gap), 0.0 if value is None else span * value / top)
        for i, (label, value, css) in enumerate(items)
    ]
    return BarChart(width, len(items) * (bar_h + gap), label_w, bar_h, bars)
