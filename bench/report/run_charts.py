"""The Pareto plot of a run's settings, and the colours of its settings, written as SVG from the data.

Markers with their confidence intervals on two percent axes, the frontier, and the names of the
frontier and the pick placed where they overlap no other name (`compactlab.report.svg_plot`: text
widths from the font's advance widths, so placement needs no renderer). Every marker carries its
number, which the report's key beside the plot names, and its names and figures as a tooltip. The plot
is sized for the report's first screen (beside the verdict, at its own size: its text is not scaled
down). Only strategy labels and numbers reach the SVG, escaped; session text never does.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from compactlab.report import svg_plot as svg
from compactlab.report.svg_plot import Box, Drawing, Key, Scale
from compactlab.results.recommendation import Recommendation

# 20 distinguishable colours (matplotlib's tab20, dark shades first), assigned in label order.
PALETTE = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
    "#aec7e8",
    "#ffbb78",
    "#98df8a",
    "#ff9896",
    "#c5b0d5",
    "#c49c94",
    "#f7b6d2",
    "#c7c7c7",
    "#dbdb8d",
    "#9edae5",
)
RECOMMENDED = "#1d7a2e"
# Label offsets tried around a point (in points), nearest first.
_OFFSETS = [
    (dx * r, dy * r)
    for r in (7, 14, 24, 36, 50)
    for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (-1, 1), (1, -1), (-1, -1), (1, 2), (-1, 2), (1, -2), (-1, -2))
]
WIDTH, HEIGHT = 504.0, 300.0  # in points: 672 × 400 pixels, the first screen's right column
MARKER = 5.6  # a marker's radius, room for its number inside
NUMBER_SIZE = 6.2
STAR = math.sqrt(360) / 2  # the pick's star: 360 pt²
LABEL_SIZE = 8
BOLD = 1.1  # DejaVu Sans Bold runs about a tenth wider than the regular face


@dataclass(frozen=True)
class Rect:
    """A label's box on the chart, in points (y down): what `pareto_chart(placed=...)` reports."""

    x0: float
    y0: float
    x1: float
    y1: float


def colours_for(labels: Sequence[str]) -> dict[str, str]:
    return {label: PALETTE[i % len(PALETTE)] for i, label in enumerate(sorted(labels))}


def group_label(names: Sequence[str], width: int = 34) -> str:
    """'a, b, c' wrapped to lines of `width` characters (identical points share one label)."""
    return "\n".join(textwrap.wrap(", ".join(names), width)) or ""


def percent_ticks(ticks: list[float]) -> list[tuple[float, str]]:
    """Percent labels with as many decimals as the ticks need (a 97.5% tick is not printed as 98%)."""
    decimals = next((n for n in range(4) if all(abs(round(100 * t, n) - 100 * t) < 1e-9 for t in ticks)), 4)
    return [(t, f"{100 * t:.{decimals}f}%".replace("-", "−")) for t in ticks]


def pareto_chart(
    figures: pd.DataFrame, recommendation: Recommendation, colours: dict[str, str], placed: list | None = None
) -> tuple[str, list[tuple[str, list[str]]]]:
    """Tokens removed (x) against next-step facts kept (y), one marker per group of identical points:
    the settings' figures (`setting_figures`), the frontier and the pick of the recommendation rule.
    Returns the SVG and its key: (the number in a marker, the settings it stands for), for every marker,
    the pick first, then by tokens removed; `placed`, when given, receives the name labels' boxes (`Rect`)
    so that their layout can be checked."""
    points = figures.rename(
        columns={
            "removed_share_mean": "tokens_removed",
            "removed_share_low": "removed_low",
            "removed_share_high": "removed_high",
            "preservation_or_untouched_mean": "preservation",
            "preservation_or_untouched_low": "preservation_low",
            "preservation_or_untouched_high": "preservation_high",
        }
    ).assign(hollow=lambda f: f["setting"].isin(set(recommendation.not_recommendable)))
    frontier = recommendation.frontier
    groups = numbered_groups(points, recommended := recommendation.setting)
    x_high = max(float(points["removed_high"].max()), float(points["tokens_removed"].max()), 0.01)
    y_low = min(float(points["preservation_low"].min()), float(points["preservation"].min()))
    bottom = max(0.0, y_low - 0.04)
    x_range, y_range = (-0.02 * x_high, 1.12 * x_high), (bottom, 1.0 + 0.06 * (1.0 - bottom))
    # Round steps (1, 2, 5 × 10^n) so that ticks read 0, 10, 20 … rather than 0, 2, 5, 8, 13%; no tick above 100%.
    xticks = percent_ticks(svg.nice_ticks(*x_range, 8, (1, 2, 5, 10)))
    yticks = percent_ticks([t for t in svg.nice_ticks(*y_range, 8, (1, 2, 5, 10)) if t <= 1.0 + 1e-9])
    box = Box(svg.axes_margin(yticks), 4.0, WIDTH - 8, HEIGHT - 36)
    x, y = Scale(*x_range, box.left, box.right), Scale(*y_range, box.bottom, box.top)
    d = Drawing(WIDTH, HEIGHT)
    svg.axes(
        d,
        box,
        x,
        y,
        xticks,
        yticks,
        "prompt tokens removed (mean over sessions) → better",
        "next-step facts kept (k=1) → better",
    )
    for names, row in groups:
        colour = colours.get(names[0], "#999999")
        px, py = x(row["tokens_removed"]), y(row["preservation"])
        d.path([x(row["removed_low"]), x(row["removed_high"])], [py, py], colour, 1.0, opacity=0.35)
        d.path([px, px], [y(row["preservation_low"]), y(row["preservation_high"])], colour, 1.0, opacity=0.35)
    on_frontier = points[points["setting"].isin(frontier)].sort_values("tokens_removed")
    line = np.column_stack([x.many(on_frontier["tokens_removed"]), y.many(on_frontier["preservation"])])
    if len(on_frontier) > 1:
        d.path(line[:, 0], line[:, 1], "#444444", 1.0, svg.DASHED)
    else:
        line = np.empty((0, 2))
    for number, (names, row) in enumerate(groups, 1):
        colour = colours.get(names[0], "#999999")
        px, py = x(row["tokens_removed"]), y(row["preservation"])
        fill = "#ffffff" if row["hollow"] else colour
        tip = f"{number}: {' = '.join(names)}: {100 * row['tokens_removed']:.1f}% removed, {100 * row['preservation']:.1f}% kept"
        d.circle(px, py, MARKER, fill, colour, 1.2, title=tip)
        d.text(px, py, str(number), NUMBER_SIZE, "middle", _ink_on(fill), "bold", middle=True)
    keys = [Key("Pareto frontier (recommendable)", "#444444", dash=svg.DASHED)] if len(on_frontier) > 1 else []
    keys.append(Key("not recommendable", "#ffffff", kind="ring", edge="#777777"))
    if recommended is not None and (points["setting"] == recommended).any():
        best = points[points["setting"] == recommended].iloc[0]
        d.star(x(best["tokens_removed"]), y(best["preservation"]), STAR, RECOMMENDED, "#ffffff", 0.8)
        keys.append(Key("recommended", RECOMMENDED, kind="star", edge="#ffffff"))
    _, key_height, _ = svg.key_size(keys, 8.5)
    svg.draw_key(d, box.left + 6, box.bottom - key_height - 4, keys, 8.5)
    # Only the frontier and the pick are named on the plot: a label on every one of a sweep's 64 points is
    # a plot nobody reads at a glance. Every marker has its number, which the key names.
    named = [g for g in groups if recommended in g[0] or set(g[0]) & set(frontier)]
    markers = [(x(row["tokens_removed"]), y(row["preservation"])) for _, row in groups]
    _place_labels(d, box, named, recommended, line, markers, (x, y), placed if placed is not None else [])
    return d.svg(), [(str(number), list(names)) for number, (names, _) in enumerate(groups, 1)]


def numbered_groups(points: pd.DataFrame, recommended: str | None) -> list[tuple[list[str], pd.Series]]:
    """Points with the same two numbers (e.g. offline summarizers that produce the same text) share one
    marker; the markers in the order they are numbered: the pick first, then the most tokens removed."""
    keyed: dict[tuple, list[str]] = {}
    rows: dict[tuple, pd.Series] = {}
    for _, row in points.sort_values("setting").iterrows():
        key = (round(float(row["tokens_removed"]), 12), round(float(row["preservation"]), 12), bool(row["hollow"]))
        keyed.setdefault(key, []).append(row["setting"])
        rows.setdefault(key, row)
    groups = [(names, rows[key]) for key, names in keyed.items()]
    return sorted(groups, key=lambda g: (recommended not in g[0], -float(g[1]["tokens_removed"]), g[0][0]))


def _ink_on(fill: str) -> str:
    """Black or white, whichever reads better on `fill` (#rrggbb)."""
    red, green, blue = (int(fill[i : i + 2], 16) for i in (1, 3, 5))
    return "#000000" if 0.299 * red + 0.587 * green + 0.114 * blue > 150 else "#ffffff"


def _place_labels(
    d: Drawing, box: Box, groups, recommended: str | None, line: np.ndarray, markers, scales, labels: list
) -> list[list[str]]:
    """Greedy placement: each label of `groups` at the nearest offset where it overlaps no other label
    and as little as possible of the markers and the frontier line. A label that fits nowhere without
    touching another label is left off (its marker's number names it in the key): returned. So labels
    never overlap."""
    x, y = scales
    taken = [Rect(mx - MARKER, my - MARKER, mx + MARKER, my + MARKER) for mx, my in markers]
    for (x0, y0), (x1, y1) in zip(line[:-1], line[1:]):  # the frontier line, as small boxes every few points
        steps = max(1, int(np.hypot(x1 - x0, y1 - y0) / 3))
        taken += [
            Rect(a - 1.1, b - 1.1, a + 1.1, b + 1.1) for a, b in zip(np.linspace(x0, x1, steps), np.linspace(y0, y1, steps))
        ]
    left_off: list[list[str]] = []
    # The recommendation first (it must be named), then the largest groups.
    for names, row in sorted(groups, key=lambda g: (recommended not in g[0], -len(g[0]))):
        bold = recommended in names
        point = (x(row["tokens_removed"]), y(row["preservation"]))
        text = group_label(names, 28)
        placed = _best_offset(text, point, bold, markers, taken, labels, box)
        if placed is None:
            left_off.append(list(names))
            continue
        dx, dy, rect, inner = placed
        anchor = "start" if dx > 0 else "end" if dx < 0 else "middle"
        at = inner.x0 if dx > 0 else inner.x1 if dx < 0 else (inner.x0 + inner.x1) / 2
        if abs(dx) > 8 or abs(dy) > 8:  # far from its marker: a thin line leads back to it
            ax, ay = point[0] + dx, point[1] - dy
            length = math.hypot(ax - point[0], ay - point[1]) or 1.0
            d.path([ax, point[0] + 3 * (ax - point[0]) / length], [ay, point[1] + 3 * (ay - point[1]) / length], "#777777", 0.7)
        for i, part in enumerate(text.split("\n")):
            colour = RECOMMENDED if bold else "#222222"
            d.text(at, inner.y0 + (0.88 + 1.2 * i) * LABEL_SIZE, part, LABEL_SIZE, anchor, colour, "bold" if bold else "normal")
        taken.append(rect)
        labels.append(rect)
    return left_off


def _label_box(text: str, point: tuple[float, float], dx: float, dy: float, bold: bool) -> Rect:
    """The box of `text` set at `dx`, `dy` points from `point` (dy up), aligned away from the point."""
    lines = text.split("\n")
    width = max(svg.text_width(line, LABEL_SIZE) for line in lines) * (BOLD if bold else 1.0)
    height = 1.2 * LABEL_SIZE * len(lines)
    ax, ay = point[0] + dx, point[1] - dy
    x0 = ax if dx > 0 else ax - width if dx < 0 else ax - width / 2
    y0 = ay - height if dy > 0 else ay if dy < 0 else ay - height / 2
    return Rect(x0, y0, x0 + width, y0 + height)


def _best_offset(text, point, bold, markers, taken, labels, box: Box):
    """(dx, dy, box with margin, text box) of the cheapest offset whose label touches no other label and
    stays readable; None if none."""
    best, best_cost = None, None
    for dx, dy in _OFFSETS:
        inner = _label_box(text, point, dx, dy, bold)
        # Browsers may draw the text wider than it was measured: keep a margin.
        rect = Rect(inner.x0 - 4, inner.y0 - 1.5, inner.x1 + 0.18 * (inner.x1 - inner.x0), inner.y1 + 1.5)
        if any(_overlap(rect, other) > 0 for other in labels) or _outside(rect, box) > 0:
            continue
        own = _distance(rect, point)
        # A label nearer to another marker than to its own would name the wrong point.
        if any(_distance(rect, other) + 2.2 < own for other in markers):
            continue
        cost = sum(_overlap(rect, other) for other in taken)
        if best_cost is None or cost < best_cost - 1e-9:
            best, best_cost = (dx, dy, rect, inner), cost
        if cost <= 10:  # a corner touching an error bar's end or a marker's edge is fine
            break
    return best


def _distance(box: Rect, point) -> float:
    x, y = point
    return float(np.hypot(max(box.x0 - x, 0, x - box.x1), max(box.y0 - y, 0, y - box.y1)))


def _overlap(a: Rect, b: Rect) -> float:
    width = min(a.x1, b.x1) - max(a.x0, b.x0)
    height = min(a.y1, b.y1) - max(a.y0, b.y0)
    return max(0.0, width) * max(0.0, height)


def _outside(rect: Rect, box: Box) -> float:
    return (
        max(0.0, box.left - rect.x0)
        + max(0.0, rect.x1 - box.right)
        + max(0.0, box.top - rect.y0)
        + max(0.0, rect.y1 - box.bottom)
    )
