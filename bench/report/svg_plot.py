"""Plain charts written as SVG straight from the data: scales, ticks, lines, boxes, dots, text, keys.

Every chart of the report (Pareto plot, saw-tooth, error distribution, scatter) is lines, boxes and
dots on linear axes; matplotlib spent most of the report's time laying them out (text measured glyph by glyph,
constrained layout, tick objects, the SVG backend). Here a chart is a few hundred lines of SVG
written from the numbers. Units are points (the `<svg>` is sized in `pt`, as matplotlib's were),
y grows downward. Text is escaped here, and only here; text widths come from DejaVu Sans's advance
widths (the report's first font), so labels and keys are laid out without measuring glyphs.
Nothing here holds an `id`: several charts share one page without clashes.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from html import escape

import numpy as np

FONT = "'DejaVu Sans', 'Arial', sans-serif"
# DejaVu Sans advance widths of the printable ASCII characters (space to ~), in thousandths of the
# font size (matplotlib's bundled font, read with ft2font); other characters count as 0.6.
_WIDTHS = (
    318, 401, 460, 838, 636, 950, 780, 275, 390, 390, 500, 838, 318, 361, 318, 337,
    636, 636, 636, 636, 636, 636, 636, 636, 636, 636, 337, 337, 838, 838, 838, 531,
    1000, 684, 686, 698, 770, 632, 575, 775, 752, 295, 295, 656, 557, 863, 748, 787,
    603, 787, 695, 635, 611, 732, 684, 989, 685, 611, 685, 390, 337, 390, 838, 500,
    500, 613, 635, 550, 635, 615, 352, 635, 634, 278, 278, 579, 278, 974, 634, 612,
    635, 635, 411, 521, 392, 634, 592, 818, 592, 592, 525, 636, 337, 636, 838,
)  # fmt: skip
OTHER_WIDTH = 600
# matplotlib's dash patterns (in line widths), so lines look as they did.
DASHED, DOTTED, DASH_DOT = (3.7, 1.6), (1, 1.65), (6.4, 1.6, 1, 1.6)


def text_width(text: str, size: float) -> float:
    """The width of one line of `text` at font `size`, in points."""
    return size * sum(_WIDTHS[ord(c) - 32] if 32 <= ord(c) < 127 else OTHER_WIDTH for c in text) / 1000


def thousands(value: float) -> str:
    """A token count as a tick label: 0, 25k, 1.5k."""
    return f"{value / 1000:g}k" if value else "0"


def num(value: float) -> str:
    """A coordinate to 0.1 pt (a tenth of a point is invisible), without a trailing `.0`."""
    text = f"{value:.1f}"
    return "0" if text in ("0.0", "-0.0") else text.removesuffix(".0")


@dataclass(frozen=True)
class Scale:
    """Data values `low`..`high` onto points `start`..`end` (for y, start is the bottom: larger)."""

    low: float
    high: float
    start: float
    end: float

    def __call__(self, value: float) -> float:
        span = self.high - self.low or 1.0
        return self.start + (value - self.low) / span * (self.end - self.start)

    def many(self, values: np.ndarray) -> np.ndarray:
        span = self.high - self.low or 1.0
        return self.start + (np.asarray(values, float) - self.low) / span * (self.end - self.start)

    def inside(self, value: float) -> bool:
        return min(self.low, self.high) - 1e-9 <= value <= max(self.low, self.high) + 1e-9


def nice_ticks(low: float, high: float, bins: int = 8, steps: Sequence[float] = (1, 2, 2.5, 5, 10)) -> list[float]:
    """Round tick values (a step of 1, 2, 2.5 or 5 × 10^n) inside [low, high], at most about `bins` + 1."""
    if not high > low:
        return [low]
    raw = (high - low) / bins
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(s * magnitude for s in steps if s * magnitude >= raw - 1e-12)
    first = math.ceil(low / step - 1e-9)
    return [round(i * step, 12) for i in range(first, math.floor(high / step + 1e-9) + 1)]


@dataclass(frozen=True)
class Key:
    """One entry of a chart's key: a short line (`dash`), a dot, a diamond, a ring, a star or a box (`kind`)
    and its label."""

    label: str  # lines separated by "\n"
    colour: str
    kind: str = "line"
    width: float = 1.0
    dash: tuple[float, ...] = ()
    opacity: float = 1.0
    edge: str = ""  # the outline colour of the marker kinds


class Drawing:
    """An SVG document built element by element (in points, y down)."""

    def __init__(self, width: float, height: float) -> None:
        self.width, self.height = width, height
        self.parts: list[str] = []

    def path(
        self,
        xs: Iterable[float],
        ys: Iterable[float],
        colour: str,
        width: float = 1.0,
        dash: tuple[float, ...] = (),
        opacity: float = 1.0,
        fill: str = "none",
        closed: bool = False,
    ) -> None:
        points = [f"{num(x)} {num(y)}" for x, y in zip(xs, ys)]
        if len(points) < 2:
            return
        data = "M" + "L".join(points) + ("Z" if closed else "")
        style = f'fill="{fill}" stroke="{colour}" stroke-width="{num(width) if width >= 0.1 else width}"'
        if dash:
            style += f' stroke-dasharray="{",".join(num(d * width) for d in dash)}"'
        if opacity < 1:
            style += f' opacity="{opacity:g}"'
        self.parts.append(f'<path d="{data}" {style}/>')

    def rect(
        self, x0: float, y0: float, x1: float, y1: float, fill: str, edge: str = "", width: float = 1.0, opacity: float = 1.0
    ) -> None:
        x, y = min(x0, x1), min(y0, y1)
        style = f'fill="{fill}"' + (f' stroke="{edge}" stroke-width="{num(width)}"' if edge else "")
        style += f' fill-opacity="{opacity:g}"' if opacity < 1 else ""
        self.parts.append(f'<rect x="{num(x)}" y="{num(y)}" width="{num(abs(x1 - x0))}" height="{num(abs(y1 - y0))}" {style}/>')

    def dots(self, xs: np.ndarray, ys: np.ndarray, radius: float, colour: str, opacity: float = 1.0) -> None:
        """One round dot per point, each its own element so that transparency adds up where points pile
        up (as in a scatter plot): a zero-length stroke with round caps, the shortest SVG for a dot."""
        if not len(xs):
            return
        style = f'stroke="{colour}" stroke-width="{num(2 * radius)}" stroke-linecap="round"'
        style += f' stroke-opacity="{opacity:g}"' if opacity < 1 else ""
        dots = "".join(f'<path d="M{num(x)} {num(y)}h0"/>' for x, y in zip(xs, ys))
        self.parts.append(f"<g {style}>{dots}</g>")

    def diamond(self, x: float, y: float, radius: float, fill: str, edge: str, width: float) -> None:
        self.path([x - radius, x, x + radius, x], [y, y - radius, y, y + radius], edge, width, fill=fill, closed=True)

    def circle(self, x: float, y: float, radius: float, fill: str, edge: str, width: float, title: str = "") -> None:
        """A circle; `title`: its tooltip (a browser shows it on hover)."""
        circle = (
            f'<circle cx="{num(x)}" cy="{num(y)}" r="{num(radius)}" fill="{fill}" stroke="{edge}" stroke-width="{num(width)}"'
        )
        self.parts.append(f"{circle}><title>{escape(title)}</title></circle>" if title else f"{circle}/>")

    def star(self, x: float, y: float, radius: float, fill: str, edge: str, width: float) -> None:
        """A five-pointed star (matplotlib's `*` marker: inner radius 0.382 of the outer), point up."""
        angles = [math.pi / 2 + i * math.pi / 5 for i in range(10)]
        radii = [radius if i % 2 == 0 else 0.382 * radius for i in range(10)]
        xs = [x + r * math.cos(a) for r, a in zip(radii, angles)]
        ys = [y - r * math.sin(a) for r, a in zip(radii, angles)]
        self.path(xs, ys, edge, width, fill=fill, closed=True)

    def text(
        self,
        x: float,
        y: float,
        text: str,
        size: float = 10,
        anchor: str = "start",
        colour: str = "#000000",
        weight: str = "normal",
        rotate: float = 0,
        middle: bool = False,
    ) -> None:
        """`text` with its baseline at y (`middle`: centred on y instead); several lines go downward."""
        lines = text.split("\n")
        first = y + (0.35 * size - 0.6 * size * (len(lines) - 1) if middle else 0)
        style = f'font-size="{num(size)}" text-anchor="{anchor}"' + (f' fill="{colour}"' if colour != "#000000" else "")
        style += f' font-weight="{weight}"' if weight != "normal" else ""
        style += f' transform="rotate({rotate:g} {num(x)} {num(first)})"' if rotate else ""
        for i, line in enumerate(lines):
            self.parts.append(f'<text x="{num(x)}" y="{num(first + 1.2 * size * i)}" {style}>{escape(line)}</text>')

    def svg(self) -> str:
        return (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{num(self.width)}pt" height="{num(self.height)}pt" '
            f'viewBox="0 0 {num(self.width)} {num(self.height)}" font-family="{escape(FONT)}">'
            f'<rect width="100%" height="100%" fill="#ffffff"/>' + "".join(self.parts) + "</svg>"
        )


@dataclass(frozen=True)
class Box:
    """An axes' plotting area in points: left, top, right, bottom."""

    left: float
    top: float
    right: float
    bottom: float


def axes(
    d: Drawing,
    box: Box,
    x: Scale,
    y: Scale,
    xticks: Sequence[tuple[float, str]],
    yticks: Sequence[tuple[float, str]],
    xlabel: str = "",
    ylabel: str = "",
    grid: tuple[bool, bool] = (True, True),
    size: float = 10,
) -> None:
    """Grid lines, the left and bottom spines, outward ticks with their labels, and axis labels."""
    for value, _ in xticks if grid[0] else ():
        d.path([x(value)] * 2, [box.top, box.bottom], "#e4e4e4", 0.6)
    for value, _ in yticks if grid[1] else ():
        d.path([box.left, box.right], [y(value)] * 2, "#e4e4e4", 0.6)
    d.path([box.left, box.left, box.right], [box.top, box.bottom, box.bottom], "#000000", 0.8)
    for value, label in xticks:
        d.path([x(value)] * 2, [box.bottom, box.bottom + 3.5], "#000000", 0.8)
        d.text(x(value), box.bottom + 3.5 + 1.1 * size, label, size, "middle")
    for value, label in yticks:
        d.path([box.left - 3.5, box.left], [y(value)] * 2, "#000000", 0.8)
        if label:  # (panels side by side label their shared rows once)
            d.text(box.left - 5.5, y(value), label, size, "end", middle=True)
    if xlabel:
        d.text((box.left + box.right) / 2, box.bottom + 5 + 2.3 * size, xlabel, size, "middle")
    if ylabel:
        widest = max((text_width(label, size) for _, label in yticks), default=0)
        at = box.left - 9 - widest - 0.4 * size
        d.text(at, (box.top + box.bottom) / 2, ylabel, size, "middle", rotate=-90)


def axes_margin(yticks: Sequence[tuple[float, str]], size: float = 10, ylabel: bool = True) -> float:
    """Room left of the plotting area for the y tick labels (and the y axis label)."""
    return 9 + max((text_width(label, size) for _, label in yticks), default=0) + (1.6 * size if ylabel else 0) + 2


def key_size(keys: Sequence[Key], size: float, columns: int = 1) -> tuple[float, float, list[float]]:
    """Width and height of a key of `keys` in `columns` (filled column by column), and each column's width."""
    rows = -(-len(keys) // columns) if keys else 0
    widths = []
    height = 0.0
    for c in range(columns):
        entries = keys[c * rows : (c + 1) * rows]
        widths.append(max((2.8 * size + max(text_width(t, size) for t in k.label.split("\n")) for k in entries), default=0))
        height = max(height, sum(_entry_height(k, size) for k in entries))
    return sum(widths) + 1.5 * size * (columns - 1), height, widths


def _entry_height(key: Key, size: float) -> float:
    return (0.5 + 1.2 * (key.label.count("\n") + 1)) * size


def draw_key(d: Drawing, left: float, top: float, keys: Sequence[Key], size: float, columns: int = 1) -> None:
    """The key with its top left corner at (left, top): a sample of each entry, then its label."""
    _, _, widths = key_size(keys, size, columns)
    rows = -(-len(keys) // columns) if keys else 0
    x = left
    for c in range(columns):
        y = top
        for key in keys[c * rows : (c + 1) * rows]:
            middle = y + 0.5 * size + 0.35 * size
            sample = (x + 0.2 * size, x + 2.2 * size)
            if key.kind == "line":
                d.path(sample, [middle] * 2, key.colour, key.width, key.dash, key.opacity)
            elif key.kind == "box":
                d.rect(
                    sample[0] + 0.4 * size,
                    middle - 0.35 * size,
                    sample[1] - 0.4 * size,
                    middle + 0.35 * size,
                    key.colour,
                    key.edge or "#000000",
                    0.8,
                    key.opacity,
                )
            elif key.kind == "diamond":
                d.diamond(sum(sample) / 2, middle, 0.3 * size, key.colour, key.edge or "#000000", 0.8)
            elif key.kind == "ring":
                d.circle(sum(sample) / 2, middle, 0.4 * size, key.colour, key.edge or "#000000", 1.2)
            elif key.kind == "star":
                d.star(sum(sample) / 2, middle, 0.9 * size, key.colour, key.edge or "#000000", 0.8)
            else:
                d.dots(np.array([sum(sample) / 2]), np.array([middle]), 0.3 * size, key.colour, key.opacity)
            d.text(x + 2.8 * size, middle, key.label, size, middle=key.label.count("\n") == 0)
            y += _entry_height(key, size)
        x += widths[c] + 1.5 * size


def clip_segment(x0: float, y0: float, x1: float, y1: float, box: Box) -> tuple[float, float, float, float] | None:
    """The part of a straight segment inside `box` (Liang–Barsky), or None when none is."""
    t0, t1 = 0.0, 1.0
    dx, dy = x1 - x0, y1 - y0
    for p, q in ((-dx, x0 - box.left), (dx, box.right - x0), (-dy, y0 - box.top), (dy, box.bottom - y0)):
        if p == 0:
            if q < 0:
                return None
            continue
        t = q / p
        if p < 0:
            t0 = max(t0, t)
        else:
            t1 = min(t1, t)
        if t0 > t1:
            return None
    return x0 + t0 * dx, y0 + t0 * dy, x0 + t1 * dx, y0 + t1 * dy


def thinned(xs: np.ndarray, ys: np.ndarray, tolerance: float = 0.1) -> tuple[np.ndarray, np.ndarray]:
    """The points of a polyline (in points) without those within `tolerance` of the line through their
    neighbours kept: what a viewer cannot tell apart, as matplotlib's path simplification drops."""
    if len(xs) < 3:
        return xs, ys
    keep = [0]
    skipped: list[int] = []
    for i in range(1, len(xs) - 1):
        a = keep[-1]
        candidate = [*skipped, i]
        dx, dy = xs[i + 1] - xs[a], ys[i + 1] - ys[a]
        length = math.hypot(dx, dy) or 1.0
        if len(candidate) < 64 and all(abs(dy * (xs[j] - xs[a]) - dx * (ys[j] - ys[a])) / length <= tolerance for j in candidate):
            skipped = candidate
        else:
            keep.append(i)
            skipped = []
    keep.append(len(xs) - 1)
    return xs[keep], ys[keep]
