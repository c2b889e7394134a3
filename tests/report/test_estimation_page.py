"""The estimation report page, rendered from real bundled sessions."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest

from compactlab.report.estimation_section import estimation_context, render_estimation_page, write_estimation_report
from compactlab.sessions.loading import load_inputs
from compactlab.tokens.estimation import EstimationResult, run_estimation, summarize

PAYLOAD = "<script>alert(1)</script>"
# HTML elements that never have a closing tag.
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


@pytest.fixture(scope="module")
def estimated() -> tuple[EstimationResult, pd.DataFrame]:
    # One Claude Code and one mini-swe-agent (DeepSeek) dataset: two families, both with a calibration line.
    result = run_estimation(load_inputs(["m-claude", "mini-swe-agent-pr816"]).sessions)
    return result, summarize(result.calls)


@pytest.fixture(scope="module")
def page(estimated: tuple[EstimationResult, pd.DataFrame]) -> str:
    return render_estimation_page(*estimated)


class TagBalance(HTMLParser):
    """Checks that every opened element is closed in order (html.parser itself never raises)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.problems: list[str] = []
        self.tables: list[list[list[str]]] = []  # tables → rows → cell texts
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self.tables.append([])
        elif tag == "tr" and self.tables:
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []
        if tag not in VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self.tables and self.tables[-1]:
            self.tables[-1][-1].append("".join(self._cell).strip())
            self._cell = None
        if not self.stack or self.stack[-1] != tag:
            self.problems.append(f"</{tag}> closes {self.stack[-1] if self.stack else 'nothing'}")
            return
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def parse(page: str) -> TagBalance:
    parser = TagBalance()
    parser.feed(page)
    parser.close()
    return parser


def test_page_is_well_formed(page: str) -> None:
    parsed = parse(page)
    assert parsed.problems == []
    assert parsed.stack == []
    assert page.startswith("<!doctype html>")
    assert '<meta charset="utf-8">' in page
    assert page.count('<section id="estimation">') == 1
    ids = re.findall(r'\sid="([^"]+)"', page)
    assert len(ids) == len(set(ids)), "several inlined charts must not repeat element ids"


def test_one_svg_per_promised_chart(estimated: tuple[EstimationResult, pd.DataFrame], page: str) -> None:
    context = estimation_context(*estimated)
    assert [c["id"] for c in context["charts"]] == ["estimation-error-distribution", "estimation-scatter"]
    assert page.count("<svg") == len(context["charts"])
    assert "<?xml" not in page and "<!DOCTYPE svg" not in page


def test_every_summary_row_is_in_the_table(estimated: tuple[EstimationResult, pd.DataFrame], page: str) -> None:
    _, summary = estimated
    assert {"claude", "deepseek"} <= set(summary["family"])
    table = next(t for t in parse(page).tables if t and t[0][:2] == ["Estimator", "Family"])
    shown = {(row[0], row[1]): row for row in table[1:]}
    assert len(shown) == len(table) - 1 == len(summary)
    for record in summary.itertuples():
        row = shown[(record.estimator, record.family)]
        assert row[2] == f"{record.calls:,}"


def test_metric_headers_explain_themselves(page: str) -> None:
    headers = re.findall(r"<th scope=\"col\" title=\"([^\"]+)\"[^>]*>([^<]+)</th>", page)
    assert {label for _, label in headers} >= {"Bias%", "MAPE%", "Late @80%", "Early @80%"}
    assert all(len(title) > 20 for title, _ in headers)


def test_no_network_resources(page: str) -> None:
    assert not re.search(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", page, re.IGNORECASE)
    assert "<link" not in page and "@import" not in page


def test_data_is_escaped(estimated: tuple[EstimationResult, pd.DataFrame]) -> None:
    result, _ = estimated
    calls = result.calls.copy()
    first = calls["session"].iloc[0]
    calls["session"] = calls["session"].replace({first: f"{first}{PAYLOAD}"})
    calls["model"] = calls["model"].where(calls["family"] != "deepseek", f"deepseek-{PAYLOAD}")
    hostile = EstimationResult(calls=calls, fits=result.fits, sessions_without_calls=0, damaged_sessions=(PAYLOAD,))
    page = render_estimation_page(hostile, summarize(calls))
    assert PAYLOAD not in page
    assert "alert(1)" in page  # still shown, as text: in the tables, and in the chart legend
    assert page.count("&lt;script&gt;alert(1)&lt;/script&gt;") >= 3
    assert re.search(r"<text[^>]*>[^<]*&lt;script&gt;alert\(1\)", page), "the chart legend escapes it too"
    assert parse(page).problems == []


def test_rendering_is_deterministic(estimated: tuple[EstimationResult, pd.DataFrame], page: str, tmp_path: Path) -> None:
    written = write_estimation_report(*estimated, tmp_path / "out" / "estimation.html")
    assert written.read_text(encoding="utf-8") == page
