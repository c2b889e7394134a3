"""The charts written as SVG from the data (Pareto plot, saw-tooth, error distribution, scatter), on
real runs: each draws every number it is given where its own tick labels say, and the report needs
no matplotlib."""

from __future__ import annotations

import re
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import numpy as np
import pytest
from matplotlib.font_manager import FontProperties
from matplotlib.textpath import TextToPath

from compactlab.report.charts import error_distribution_chart, scatter_chart
from compactlab.report.lazy import inflated
from compactlab.report.run_charts import colours_for
from compactlab.report.run_data import load_run
from compactlab.report.sawtooth import sawtooth_chart
from compactlab.report.sessions import recorded_rows
from compactlab.report.svg_plot import nice_ticks, text_width, thinned
from compactlab.tokens.estimation import DEFAULT_ESTIMATORS, IN_SAMPLE
from tests.conftest import SharedRun

SVG = "{http://www.w3.org/2000/svg}"
REAL_COMPACTION = "3af9b1a7-6512-4883-ad18-320658ced099"  # m-claude's session with a real compaction


@pytest.fixture(scope="module")
def run_dir(small_run: SharedRun) -> Path:
    return small_run.folder


def tree(svg: str) -> ElementTree.Element:
    root = ElementTree.fromstring(svg)
    assert root.tag == f"{SVG}svg" and not root.findall(".//*[@id]"), "no ids: several charts share one page"
    return root


def points(path: ElementTree.Element) -> np.ndarray:
    return np.array(re.findall(r"(-?[\d.]+) (-?[\d.]+)", path.get("d", "")), float)


def y_scale(root: ElementTree.Element, labels: dict[str, float]) -> tuple[float, float]:
    """(points per unit, y of 0) read from two of the chart's own y tick labels (right-aligned text)."""
    ticks = [
        (labels[t.text], float(t.get("y"))) for t in root.iter(f"{SVG}text") if t.get("text-anchor") == "end" and t.text in labels
    ]
    (v0, y0), (v1, y1) = ticks[0], ticks[-1]
    slope = (y1 - y0) / (v1 - v0)
    return slope, y0 - 0.35 * 10 - slope * v0  # tick labels are centred on their tick (0.35 of the font size)


def test_text_widths_are_the_fonts() -> None:
    measure = TextToPath()
    for text in ("prompt tokens", "claude-sonnet-4-5-20250929", "extractive, iterative-merge, pipeline,", "200k", "Wq|"):
        width, _, _ = measure.get_text_width_height_descent(text, FontProperties(family="DejaVu Sans", size=10), ismath=False)
        assert text_width(text, 10) == pytest.approx(width, rel=0.02), text


def test_ticks_are_round_and_inside() -> None:
    assert nice_ticks(0, 540_000, 7) == [0, 100_000, 200_000, 300_000, 400_000, 500_000]
    assert nice_ticks(-0.6, 0.3, 5, (1, 2, 5, 10)) == [-0.6, -0.4, -0.2, 0.0, 0.2]
    assert nice_ticks(-0.5, 470.5, 9) == [0, 100, 200, 300, 400]


def test_sawtooth_draws_every_series_where_its_ticks_say(run_dir: Path) -> None:
    run = load_run(run_dir)
    calls = run.calls_of([REAL_COMPACTION])
    real = sorted({r["call"] for r in recorded_rows(run) if r["session"] == REAL_COMPACTION})
    colours = colours_for(run.labels)
    svg, untouched = sawtooth_chart(calls, colours, real)
    root = tree(svg)
    full = calls.drop_duplicates("call").sort_values("call")["full_tokens"].to_numpy(float)
    series = {tuple(g.sort_values("call")["context_tokens"]) for _, g in calls.groupby("setting")} - {tuple(full)}
    drawn = [p for p in root.iter(f"{SVG}path") if len(points(p)) > 2]  # (a key's sample is two points)
    lines = [p for p in drawn if p.get("stroke-width") == "1.1"]
    assert len(lines) == len(series) >= 1 and set(untouched) | {"recorded"} <= set(run.labels)
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert "no compaction" in texts and ("production compaction" in texts) == bool(real)
    # The uncompacted line's peak sits at the peak's height on the chart's own scale.
    labels = {f"{v / 1000:g}k" if v else "0": v for v in range(0, 2_000_000, 1000)}
    slope, zero = y_scale(root, labels)
    [dashed] = [p for p in drawn if p.get("stroke-width") == "1.6"]
    top = points(dashed)[:, 1].min()
    assert top == pytest.approx(zero + slope * full.max(), abs=0.3)
    # Every line's lowest point is on the chart: nothing below zero or above the top.
    assert all(points(p)[:, 1].max() <= zero + 0.1 for p in lines)


def test_thinning_drops_only_what_cannot_be_seen(run_dir: Path) -> None:
    calls = load_run(run_dir).calls_of([REAL_COMPACTION])
    for _, group in calls.groupby("setting"):
        xs = group["call"].to_numpy(float) * 1.7
        ys = 200 - group["context_tokens"].to_numpy(float) / 500
        kept_x, kept_y = thinned(xs, ys)
        assert len(kept_x) <= len(xs) and kept_x[0] == xs[0] and kept_x[-1] == xs[-1]
        # Each dropped point lies within 0.1 pt of the kept segment over it (x grows along the line).
        end = np.clip(np.searchsorted(kept_x, xs), 1, len(kept_x) - 1)
        ax, ay, bx, by = kept_x[end - 1], kept_y[end - 1], kept_x[end], kept_y[end]
        distance = np.abs((by - ay) * (xs - ax) - (bx - ax) * (ys - ay)) / np.hypot(bx - ax, by - ay)
        assert distance.max() <= 0.1 + 1e-9 and len(kept_x) < len(xs)


@pytest.fixture(scope="module")
def scored(run_dir: Path):
    result = load_run(run_dir).estimation.result
    calls = result.calls[~result.calls["first_call"].astype(bool)]
    return calls[calls["estimator"].isin((*DEFAULT_ESTIMATORS, IN_SAMPLE))], result.fits


def test_scatter_shows_every_scored_call(scored) -> None:
    calls, fits = scored
    families = sorted(calls["family"].unique())
    estimators = [e for e in ("tiktoken-o200k", "hybrid", "calibrated") if e in set(calls["estimator"])]
    root = tree(scatter_chart(calls, estimators, families, fits))
    dots = [p for p in root.iter(f"{SVG}path") if p.get("d", "").endswith("h0")]
    models = [calls.loc[calls["family"] == f, "model"].nunique() for f in families]
    key_dots = sum(min(n, 8) + (n > 8) for n in models)  # each family's key: 8 models, then one for the rest
    assert len(dots) == len(calls[calls["estimator"].isin(estimators)]) + key_dots > key_dots
    width, height = (float(v) for v in root.get("viewBox").split()[2:])
    xy = np.array([points(p)[0] for p in dots])
    assert (xy >= 0).all() and (xy[:, 0] <= width).all() and (xy[:, 1] <= height).all()


def test_error_boxes_are_the_quartiles(scored) -> None:
    calls, _ = scored
    families = sorted(calls["family"].unique())
    estimators = [e for e in (*DEFAULT_ESTIMATORS, IN_SAMPLE) if e in set(calls["estimator"])]
    clip = (-0.6, 0.3)
    root = tree(error_distribution_chart(calls, estimators, families, clip))
    percent = {f"{v}%".replace("-", "−"): v / 100 for v in range(-100, 101, 10)}
    first = [t for t in root.iter(f"{SVG}text") if t.get("text-anchor") == "middle" and t.text in percent]
    (v0, x0), (v1, x1) = [(percent[t.text], float(t.get("x"))) for t in first[:2]]
    boxes = [r for r in root.iter(f"{SVG}rect") if r.get("fill") == "none"]
    assert len(boxes) == sum(
        1 for f in families for e in estimators if ((calls["family"] == f) & (calls["estimator"] == e)).any()
    )
    rows = calls[(calls["family"] == families[0]) & (calls["estimator"] == estimators[0])]["rel_error"]
    q1, q3 = np.percentile(rows, [25, 75])
    left = float(boxes[0].get("x"))
    assert left == pytest.approx(
        max(x0 + (q1 - v0) * (x1 - x0) / (v1 - v0), x0 + (clip[0] - v0) * (x1 - x0) / (v1 - v0)), abs=0.1
    )
    assert left + float(boxes[0].get("width")) == pytest.approx(x0 + (q3 - v0) * (x1 - x0) / (v1 - v0), abs=0.2)


def test_the_report_is_written_without_matplotlib(run_dir: Path, tmp_path: Path) -> None:
    # Importing matplotlib and laying out its figures was most of the report's CPU: no chart needs it now.
    script = (
        "import sys; from compactlab.report.run_report import write_run_report; "
        f"write_run_report({str(run_dir)!r}, out={str(tmp_path / 'report.html')!r}); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'matplotlib'))"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert page == (run_dir / "report.html").read_text(encoding="utf-8")  # what `compactlab run` wrote, byte for byte
    assert inflated(page).count("<svg") >= 4  # Pareto, two estimation charts, a saw-tooth or more (opened)
