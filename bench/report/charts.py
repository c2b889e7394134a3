"""The token-estimation charts, written as SVG from the data (`compactlab.report.svg_plot`).

Boxes and dots on linear axes: matplotlib spent seconds laying out the dozen panels (the report's
largest cost after the saw-tooth charts), so they are drawn here straight from the numbers. Output
is byte-deterministic, holds no ids (several charts share one page) and escapes every label.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from compactlab.report.svg_plot import (
    DASHED,
    DOTTED,
    Box,
    Drawing,
    Key,
    Scale,
    axes,
    axes_margin,
    clip_segment,
    draw_key,
    key_size,
    nice_ticks,
    text_width,
    thousands,
)
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
WIDTH = 792.0  # 11 inches, in points
DOT_RADIUS = 1.12  # matplotlib's scatter size 5 (pt²)


def clipped_share(values: np.ndarray, clip: tuple[float, float]) -> float:
    return float(((values < clip[0]) | (values > clip[1])).mean()) if len(values) else 0.0


def percent(value: float) -> str:
    return f"{100 * value:.0f}%".replace("-", "−")


def error_distribution_chart(
    scored: pd.DataFrame, estimators: Sequence[str], families: Sequence[str], clip: tuple[float, float]
) -> str:
    """Relative error per estimator, one panel per family: boxes with 5–95 % whiskers, x limited to `clip`."""
    height = (0.42 * len(estimators) + 1.6) * 72
    yticks = [(len(estimators) - i, name) for i, name in enumerate(estimators)]  # first estimator on top
    left = axes_margin(yticks, ylabel=False)
    gap, top, bottom = 22.0, 20.0, height - 40
    panel = (WIDTH - left - 8 - gap * (len(families) - 1)) / max(1, len(families))
    xticks = [(v, percent(v)) for v in nice_ticks(clip[0], clip[1], 5, (1, 2, 5, 10))]
    d = Drawing(WIDTH, height)
    for i, family in enumerate(families):
        box = Box(left + i * (panel + gap), top, left + i * (panel + gap) + panel, bottom)
        x, y = Scale(clip[0], clip[1], box.left, box.right), Scale(0.4, len(estimators) + 0.6, box.bottom, box.top)
        rows = scored[scored["family"] == family]
        axes(d, box, x, y, xticks, yticks if i == 0 else [(v, "") for v, _ in yticks], grid=(True, False))
        d.path([x(0)] * 2, [box.top, box.bottom], "#000000", 0.9)
        for name in estimators:
            values = rows.loc[rows["estimator"] == name, "rel_error"].to_numpy(float)
            if len(values):
                middle = y(len(estimators) - estimators.index(name))
                _box(d, box, x, middle, y(0) - y(1), values, ESTIMATOR_COLOURS.get(name, FALLBACK_COLOUR))
        d.text((box.left + box.right) / 2, top - 6, f"{family}: {_calls_per_estimator(rows)}", 11, "middle")
        if i == 0:
            keys = [Key("median", "#000000", width=1.2), Key("mean", "#ffffff", kind="diamond", edge="#000000")]
            _, key_height, _ = key_size(keys, 8)
            draw_key(d, box.left + 4, box.bottom - key_height - 4, keys, 8)
    d.text((left + WIDTH - 8) / 2, height - 8, "relative error (estimate − billed) / billed", 10, "middle")
    return d.svg()


def _box(d: Drawing, box: Box, x: Scale, middle: float, row: float, values: np.ndarray, colour: str) -> None:
    """One box (quartiles, `row` points per estimator), its whiskers (5th and 95th percentiles) with caps,
    median line and mean diamond, each cut at the panel's edges (what lies beyond, the caption names)."""
    low, q1, median, q3, high = np.percentile(values, [5, 25, 50, 75, 95])
    height = 0.6 * row

    def edge(value: float) -> float:
        return min(max(x(value), box.left), box.right)

    for a, b in ((low, q1), (q3, high)):
        if edge(a) != edge(b):
            d.path([edge(a), edge(b)], [middle] * 2, "#000000", 1.0)
    for end in (low, high):
        if x.inside(end):
            d.path([x(end)] * 2, [middle - height / 4, middle + height / 4], "#000000", 1.0)
    if edge(q1) != edge(q3):
        d.rect(edge(q1), middle - height / 2, edge(q3), middle + height / 2, colour, opacity=0.75)
        d.rect(edge(q1), middle - height / 2, edge(q3), middle + height / 2, "none", "#000000", 1.0)
    if x.inside(median):
        d.path([x(median)] * 2, [middle - height / 2, middle + height / 2], "#000000", 1.2)
    mean = float(values.mean())
    if x.inside(mean):
        d.diamond(x(mean), middle, 2.6, "#ffffff", "#000000", 0.8)


def _calls_per_estimator(rows: pd.DataFrame) -> str:
    counts = rows.groupby("estimator").size()
    return f"{counts.max():,} calls" if counts.nunique() == 1 else f"{counts.min():,}–{counts.max():,} calls"


def scatter_chart(scored: pd.DataFrame, estimators: Sequence[str], families: Sequence[str], fits: dict[str, Fit]) -> str:
    """Estimated against billed prompt tokens: rows are families, columns estimators, colour the model."""
    row_height = 3.5 * 72
    d = Drawing(WIDTH, row_height * len(families) + 0.2 * 72)
    column = WIDTH / max(1, len(estimators))
    for r, family in enumerate(families):
        rows = scored[scored["family"] == family]
        models = rows.groupby("model").size().sort_values(ascending=False, kind="stable")
        shown = list(models.index[: len(MODEL_COLOURS)])  # the rest share one grey
        colours = {m: MODEL_COLOURS[i] for i, m in enumerate(shown)}
        top = 1.05 * max(rows["true_tokens"].max(), rows["estimate"].max(), 1)
        # Fewer ticks across than up: "125k" labels side by side need the room.
        xticks, yticks = ([(v, thousands(v)) for v in nice_ticks(0, top, bins)] for bins in (5, 8))
        left = axes_margin(yticks)
        # Hybrid hugs the diagonal, so its lower right corner is the emptiest place for the model key.
        key_at = list(estimators).index("hybrid") if "hybrid" in estimators else len(estimators) - 1
        for c, name in enumerate(estimators):
            box = Box(c * column + left, r * row_height + 34, (c + 1) * column - 10, (r + 1) * row_height - 30)
            x, y = Scale(0, top, box.left, box.right), Scale(0, top, box.bottom, box.top)
            points = rows[rows["estimator"] == name]
            axes(d, box, x, y, xticks, yticks, "billed prompt tokens", "estimated tokens")
            for model, group in points.groupby("model", sort=False):
                d.dots(
                    x.many(group["true_tokens"].to_numpy(float)),
                    y.many(group["estimate"].to_numpy(float)),
                    DOT_RADIUS,
                    colours.get(model, FALLBACK_COLOUR),
                    0.45,
                )
            keys = [Key("estimate = billed", "#000000", width=0.9, dash=DASHED)]
            d.path([box.left, box.right], [box.bottom, box.top], "#000000", 0.9, DASHED)
            fit = fits.get(family)
            # Sessions fitted as growth since their first call have a line of their own each.
            if fit is not None and name == fit.base and fit.slope and not fit.growth_calls:
                # The calibration line seen from the base estimator: estimate = (billed − b) / a.
                line = clip_segment(x(0), y(-fit.intercept / fit.slope), x(top), y((top - fit.intercept) / fit.slope), box)
                if line is not None:
                    d.path(line[::2], line[1::2], "#444444", 1.6, DOTTED)
                keys.append(Key("calibration fit", "#444444", width=1.6, dash=DOTTED))
            draw_key(d, box.left + 4, box.top + 2, keys, 7.5)
            note = ", test split" if name == "calibrated" else ""
            d.text((box.left + box.right) / 2, box.top - 18, f"{family} · {name}\n{len(points):,} calls{note}", 9.5, "middle")
            if c == key_at:
                _model_key(d, box, shown, colours, more=len(models) - len(shown))
    return d.svg()


def _model_key(d: Drawing, box: Box, shown: list[str], colours: dict[str, str], more: int) -> None:
    """The models' colours in the lower right corner, on white (readable over stray dots)."""
    keys = [Key(m, colours[m], kind="dot") for m in shown]
    keys += [Key(f"{more} other models", FALLBACK_COLOUR, kind="dot")] if more else []
    width, height, _ = key_size(keys, 7)
    width = max(width, text_width("model", 7.5))
    left, top = box.right - width - 6, box.bottom - height - 16
    d.rect(left - 3, top - 2, box.right - 2, box.bottom - 2, "#ffffff", opacity=0.9)
    d.text(left + width / 2, top + 8, "model", 7.5, "middle")
    draw_key(d, left, top + 11, keys, 7)
