"""The report's first screen in a real browser (issue 43, point 4): at 1400 × 900, before any scrolling,
the verdict, the window it is at (real or simulated), what the cost covers, and the whole Pareto plot
with the key that names its every marker. Chromium lays the page out; a probe copy of the page measures
the boxes (`getBoundingClientRect`), the page's height and the tables wider than their column, and a
screenshot shows the plot is drawn there.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from tests.conftest import SharedRun
from tests.report.test_report_in_browser import chromium, decode_png, dump_dom, with_probe

VIEWPORT = (1400, 900)
FIRST_SCREEN = """(function () {
  function box(selector) {
    var e = document.querySelector(selector);
    if (!e) { return null; }
    var r = e.getBoundingClientRect();
    return [r.left, r.top, r.right, r.bottom];
  }
  var keys = Array.prototype.map.call(document.querySelectorAll("#pareto-key li"), function (li) {
    var r = li.getBoundingClientRect();
    return [r.right - r.left, li.scrollWidth - li.clientWidth];
  });
  var wide = [];
  document.querySelectorAll(".table-wrap").forEach(function (w) {
    if (w.scrollWidth > w.clientWidth + 2) { wide.push(w.querySelector("table").id); }
  });
  document.body.setAttribute("data-first-screen", JSON.stringify({
    wide: wide,
    verdict: box("#verdict"), window: box("#verdict-window"), cost: box("#cost-coverage"), plot: box("#pareto-chart svg"),
    key: box("#pareto-key"), height: document.documentElement.scrollHeight, width: document.documentElement.scrollWidth,
    viewport: [window.innerWidth, window.innerHeight], keys: keys
  }));
})();"""


def first_screen(page: Path, tmp_path: Path) -> dict:
    probe = with_probe(page.read_text(encoding="utf-8"), FIRST_SCREEN, tmp_path / "first.html")
    dom, console = dump_dom(probe, tmp_path / "profile", VIEWPORT)
    assert console == []
    [found] = [attrs["data-first-screen"] for tag, attrs in dom.elements if tag == "body" and "data-first-screen" in attrs]
    return json.loads(found)


def inside(box: list[float] | None, width: int, height: int) -> bool:
    return box is not None and box[0] >= 0 and box[1] >= 0 and box[2] <= width and box[3] <= height


@pytest.fixture(params=["small", "shared"])
def report(request: pytest.FixtureRequest) -> Path:
    """The small bundled run (a 64k simulated window) and 50 shared real Claude Code sessions."""
    run: SharedRun = request.getfixturevalue("small_run" if request.param == "small" else "shared_claude_run")
    return run.folder / "report.html"


def test_the_first_screen_holds_the_verdict_its_window_the_cost_and_the_plot(report: Path, tmp_path: Path) -> None:
    width, height = VIEWPORT
    found = first_screen(report, tmp_path)
    # The page is laid out 1400 wide; the boxes are measured from the top of the page (nothing scrolled), so they
    # are what a 900-high window shows (headless Chromium's window keeps some of its --window-size for itself).
    assert found["viewport"][0] == width
    for part in ("verdict", "window", "cost", "plot"):
        assert inside(found[part], width, height), (part, found)
    # The plot at its own size (its text is not scaled down), beside the verdict.
    left, top, right, bottom = found["plot"]
    assert right - left >= 600 and bottom - top >= 350 and top < 300
    assert found["width"] <= width  # nothing pushes the page wider than the window
    # Long session names and paths wrap or are cut: the trust tables' figures stay in view (before: the
    # re-acquisition table was 3,896 px wide on the shared sessions).
    assert [t for t in found["wide"] if t.startswith("trust-")] == []
    # Before (main 074608a): 55,106 px on the bundled data, 189,418 px on the shared sessions.
    assert found["height"] < 20_000, found["height"]
    page = report.read_text(encoding="utf-8")
    window = html.unescape(re.search(r'id="verdict-window">(.*?)</p>', page, re.S).group(1))
    simulated = json.loads((report.parent / "config.json").read_text())["window"]
    said = (
        f"a simulated {simulated:,}-token window for every model (a stress test), not the models' own"
        if simulated
        else "each model's real window"
    )
    assert said in window
    # Every marker (each has its tooltip) is in the key beside the plot, and the key starts on the first screen.
    plot = re.search(r'<figure id="pareto-chart">(.*?)</figure>', page, re.S).group(1)
    assert len(found["keys"]) == plot.count("<title>") >= 3
    assert found["key"][1] < height


def test_the_screenshot_shows_the_plot_where_the_probe_found_it(report: Path, tmp_path: Path) -> None:
    width, height = VIEWPORT
    (tmp_path / "probe").mkdir()
    left, top, right, bottom = (round(v) for v in first_screen(report, tmp_path / "probe")["plot"])
    shot = tmp_path / "shot.png"
    chromium([f"--screenshot={shot}", f"--window-size={width},{height}", report.resolve().as_uri()], tmp_path / "profile")
    shot_width, shot_height, pixels = decode_png(shot.read_bytes())
    assert (shot_width, shot_height) == VIEWPORT
    # Inside the plot's box: axes, grid, coloured markers and their numbers, not one blank colour.
    colours = set()
    for y in range(top, bottom, 3):
        row = y * width * 3
        colours.update(bytes(pixels[row + 3 * x : row + 3 * x + 3]) for x in range(left, right, 3))
    assert len(colours) > 40, len(colours)
