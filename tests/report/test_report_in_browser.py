"""The run report opened in a real browser: headless Chromium (Debian's `chromium` package).

No browser is downloaded at test time: `.ci/run` installs the package. Locally the tests skip
when /usr/bin/chromium is absent; in CI (CI=true) they fail instead, so they cannot silently vanish.

What is checked, with Chromium's own output only (`--dump-dom` prints the DOM after scripts ran,
`--enable-logging=stderr` prints every console message as a CONSOLE line):
- the page loads with no console message at all (errors, CSP violations, anything);
- the sort script ran (it marks sortable tables "ready"), so the Content-Security-Policy lets it;
- every chart renders with a non-zero size (a probe copy of the page adds a measuring script,
  allowed by its own hash, that opens every block, waits for the closed ones to be inflated, and
  writes each SVG's size into the DOM);
- the first screen (1400 × 900, a laptop's browser window) holds the verdict, the window it is at,
  what the cost covers and the whole Pareto plot with its key (their boxes, measured by the probe;
  and the screenshot's pixels where the plot is are a chart, not blank);
- a screenshot is not blank (PNG decoded with zlib, pixel spread checked);
- hostile session text shows as text and runs nothing.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import struct
import subprocess
import zlib
from html.parser import HTMLParser
from pathlib import Path

import pytest

from compactlab.report.lazy import inflated
from compactlab.report.run_report import TITLE
from tests.conftest import SharedRun
from tests.report_runs import END, IMG, SCRIPT, hostile_run

CHROMIUM = Path("/usr/bin/chromium")
TIMEOUT = 120  # seconds per browser run

if not CHROMIUM.exists():
    if os.environ.get("CI", "").lower() == "true":
        raise RuntimeError(f"{CHROMIUM} is missing in CI: .ci/run installs Debian's chromium package before the tests")
    pytest.skip(f"{CHROMIUM} not installed (apt-get install chromium); the browser tests need it", allow_module_level=True)


def chromium(args: list[str], profile: Path) -> subprocess.CompletedProcess:
    command = [
        str(CHROMIUM),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--no-default-browser-check",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
        "--enable-logging=stderr",
        "--v=0",
        *args,
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def console_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


class Dom(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.title: list[str] = []
        self._open: list[str] = []

    def handle_starttag(self, tag, attrs) -> None:
        self.elements.append((tag, dict(attrs)))
        self._open.append(tag)

    def handle_endtag(self, tag) -> None:
        if tag in self._open:
            while self._open.pop() != tag:
                pass

    def handle_data(self, data) -> None:
        if "title" in self._open and "svg" not in self._open:
            self.title.append(data)
        elif "script" not in self._open and "style" not in self._open:
            self.text.append(data)


def dump_dom(page: Path, profile: Path, window: tuple[int, int] | None = None) -> tuple[Dom, list[str]]:
    """The DOM after the page's scripts ran (`window`: the browser window's size, else Chromium's default)."""
    size = [f"--window-size={window[0]},{window[1]}"] if window else []
    done = chromium(["--virtual-time-budget=5000", *size, "--dump-dom", page.resolve().as_uri()], profile)
    dom = Dom()
    dom.feed(done.stdout)
    dom.close()
    return dom, console_lines(done.stderr)


@pytest.fixture(scope="module")
def report(small_run: SharedRun) -> Path:
    return small_run.folder / "report.html"


def test_loads_without_console_messages_and_sorting_works(report: Path, tmp_path: Path) -> None:
    dom, console = dump_dom(report, tmp_path / "profile")
    assert console == []
    assert "".join(dom.title) == TITLE
    sortable = [attrs for tag, attrs in dom.elements if tag == "table" and "sortable" in (attrs.get("class") or "")]
    assert sortable and all("ready" in attrs["class"].split() for attrs in sortable), "the sort script did not run"


# Opens every <details>, waits until the closed blocks are inflated (compactlab.report.lazy), then measures.
OPEN_ALL = """function openAll(then) {
  document.querySelectorAll("details").forEach(function (d) { d.open = true; });
  (function wait() {
    if (document.querySelector("details.lazy:not([data-loaded])")) { setTimeout(wait, 20); return; }
    if (document.querySelector("details:not([open])")) { openAll(then); return; }  // blocks inside blocks
    then();
  })();
}
"""
PROBE = (
    "(function () {"
    + OPEN_ALL
    + """openAll(function () {
  document.querySelectorAll("svg").forEach(function (svg) {
    var box = svg.getBoundingClientRect();
    svg.setAttribute("data-probe-size", Math.round(box.width) + "x" + Math.round(box.height));
  });
  document.body.setAttribute("data-probe", "done");
});
})();"""
)


def with_probe(page: str, script: str, copy: Path) -> Path:
    """A copy of the page running `script` too, allowed by its own hash."""
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    probe = page.replace("script-src &#39;sha256-", f"script-src &#39;sha256-{digest}&#39; &#39;sha256-", 1)
    copy.write_text(probe.replace("</body>", f"<script>{script}</script>\n</body>", 1), encoding="utf-8")
    return copy


def test_every_chart_renders_with_a_size(report: Path, tmp_path: Path) -> None:
    page = report.read_text(encoding="utf-8")
    charts = inflated(page).count("<svg")  # most of them in closed blocks
    assert charts >= 5  # Pareto, estimation error and scatter, a saw-tooth per session shown
    # The policy allows the probe by its own hash (quotes are &#39; inside the attribute), and nothing else.
    assert page.count("script-src &#39;sha256-") == 1
    dom, console = dump_dom(with_probe(page, PROBE, tmp_path / "probe.html"), tmp_path / "profile")
    assert console == []
    assert any(tag == "body" and attrs.get("data-probe") == "done" for tag, attrs in dom.elements), "the probe did not run"
    sizes = [attrs.get("data-probe-size") for tag, attrs in dom.elements if tag == "svg"]
    assert len(sizes) == charts
    for size in sizes:
        width, height = map(int, size.split("x"))
        assert width > 200 and height > 100, sizes


def test_screenshot_is_not_blank(report: Path, tmp_path: Path) -> None:
    shot = tmp_path / "shot.png"
    chromium([f"--screenshot={shot}", "--window-size=1280,1600", report.resolve().as_uri()], tmp_path / "profile")
    width, height, pixels = decode_png(shot.read_bytes())
    assert (width, height) == (1280, 1600)
    # A blank page is one colour; the report has text, tables and a headline box.
    values = bytes(pixels)
    assert len(set(values[i : i + 3] for i in range(0, len(values), 3 * 97))) > 20
    dark = sum(1 for i in range(0, len(values), 3 * 11) if sum(values[i : i + 3]) < 300)
    assert dark > 500, "almost no dark (text) pixels"


def decode_png(data: bytes) -> tuple[int, int, bytearray]:
    """8-bit RGB or RGBA PNG to RGB bytes (stdlib only: chunks, zlib, the five scanline filters)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    position, chunks, header = 8, [], None
    while position < len(data):
        length, kind = struct.unpack(">I4s", data[position : position + 8])
        body = data[position + 8 : position + 8 + length]
        position += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            chunks.append(body)
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and colour in (2, 6) and interlace == 0, header
    channels = 3 if colour == 2 else 4
    stride = width * channels
    raw = zlib.decompress(b"".join(chunks))
    previous = bytearray(stride)
    rgb = bytearray()
    for row in range(height):
        start = row * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        if kind == 1:
            for i in range(channels, stride):
                line[i] = (line[i] + line[i - channels]) & 0xFF
        elif kind == 2:
            line = bytearray((a + b) & 0xFF for a, b in zip(line, previous))
        elif kind == 3:
            for i in range(stride):
                left = line[i - channels] if i >= channels else 0
                line[i] = (line[i] + ((left + previous[i]) >> 1)) & 0xFF
        elif kind == 4:
            for i in range(stride):
                a = line[i - channels] if i >= channels else 0
                b, c = previous[i], previous[i - channels] if i >= channels else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        previous = line
        if channels == 3:
            rgb += line
        else:
            for i in range(0, stride, 4):
                rgb += line[i : i + 3]
    return width, height, rgb


OPENED = "(function () {" + OPEN_ALL + 'openAll(function () { document.body.setAttribute("data-opened", "done"); });\n})();'


def test_the_cost_section_shows_each_settings_bill_split_and_its_cache_figures(small_run: SharedRun, tmp_path: Path) -> None:
    """The split and the cache figures as the browser shows them, each figure the run's summary.json holds."""
    dom, console = dump_dom(small_run.folder / "report.html", tmp_path / "profile")
    assert console == []
    ids = {attrs.get("id") for tag, attrs in dom.elements}
    assert {"costs", "cost-split", "cache-telemetry"} <= ids
    text = " ".join(" ".join(dom.text).split())
    costs = json.loads((small_run.folder / "summary.json").read_text(encoding="utf-8"))["costs"]
    assert costs["settings"], "no setting in the cost split"
    for entry in costs["settings"]:
        with_, change = entry["total"]["with"], entry["total"]["change"]
        assert f"{with_:,.4f} ({change:+,.4f})" in text, entry["setting"]
        written = entry["cache"]["cache_write_tokens"]
        assert f"{written:,.0f}" in text, entry["setting"]
        for part in ("cache_read", "cache_write"):
            assert f"{entry['parts'][part]['with']:,.4f} ({entry['parts'][part]['change']:+,.4f})" in text
    assert "cache's lifetime" in text


def test_hostile_session_runs_nothing(tmp_path: Path) -> None:
    report = hostile_run(tmp_path / "hostile") / "report.html"
    # Every block opened and inflated: the hostile text they hold is shown as text and runs nothing either.
    page = with_probe(report.read_text(encoding="utf-8"), OPENED, tmp_path / "opened.html")
    dom, console = dump_dom(page, tmp_path / "profile")
    assert any(tag == "body" and attrs.get("data-opened") == "done" for tag, attrs in dom.elements), "the blocks did not open"
    assert "".join(dom.title) == TITLE, "a script from the session changed the title"
    assert console == [], console
    assert not [attrs for tag, attrs in dom.elements if tag == "img" or attrs.get("src") == "x"]
    assert not [(tag, attrs) for tag, attrs in dom.elements if any(name.startswith("on") for name in attrs)]
    assert [tag for tag, _ in dom.elements].count("script") == 2  # the page's, and the probe's that opened the blocks
    text = "".join(dom.text)
    for payload in (SCRIPT, IMG, END):
        assert payload in text
    # Everything after the injected "</html>" still rendered: the last section is there.
    assert any(tag == "section" and attrs.get("id") == "metadata" for tag, attrs in dom.elements)


FILTER_PROBE = """(function () {
  var box = document.querySelector("input.table-filter");
  var table = document.getElementById(box.getAttribute("aria-controls"));
  var first = table.tBodies[0].rows[0].cells[0].textContent.trim().split(" ")[0];
  box.value = first;
  box.dispatchEvent(new Event("input"));
  var shown = Array.prototype.filter.call(table.tBodies[0].rows, function (r) { return !r.hidden; }).length;
  document.body.setAttribute("data-filter", box.className + "|" + shown + "|" + table.tBodies[0].rows.length);
})();"""


def test_a_table_filter_box_hides_the_rows_without_the_typed_words(report: Path, tmp_path: Path) -> None:
    page = report.read_text(encoding="utf-8")
    dom, console = dump_dom(with_probe(page, FILTER_PROBE, tmp_path / "filter.html"), tmp_path / "profile")
    assert console == []
    [result] = [attrs["data-filter"] for tag, attrs in dom.elements if tag == "body" and "data-filter" in attrs]
    name, shown, total = result.split("|")
    assert name == "table-filter" and 1 <= int(shown) < int(total)


def test_the_real_compactions_show_their_real_and_modelled_cost(report: Path, tmp_path: Path) -> None:
    summary = json.loads((report.parent / "summary.json").read_text(encoding="utf-8"))
    rows = [r for r in summary["real_costs"]["rows"] if r["real"] is not None]
    assert rows, "the small run replays a real compaction"
    page = with_probe(report.read_text(encoding="utf-8"), OPENED, tmp_path / "opened.html")
    dom, console = dump_dom(page, tmp_path / "profile")
    assert console == [] and any(tag == "body" and attrs.get("data-opened") == "done" for tag, attrs in dom.elements)
    assert [tag for tag, attrs in dom.elements if tag == "table" and attrs.get("class") == "real-cost"]
    text = " ".join(" ".join(dom.text).split())
    for row in rows:  # what the browser shows: each part's real cost beside the modelled one
        summarizer = "not recorded" if row["summarizer_real"] is None else f"${row['summarizer_real']:,.4f}"
        assert f"the summarizer call {summarizer} not modelled" in text
        assert f"${row['first_call_real']:,.4f} ${row['first_call_modelled']:,.4f}" in text
