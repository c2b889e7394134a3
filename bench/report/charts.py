"""Matplotlib charts rendered to inline SVG strings for the HTML reports.

Figures are built with the object-oriented API on an explicit Agg canvas, never through pyplot:
nothing is registered globally, no backend is switched for the caller, and style settings live
in an `rc_context` that ends with the figure. Output is byte-deterministic (fixed hash salt, no
date, text kept as text) so a report can be diffed and tested.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, PercentFormatter

from compactlab.tokens.calibration import Fit

# Fixed colours so an estimator looks the same in every chart of every report.
ESTIMATOR_COLOURS = {
    "chars/4": "#8c6d31",
    "chars/3.5": "#bd9e39",
    "words": "#7b4173",
    "tiktoken-cl100k": "#6b6ecf",
    "tiktoken-o200k": "#393b79",
    "hybrid": "#d6616b",
    "calibrated": "#2ca02c",
}
MODEL_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")
FALLBACK_COLOUR = "#999999"

STYLE = {
    "svg.fonttype": "none",  # text stays text: small files, selectable, browser fonts
    "svg.image_inline": True,
    "font.family": "sans-serif",
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#e4e4e4",
    "grid.linewidth": 0.6,
    "legend.frameon": False,
}
# boxplot(orientation=...) arrived in matplotlib 3.10, which deprecates vert=False.
_HORIZONTAL = (
    {"orientation": "horizontal"} if tuple(map(int, matplotlib.__version__.split(".")[:2])) >= (3, 10) else {"vert": False}
)
_PROLOG = re.compile(r"\A.*?(?=<svg\b)", re.DOTALL)
_METADATA = re.compile(r"\s*<metadata>.*?</metadata>", re.DOTALL)
_ID = re.compile(r' id="([^"]*)"')
_REFERENCE = re.compile(r'(?:href="|url\()#([^")]+)')


@contextmanager
def chart_style(salt: str) -> Iterator[None]:
    """Report style for figures built and saved inside this block; `salt` keeps SVG ids unique per chart."""
    # Each chart gets its own salt: several SVGs inlined in one HTML document share one id
    # namespace, and equal ids from equal salts would make one chart reference another's defs.
    with matplotlib.rc_context({**STYLE, "svg.hashsalt": f"compactlab-{salt}"}):  # type: ignore[dict-item]  # matplotlib types rc keys as a Literal of names
        yield


def new_figure(width: float, height: float) -> Figure:
    figure = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(figure)  # explicit Agg canvas (rasterised scatter layers need one)
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


def clipped_share(values: np.ndarray, clip: tuple[float, float]) -> float:
    return float(((values < clip[0]) | (values > clip[1])).mean()) if len(values) else 0.0


def error_distribution_chart(
    scored: pd.DataFrame, estimators: Sequence[str], families: Sequence[str], clip: tuple[float, float]
) -> str:
    """Relative error per estimator, one panel per family: boxes with 5–95 % whiskers, x limited to `clip`."""
    with chart_style("error-distribution"):
        figure = new_figure(11, 0.42 * len(estimators) + 1.6)
        axes = figure.subplots(1, len(families), sharey=True, squeeze=False)[0]
        for ax, family in zip(axes, families):
            rows = scored[scored["family"] == family]
            names = [e for e in estimators if (rows["estimator"] == e).any()]
            data = [rows.loc[rows["estimator"] == e, "rel_error"].to_numpy(float) for e in names]
            positions = [len(estimators) - estimators.index(e) for e in names]  # first estimator on top
            boxes = ax.boxplot(
                data,
                positions=positions,
                **_HORIZONTAL,
                whis=(5, 95),
                showfliers=False,
                showmeans=True,
                widths=0.6,
                patch_artist=True,
                meanprops={"marker": "D", "markerfacecolor": "white", "markeredgecolor": "black", "markersize": 4},
                medianprops={"color": "black", "linewidth": 1.2},
            )
            for patch, name in zip(boxes["boxes"], names):
                patch.set_facecolor(ESTIMATOR_COLOURS.get(name, FALLBACK_COLOUR))
                patch.set_alpha(0.75)
            ax.axvline(0, color="black", linewidth=0.9, zorder=0)
            ax.set_xlim(*clip)
            ax.xaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
            ax.set_yticks(range(1, len(estimators) + 1), [text_label(e) for e in reversed(estimators)])
            ax.set_ylim(0.4, len(estimators) + 0.6)
            ax.grid(axis="y", visible=False)
            ax.set_title(f"{text_label(family)}: {_calls_per_estimator(rows)}")
            ax.set_xlabel("relative error (estimate − billed) / billed")
        axes[0].legend(
            handles=[boxes["medians"][0], boxes["means"][0]],
            labels=["median", "mean"],
            loc="lower left",
            fontsize=8,
        )
        return svg_of(figure)


def _calls_per_estimator(rows: pd.DataFrame) -> str:
    counts = rows.groupby("estimator").size()
    return f"{counts.max():,} calls" if counts.nunique() == 1 else f"{counts.min():,}–{counts.max():,} calls"


def scatter_chart(scored: pd.DataFrame, estimators: Sequence[str], families: Sequence[str], fits: dict[str, Fit]) -> str:
    """Estimated against billed prompt tokens: rows are families, columns estimators, colour the model."""
    with chart_style("estimate-vs-true"):
        figure = new_figure(11, 3.5 * len(families) + 0.2)
        grid = figure.subplots(len(families), len(estimators), squeeze=False)
        thousands = FuncFormatter(lambda value, _: f"{value / 1000:g}k" if value else "0")
        for row, family in zip(grid, families):
            rows = scored[scored["family"] == family]
            models = rows.groupby("model").size().sort_values(ascending=False, kind="stable")
            shown = list(models.index[: len(MODEL_COLOURS)])  # the rest share one grey
            colours = {m: MODEL_COLOURS[i] for i, m in enumerate(shown)}
            top = 1.05 * max(rows["true_tokens"].max(), rows["estimate"].max(), 1)
            for ax, name in zip(row, estimators):
                points = rows[rows["estimator"] == name]
                for model, group in points.groupby("model", sort=False):
                    ax.scatter(
                        group["true_tokens"],
                        group["estimate"],
                        s=5,
                        alpha=0.45,
                        linewidths=0,
                        color=colours.get(model, FALLBACK_COLOUR),
                        rasterized=True,  # thousands of dots: raster keeps the SVG small
                    )
                ax.plot([0, top], [0, top], color="black", linestyle="--", linewidth=0.9, label="estimate = billed")
                fit = fits.get(family)
                # Sessions fitted as growth since their first call have a line of their own each.
                if fit is not None and name == fit.base and fit.slope and not fit.growth_calls:
                    # The calibration line seen from the base estimator: estimate = (billed − b) / a.
                    ax.plot(
                        [0, top],
                        [(0 - fit.intercept) / fit.slope, (top - fit.intercept) / fit.slope],
                        color="#444444",
                        linestyle=":",
                        linewidth=1.6,
                        label="calibration fit",
                    )
                ax.set_xlim(0, top)
                ax.set_ylim(0, top)
                ax.xaxis.set_major_formatter(thousands)
                ax.yaxis.set_major_formatter(thousands)
                # Two short lines: browsers may draw text in a wider font than matplotlib measured.
                note = ", test split" if name == "calibrated" else ""
                ax.set_title(f"{text_label(family)} · {text_label(name)}\n{len(points):,} calls{note}", fontsize=9.5)
                ax.set_xlabel("billed prompt tokens")
                ax.set_ylabel("estimated tokens")
                ax.legend(loc="upper left", fontsize=7.5)
            # Hybrid hugs the diagonal, so its lower right corner is the emptiest place for the model key.
            key_ax = row[list(estimators).index("hybrid")] if "hybrid" in estimators else row[-1]
            _model_legend(key_ax, shown, colours, more=len(models) - len(shown))
        return svg_of(figure)


def _model_legend(ax: Axes, shown: list[str], colours: dict[str, str], more: int) -> None:
    legend = ax.get_legend()
    assert legend is not None, "the estimate = billed line is drawn with its legend first"
    ax.add_artist(legend)  # keep the "estimate = billed" legend; models go in the empty lower right
    handles = [Line2D([], [], marker="o", linestyle="", color=colours[m], markersize=5) for m in shown]
    labels = [text_label(m) for m in shown]
    if more:
        handles.append(Line2D([], [], marker="o", linestyle="", color=FALLBACK_COLOUR, markersize=5))
        labels.append(f"{more} other models")
    ax.legend(
        handles,
        labels,
        loc="lower right",
        fontsize=7,
        title="model",
        title_fontsize=7.5,
        handletextpad=0.2,
        frameon=True,
        facecolor="white",
        edgecolor="none",
        framealpha=0.9,  # readable over stray dots
    )
