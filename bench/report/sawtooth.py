"""The per-session saw-tooth chart: prompt tokens per call, uncompacted and under each strategy.

Written as SVG from the call rows (`compactlab.report.svg_plot`): it is lines on two linear axes,
and matplotlib's layout of a dozen of them was a quarter of the report's time. Only strategy
labels and numbers reach the SVG, escaped; session text never does.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

import numpy as np
import pandas as pd

from compactlab.report import svg_plot as svg
from compactlab.report.svg_plot import Box, Drawing, Key, Scale

WIDTH, HEIGHT = 792.0, 237.6  # 11 × 3.3 inches, in points
BESIDE, BELOW = 7.5, 7.0  # key font sizes: a key beside the axes, a long one below them in columns
COLUMNS = 3
UNUSED = "#999999"


def names_label(names: Sequence[str], width: int = 40) -> str:
    """'a, b, c' wrapped to lines of `width` characters (identical lines share one label)."""
    return "\n".join(textwrap.wrap(", ".join(names), width)) or ""


def sawtooth_chart(calls: pd.DataFrame, colours: dict[str, str], real_compactions: Sequence[int] = ()) -> tuple[str, list[str]]:
    """Context tokens per call for one session: the uncompacted prompt and each strategy's.

    Strategies with identical context series share one line; those that never changed the context
    are left out (they follow the uncompacted line) and returned, so the caption can name them.
    """
    full = calls.drop_duplicates("call").sort_values("call")
    full_tokens = full["full_tokens"].to_numpy(float)
    series: dict[tuple, list[str]] = {}
    untouched = []
    for label, group in calls.groupby("setting", sort=True):
        values = tuple(group.sort_values("call")["context_tokens"].tolist())
        if values == tuple(full_tokens.tolist()):
            untouched.append(label)
        else:
            series.setdefault(values, []).append(label)
    window = int(full["window"].iloc[0]) if len(full) else 0
    keys = [Key("no compaction", "#000000", width=1.6, dash=svg.DASHED)]
    keys += [Key(names_label(labels), colours.get(labels[0], UNUSED), width=1.1, opacity=0.9) for labels in series.values()]
    keys += [Key("production compaction", "#333333", width=1.2, dash=svg.DASH_DOT)] if len(real_compactions) else []
    # A sweep has dozens of lines: beside the plot their key would squeeze the axes to nothing,
    # so a long key goes below it in columns, and the chart grows to hold it.
    below = len(keys) > 10
    size = BELOW if below else BESIDE
    key_width, key_height, _ = svg.key_size(keys, size, COLUMNS if below else 1)
    calls_axis = full["call"].to_numpy(float)
    x = Scale(-0.5, max(1.0, len(full) - 0.5), 0, 0)  # pixel range set below, once the margins are known
    top_value = max(float(full_tokens.max()) if len(full) else 0.0, window) * 1.08 or 1.0
    yticks = [(v, svg.thousands(v)) for v in svg.nice_ticks(0, top_value, 7)]
    xticks = [(v, f"{v:g}") for v in svg.nice_ticks(x.low, x.high, 9, (1, 2, 2.5, 5, 10)) if float(v).is_integer()]
    left = svg.axes_margin(yticks)
    height = HEIGHT + (key_height + 8 if below else 0)
    box = Box(left, 4.0, WIDTH - (8 if below else key_width + 14), height - 36 - (key_height + 8 if below else 0))
    x = Scale(x.low, x.high, box.left, box.right)
    y = Scale(0, top_value, box.bottom, box.top)
    d = Drawing(WIDTH, height)
    svg.axes(d, box, x, y, xticks, yticks, "LLM call", "prompt tokens")
    if window:
        d.path([box.left, box.right], [y(window)] * 2, "#b3261e", 0.8, svg.DOTTED)
        d.text(box.left + 2, y(window) - 2, f"window {window / 1000:g}k", 7.5, colour="#b3261e")
    for call in real_compactions:
        d.path([x(call)] * 2, [box.top, box.bottom], "#333333", 1.2, svg.DASH_DOT)
    for key, values in zip(keys[1:], series):
        d.path(*svg.thinned(x.many(calls_axis[: len(values)]), y.many(np.asarray(values, float))), key.colour, 1.1, opacity=0.9)
    d.path(*svg.thinned(x.many(calls_axis), y.many(full_tokens)), "#000000", 1.6, svg.DASHED)
    if below:
        svg.draw_key(d, (WIDTH - key_width) / 2, box.bottom + 36, keys, size, COLUMNS)
    else:
        svg.draw_key(d, box.right + 8, box.top, keys, size)
    return d.svg(), untouched
