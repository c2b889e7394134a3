"""The Pareto plot of a run's settings, drawn with matplotlib, and the colours of its settings.

Its labels are placed where they overlap nothing, which needs text measured as it is drawn: this
one chart keeps matplotlib (the others are written as SVG, `compactlab.report.svg_plot`). Figures
are built with the object-oriented API on an explicit Agg canvas, never through pyplot: nothing is
registered globally and style settings live in an `rc_context` that ends with the figure. Output
is byte-deterministic (fixed hash salt, no date, text kept as text). Only strategy labels and
numbers reach the SVG, through `text_label`; transcript text never does.
"""

from __future__ import annotations

import io
import re
import textwrap
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator, PercentFormatter
from matplotlib.transforms import Bbox

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


_PATH_DATA = re.compile(r'(\sd=")([^"]*)(")')
_DECIMAL = re.compile(r"-?\d+\.\d+")


def compact_svg(svg: str) -> str:
    """Path coordinates to 0.1 px (a tenth of a pixel is invisible; the SVG gets about half as large)."""

    def shorter(number: re.Match) -> str:
        text = f"{float(number.group()):.1f}"
        return text[:-2] if text.endswith(".0") else text

    return _PATH_DATA.sub(lambda m: m.group(1) + _DECIMAL.sub(shorter, m.group(2)) + m.group(3), svg)


STYLE = {
    "svg.fonttype": "none",  # text stays text: small files, selectable, browser fonts
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans", "Arial"],  # a short list: every SVG text element repeats it
    "font.size": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#e4e4e4",
    "grid.linewidth": 0.6,
    "legend.frameon": False,
}
_PROLOG = re.compile(r"\A.*?(?=<svg\b)", re.DOTALL)
_METADATA = re.compile(r"\s*<metadata>.*?</metadata>", re.DOTALL)
_ID = re.compile(r' id="([^"]*)"')
_REFERENCE = re.compile(r'(?:href="|url\()#([^")]+)')


@contextmanager
def chart_style(salt: str) -> Iterator[None]:
    """Report style for figures built and saved inside this block; `salt` keeps SVG ids unique per chart."""
    with matplotlib.rc_context({**STYLE, "svg.hashsalt": f"compactlab-{salt}"}):  # type: ignore[dict-item]  # matplotlib types rc keys as a Literal of names
        yield


def new_figure(width: float, height: float) -> Figure:
    figure = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(figure)  # explicit Agg canvas (the label placement measures text on it)
    return figure


def svg_of(figure: Figure) -> str:
    """The figure as an `<svg>` element ready to inline in HTML (no XML prolog, no metadata); closes it."""
    buffer = io.StringIO()
    try:
        figure.savefig(buffer, format="svg", dpi=144, metadata={"Date": None, "Creator": None})
    finally:
        figure.clear()  # free the artists now; no pyplot registry holds the figure
    svg = _METADATA.sub("", _PROLOG.sub("", buffer.getvalue(), count=1), count=1)
    # matplotlib names every group (id="figure_1", "axes_1", ...): with several charts in one page
    # those ids repeat, which is invalid HTML and could clash with the page's own anchors. Only
    # the hashed, salted ids of definitions are referenced; the others are dropped.
    referenced = set(_REFERENCE.findall(svg))
    return _ID.sub(lambda m: m.group(0) if m.group(1) in referenced else "", svg).strip()


def text_label(value: str) -> str:
    """Data text safe for matplotlib: `$` would start mathtext, a leading `_` hides a legend entry."""
    value = value.replace("$", r"\$")
    return f" {value}" if value.startswith("_") else value


def colours_for(labels: Sequence[str]) -> dict[str, str]:
    return {label: PALETTE[i % len(PALETTE)] for i, label in enumerate(sorted(labels))}


def group_label(names: Sequence[str], width: int = 34) -> str:
    """'a, b, c' wrapped to lines of `width` characters (identical points or lines share one label)."""
    return "\n".join(textwrap.wrap(", ".join(text_label(n) for n in names), width)) or ""


def pareto_chart(
    figures: pd.DataFrame, recommendation: Recommendation, colours: dict[str, str], placed: list | None = None
) -> tuple[str, list[tuple[str, list[str]]]]:
    """Tokens removed (x) against next-step facts kept (y), one marker per group of identical points:
    the settings' figures (`setting_figures`), the frontier and the pick of the recommendation rule.
    Returns the SVG and the key of the markers labelled by a number where a name did not fit;
    `placed`, when given, receives the labels' boxes (in pixels) so that their layout can be checked."""
    points = figures.rename(
        columns={
            "removed_share_mean": "tokens_saved",
            "removed_share_low": "saved_low",
            "removed_share_high": "saved_high",
            "preservation_or_untouched_mean": "preservation",
            "preservation_or_untouched_low": "preservation_low",
            "preservation_or_untouched_high": "preservation_high",
        }
    ).assign(hollow=lambda f: f["config"].isin(set(recommendation.not_recommendable)))
    frontier, recommended = recommendation.frontier, recommendation.config
    with chart_style("pareto"):
        figure = new_figure(11, 5.6)
        ax = figure.add_subplot()
        groups = _identical_groups(points)
        x_high = max(float(points["saved_high"].max()), float(points["tokens_saved"].max()), 0.01)
        y_low = min(float(points["preservation_low"].min()), float(points["preservation"].min()))
        for names, row in groups:
            hollow = bool(row["hollow"])  # not recommendable
            ax.errorbar(
                row["tokens_saved"],
                row["preservation"],
                xerr=[[row["tokens_saved"] - row["saved_low"]], [row["saved_high"] - row["tokens_saved"]]],
                yerr=[[row["preservation"] - row["preservation_low"]], [row["preservation_high"] - row["preservation"]]],
                fmt="none",
                ecolor=colours.get(names[0], "#999999"),
                alpha=0.35,
                linewidth=1,
                zorder=1,
            )
            ax.scatter(
                row["tokens_saved"],
                row["preservation"],
                s=46,
                zorder=3,
                linewidths=1.2,
                color="white" if hollow else colours.get(names[0], "#999999"),
                edgecolors=colours.get(names[0], "#999999"),
            )
        on_frontier = points[points["config"].isin(frontier)].sort_values("tokens_saved")
        if len(on_frontier) > 1:
            ax.plot(
                on_frontier["tokens_saved"],
                on_frontier["preservation"],
                color="#444444",
                linewidth=1,
                linestyle="--",
                zorder=2,
                label="Pareto frontier (recommendable)",
            )
        ax.scatter([], [], s=46, color="white", edgecolors="#777777", linewidths=1.2, label="not recommendable")
        if recommended is not None and (points["config"] == recommended).any():
            best = points[points["config"] == recommended].iloc[0]
            ax.scatter(
                best["tokens_saved"],
                best["preservation"],
                s=360,
                marker="*",
                color=RECOMMENDED,
                edgecolors="white",
                linewidths=0.8,
                zorder=4,
                label="recommended",
            )
        ax.set_xlim(-0.02 * x_high, 1.12 * x_high)
        bottom = max(0.0, y_low - 0.04)
        ax.set_ylim(bottom, 1.0 + 0.06 * (1.0 - bottom))
        ax.set_yticks([t for t in ax.get_yticks() if bottom <= t <= 1.0 + 1e-9])  # no tick above 100%
        # Round steps (1, 2, 5 × 10^n) so that ticks read 0, 10, 20 … rather than 0, 2, 5, 8, 13%.
        ax.xaxis.set_major_locator(MaxNLocator(nbins=8, steps=[1, 2, 5, 10]))
        ax.xaxis.set_major_formatter(PercentFormatter(1.0, decimals=1 if x_high < 0.05 else 0))
        ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
        ax.set_xlabel("prompt tokens removed (mean over transcripts) → better")
        ax.set_ylabel("next-step facts kept (k=1) → better")
        ax.legend(loc="lower left", fontsize=8.5)
        line = on_frontier[["tokens_saved", "preservation"]].to_numpy(float) if len(on_frontier) > 1 else np.empty((0, 2))
        # Only the frontier and the pick are named: a label on every one of a sweep's 64 points is a plot
        # nobody reads at a glance (the others are in the leaderboard, and their markers stay).
        named = [g for g in groups if recommended in g[0] or set(g[0]) & set(frontier)]
        key = _place_labels(figure, ax, named, recommended, line, placed if placed is not None else [], groups)
        return compact_svg(svg_of(figure)), key


def _identical_groups(points: pd.DataFrame) -> list[tuple[list[str], pd.Series]]:
    """Points with the same two numbers (e.g. offline summarizers that produce the same text) share one marker."""
    keyed: dict[tuple, list[str]] = {}
    rows: dict[tuple, pd.Series] = {}
    for _, row in points.sort_values("config").iterrows():
        key = (round(float(row["tokens_saved"]), 12), round(float(row["preservation"]), 12), bool(row["hollow"]))
        keyed.setdefault(key, []).append(row["config"])
        rows.setdefault(key, row)
    return [(names, rows[key]) for key, names in keyed.items()]


def _place_labels(
    figure, ax, groups, recommended: str | None, line: np.ndarray, labels: list, every: list | None = None
) -> list[tuple[str, list[str]]]:
    """Greedy placement: each label of `groups` at the nearest offset where it overlaps no other label
    and as little as possible of the markers (of `every` group, default `groups`) and the frontier line.
    A label that fits nowhere without touching another label is replaced by a number, listed in the
    returned key (number, names); a number that fits nowhere is left off the chart and listed too. So
    labels never overlap."""
    figure.canvas.draw()  # the constrained layout fixes the axes position; labels are kept out of it
    renderer = figure.canvas.get_renderer()
    axes_box = ax.get_window_extent(renderer)
    markers = [ax.transData.transform((row["tokens_saved"], row["preservation"])) for _, row in (every or groups)]
    taken = [Bbox.from_extents(x - 7, y - 7, x + 7, y + 7) for x, y in markers]
    pixels = ax.transData.transform(line) if len(line) else line
    for (x0, y0), (x1, y1) in zip(pixels[:-1], pixels[1:]):  # the frontier line, as small boxes every few pixels
        steps = max(1, int(np.hypot(x1 - x0, y1 - y0) / 4))
        taken += [
            Bbox.from_extents(x - 1.5, y - 1.5, x + 1.5, y + 1.5)
            for x, y in zip(np.linspace(x0, x1, steps), np.linspace(y0, y1, steps))
        ]
    scale = figure.dpi / 72
    key: list[tuple[str, list[str]]] = []
    # The recommendation first (it must be named), then the largest groups.
    for names, row in sorted(groups, key=lambda g: (recommended not in g[0], -len(g[0]))):
        weight = "bold" if recommended in names else "normal"
        point = (row["tokens_saved"], row["preservation"])
        placed = None
        for text in (group_label(names, 28), str(len(key) + 1)):
            placed = _best_offset(ax, renderer, text, point, weight, markers, taken, labels, axes_box, scale)
            if placed is not None:
                break
        if placed is None:
            key.append(("unlabelled (too crowded)", list(names)))
            continue
        if text != group_label(names, 28):
            key.append((text, list(names)))
        dx, dy, box = placed
        far = abs(dx) > 8 or abs(dy) > 8
        label = ax.annotate(
            text,
            point,
            xytext=(dx, dy),
            textcoords="offset points",
            fontsize=8,
            fontweight=weight,
            color=RECOMMENDED if recommended in names else "#222222",
            ha="left" if dx > 0 else "right" if dx < 0 else "center",
            va="bottom" if dy > 0 else "top" if dy < 0 else "center",
            arrowprops={"arrowstyle": "-", "color": "#777777", "linewidth": 0.7, "shrinkA": 1, "shrinkB": 3} if far else None,
            annotation_clip=False,
        )
        label.set_in_layout(False)
        taken.append(box)
        labels.append(box)
    return key


def _best_offset(ax, renderer, text, point, weight, markers, taken, labels, axes_box, scale):
    """(dx, dy, box) of the cheapest offset whose label touches no other label and stays readable; None if none."""
    best, best_cost = None, None
    for dx, dy in _OFFSETS:
        label = ax.annotate(
            text,
            point,
            xytext=(dx, dy),
            textcoords="offset points",
            fontsize=8,
            fontweight=weight,
            ha="left" if dx > 0 else "right" if dx < 0 else "center",
            va="bottom" if dy > 0 else "top" if dy < 0 else "center",
            annotation_clip=False,
        )
        box = label.get_window_extent(renderer)
        # Browsers may draw the text wider than matplotlib measured: keep a margin.
        box = Bbox.from_extents(box.x0 - 4 * scale, box.y0 - 2, box.x1 + 0.18 * box.width, box.y1 + 2)
        label.remove()
        if any(_overlap(box, other) > 0 for other in labels):
            continue
        own = _distance(box, ax.transData.transform(point))
        # A label nearer to another marker than to its own would name the wrong point.
        confusing = sum(1 for other in markers if _distance(box, other) + 3 < own)
        cost = sum(_overlap(box, other) for other in taken) + 50 * _outside(box, axes_box) + 400 * confusing
        if confusing or _outside(box, axes_box) > 0:
            continue
        if best_cost is None or cost < best_cost - 1e-9:
            best, best_cost = (dx, dy, box), cost
        if cost <= 20:  # a corner touching an error bar's end or a marker's edge is fine
            break
    return best


def _distance(box: Bbox, point) -> float:
    x, y = point
    return float(np.hypot(max(box.x0 - x, 0, x - box.x1), max(box.y0 - y, 0, y - box.y1)))


def _overlap(a: Bbox, b: Bbox) -> float:
    width = min(a.x1, b.x1) - max(a.x0, b.x0)
    height = min(a.y1, b.y1) - max(a.y0, b.y0)
    return max(0.0, width) * max(0.0, height)


def _outside(box: Bbox, axes: Bbox) -> float:
    return max(0.0, axes.x0 - box.x0) + max(0.0, box.x1 - axes.x1) + max(0.0, axes.y0 - box.y0) + max(0.0, box.y1 - axes.y1)
