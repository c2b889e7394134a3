"""The run report and the run diff, checked as HTML: real small runs of bundled sessions."""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
import shutil
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from compactlab.cli.main import main
from compactlab.report.diff import diff_runs, format_diff
from compactlab.report.lazy import inflated
from compactlab.report.run_data import figures_and_recommendation, load_light, load_run
from compactlab.report.run_report import TITLE
from compactlab.report.sessions import SHOWN_SESSIONS, select_sessions
from compactlab.results.catalogue import metric as metric_named
from compactlab.runs.run_format import FORMAT
from tests.conftest import VERDICT, SharedRun
from tests.report.test_estimation_page import parse
from tests.report_runs import END, HOSTILE, IMG, SCRIPT, hostile_run

REAL_COMPACTION = "3af9b1a7-6512-4883-ad18-320658ced099"


@pytest.fixture(scope="module")
def run_dir(small_run: SharedRun) -> Path:
    return small_run.folder


@pytest.fixture(scope="module")
def page(run_dir: Path) -> str:
    return (run_dir / "report.html").read_text(encoding="utf-8")


class Elements(HTMLParser):
    """Every element with its attributes, and the page's text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag, attrs) -> None:
        self.elements.append((tag, dict(attrs)))
        self._in_script = tag == "script"

    def handle_endtag(self, tag) -> None:
        self._in_script = False

    def handle_data(self, data) -> None:
        (self.scripts if self._in_script else self.text).append(data)


def elements(page: str) -> Elements:
    parser = Elements()
    parser.feed(page)
    parser.close()
    return parser


def test_run_writes_one_well_formed_standalone_report(run_dir: Path, page: str) -> None:
    parsed = parse(page)
    assert parsed.problems == [] and parsed.stack == []
    assert page.startswith("<!doctype html>") and f"<title>{TITLE}</title>" in page
    for section in ("overview", "estimation", "sessions", "real-compactions", "metadata"):
        assert page.count(f'<section id="{section}">') == 1
    ids = re.findall(r'\sid="([^"]+)"', page)
    assert len(ids) == len(set(ids))
    assert len(page) < 1_500_000


def test_nothing_from_the_network_and_only_the_sort_script(page: str) -> None:
    found = elements(page)
    tags = [tag for tag, _ in found.elements]
    assert tags.count("script") == 1
    assert not {"iframe", "object", "embed", "link", "img", "form", "base"} & set(tags)
    for tag, attrs in found.elements:
        assert not [a for a in attrs if a.startswith("on")], f"event handler on <{tag}>"
        for name in ("src", "href", "xlink:href", "action"):
            value = attrs.get(name)
            assert value is None or value.startswith(("#", "data:image/png;base64,")), f"<{tag} {name}={value!r}>"
    assert "@import" not in page and "url(http" not in page


def test_content_security_policy_allows_exactly_the_inline_script(page: str) -> None:
    policy = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', page).group(1)
    policy = policy.replace("&#39;", "'")
    [script] = elements(page).scripts
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in policy
    assert "default-src 'none'" in policy and "unsafe-eval" not in policy and "http" not in policy


def test_overview_answers_which_strategy_and_what_it_costs(run_dir: Path, page: str) -> None:
    run = load_run(run_dir)
    figures, choice = figures_and_recommendation(run)
    # prune lets calls exceed the 64k window in the session it cannot shrink: not recommendable.
    assert choice.setting in {"summarize", "pi"} and "over the context window" in choice.not_recommendable["prune"]
    headline = re.search(r'<div class="headline">(.*?)</div>', page, re.S).group(1)
    assert re.search(VERDICT + re.escape(f"{choice.setting}</strong>"), headline)
    # The rule, stated in full, right under the first screen.
    more = re.search(r'<div class="verdict-more" id="verdict-why">(.*?)</div>', page, re.S).group(1)
    assert choice.rule.text in html.unescape(more)
    row = figures.set_index("setting").loc[choice.setting]
    assert (
        f"{100 * row['removed_share_mean']:.1f}%" in headline
        and f"{100 * row['preservation_or_untouched_mean']:.1f}%" in headline
    )
    assert "per session" in headline and "$" in headline
    # The leaderboard: one row per ranked strategy ('recorded' is the production agent's, not a choice).
    table = re.search(r'<table class="sortable" id="leaderboard-table">(.*?)</table>', page, re.S).group(1)
    assert table.count("<tr") == 1 + 3
    assert "recorded" not in re.sub(r"<[^>]+>", "", table)
    assert 'id="versus-table"' in page and "Holm" in page and "Open loop" in page
    assert page.count('<figure id="pareto-chart">') == 1


def test_untouched_sessions_count_as_kept_in_the_recommendation(run_dir: Path) -> None:
    run = load_run(run_dir)
    figures, _ = figures_and_recommendation(run)
    figures = figures.set_index("setting")
    frame = run.sessions[~run.sessions["damaged"] & (run.sessions["setting"] == "summarize")]
    expected = frame["preservation_k1"].where(frame["compactions"] > 0, 1.0).mean()
    assert frame["compactions"].eq(0).any() and expected > frame["preservation_k1"].mean()
    assert figures.loc["summarize", "preservation_or_untouched_mean"] == pytest.approx(expected)
    assert "recorded" not in figures.index


def test_the_report_renders_from_the_run_directory_alone(run_dir: Path, page: str, tmp_path: Path, monkeypatch) -> None:
    """No session is read again: with the datasets gone (and any read of one failing) the report
    is the same page, its estimation and trust figures read from what the run wrote."""
    import compactlab.sessions.loading as loading

    def no_reading(*args, **kwargs):
        raise AssertionError("the report read a session")

    monkeypatch.setattr(loading, "read_files", no_reading)
    monkeypatch.setattr(loading, "load_inputs", no_reading)
    copy = tmp_path / "moved"
    shutil.copytree(run_dir, copy)
    assert main(["report", str(copy), "--out", str(tmp_path / "again.html")]) == 0
    again = (tmp_path / "again.html").read_text(encoding="utf-8")
    assert again.replace(str(copy), str(run_dir)) == page
    assert (copy / "session_facts.json").exists() and (copy / "estimation" / "calls.parquet").exists()
    section = page[page.index('<section id="trust">') : page.index('<section id="sessions">')]
    assert "did not measure" not in section and "Not measured" not in page


def test_a_run_directory_without_its_summary_is_refused(run_dir: Path, tmp_path: Path) -> None:
    copy = tmp_path / "cut"
    shutil.copytree(run_dir, copy)
    (copy / "summary.json").unlink()  # as a run cut off before its end leaves it
    with pytest.raises(FileNotFoundError, match=r"summary\.json"):
        load_run(copy)


def test_every_session_shown_has_its_saw_tooth_and_drill_down(run_dir: Path, page: str) -> None:
    run = load_run(run_dir)
    shown = select_sessions(run)
    assert REAL_COMPACTION in shown and len(shown) <= SHOWN_SESSIONS + 2
    folded = page[page.index('<section id="sessions">') : page.index('<section id="real-compactions">')]
    # Each session is one line until opened: no chart and no compaction in the page as it loads.
    assert folded.count('<details id="t-') == len(shown) and "<svg" not in folded
    opened = inflated(page)
    section = opened[opened.index('<section id="sessions">') : opened.index('<section id="real-compactions">')]
    assert section.count("<svg") == len(shown)
    compacted = sum(
        1
        for r in run.compaction_rows
        if r["session"] in shown and not r["failed"] and not (r["note"].startswith("nothing") and not r["messages_removed"])
    )
    assert section.count('<details class="compaction">') == compacted
    assert '<pre class="text">' in section and "lost:" not in section  # lost/kept labels come from CSS, not text
    assert "production compaction" in section


def test_the_report_reads_the_compaction_rows_of_the_sessions_it_shows(run_dir: Path) -> None:
    run = load_run(run_dir)
    shown = select_sessions(run, count=1)  # (the small run's few sessions are all shown at the usual count)
    everything = run.compaction_rows
    assert {r["session"] for r in everything} - set(shown), "a session with compaction rows is not shown"
    chosen = replace(run, rows_of=tuple(shown)).compaction_rows
    assert chosen == tuple(r for r in everything if r["session"] in shown)  # the same rows, in commit order
    recorded = {r["session"] for r in everything if run.strategy_of(r["setting"]) == "recorded" and not r["failed"]}
    assert recorded and recorded <= set(shown)  # every session with a real compaction is shown (from sessions.csv)


def test_real_compaction_side_by_side(run_dir: Path, page: str) -> None:
    page = inflated(page)
    section = page[page.index('<section id="real-compactions">') : page.index('<section id="metadata">')]
    assert f"<code>{REAL_COMPACTION}</code>, call 103" in section
    assert "This session is being continued from a previous conversation" in section  # the production summary
    # What the replay rebuilt after the production summary, and what its prediction cannot know.
    assert (
        "The replay's compacted context: the production agent's summary; re-attached 4 file(s), 1 over the "
        "5,000-token file limit left out, the todo list (8 items)." in html.unescape(section)
    )
    assert "where the\nremaining error comes from" in section
    # Each other strategy's nearest compaction says how far from the production one it is, and that agrees with its call.
    whens = re.findall(r"(?:(\d+) calls (before|after) the production compaction|at the same call) \(call (\d+),", section)
    assert len(whens) == section.count('<div class="card">') >= 1
    for calls, side, call in whens:
        assert int(call) - 103 == (0 if not calls else int(calls) if side == "after" else -int(calls))
    # The condenser log has no LLM calls: not replayed, its production summaries listed.
    assert "could not be replayed" in section and "astropy__astropy-12907" in section


def test_metadata_says_what_was_left_out(page: str) -> None:
    section = page[page.index('<section id="metadata">') :]
    assert "2 sessions have no recorded LLM calls" in section
    assert "damaged records skipped" in section and REAL_COMPACTION in section
    assert "compactlab 0.1.0" in section and "Content-Security-Policy" not in section


def test_hostile_session_text_is_shown_as_text(tmp_path: Path) -> None:
    page = (hostile_run(tmp_path) / "report.html").read_text(encoding="utf-8")
    for payload in (SCRIPT, IMG):
        assert payload not in page
    assert page.count("</html>") == 1 and page.rstrip().endswith("</html>")
    page = inflated(page)  # what the blocks hold once opened: text too
    for payload in (SCRIPT, IMG):
        assert payload not in page
    found = elements(page)
    text = "".join(found.text)
    assert SCRIPT in text and IMG in text and END in text
    assert f"Production summary. {HOSTILE}" in text
    assert [tag for tag, _ in found.elements].count("script") == 1
    assert not [t for t, attrs in found.elements if attrs.get("src") == "x" or any(a.startswith("on") for a in attrs)]
    assert parse(page).problems == []


def test_report_command_rebuilds_the_same_page(run_dir: Path, page: str, tmp_path: Path, capsys) -> None:
    out = tmp_path / "again.html"
    assert main(["report", str(run_dir), "--out", str(out)]) == 0
    assert capsys.readouterr().out.strip() == str(out)
    assert out.read_text(encoding="utf-8") == page
    assert main(["report", str(tmp_path / "nothing")]) == 2


def test_diff_of_a_run_with_itself_changes_nothing(run_dir: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "diff.html"
    assert main(["diff", str(run_dir), str(run_dir), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "no session changed beyond the tolerances" in text and f"wrote {out}" in text
    diff = diff_runs(run_dir, run_dir, resamples=200)
    assert set(diff.metrics["verdict"]) <= {"same", "n/a"}
    assert (diff.metrics["change"].dropna() == 0).all()
    html = out.read_text(encoding="utf-8")
    assert parse(html).problems == [] and html.count("<script") == 1


def test_diff_names_what_got_better_and_worse(run_dir: Path, tmp_path: Path) -> None:
    changed = tmp_path / "b"
    changed.mkdir()
    for name in ("config.json", "summary.json", "meta.json"):
        shutil.copy(run_dir / name, changed / name)
    assert json.loads((changed / "meta.json").read_text())["format"] == FORMAT
    frame = load_light(run_dir).sessions
    ranked = frame[~frame["damaged"]]
    target = ranked[ranked["setting"] == "summarize"]["session"].iloc[0]
    rows = (frame["setting"] == "summarize") & (frame["session"] == target)
    # (the measured columns: the derived ones, tokens removed and the cost change, are computed from them on reading)
    frame.loc[rows, "billed_context"] -= (0.2 * frame.loc[rows, "billed_full"]).round().astype(int)
    frame.loc[frame["setting"] == "pi", "cost_context"] += 1.0
    frame.drop(columns=["damaged"]).to_csv(changed / "sessions.csv.gz", index=False)  # as the reference run keeps it
    diff = diff_runs(run_dir, changed, resamples=200)
    per = diff.sessions.set_index(["label", "metric"])
    assert per.loc[("summarize", "tokens removed"), "session"] == target
    assert per.loc[("summarize", "tokens removed"), "verdict"] == "better"
    assert set(per.loc[("pi", "cost change per session ($)"), "verdict"]) == {"worse"}
    metrics = diff.metrics.set_index(["label", "metric"])
    assert metrics.loc[("pi", "cost change per session ($)"), "change"] == pytest.approx(1.0)
    assert metrics.loc[("pi", "cost change per session ($)"), "verdict"] == "worse"
    text = format_diff(diff)
    assert "better summarize" in re.sub(r"\s+", " ", text) and "worse" in text
    assert isinstance(diff.metrics, pd.DataFrame)


def test_diff_shows_a_and_b_over_the_pairs_its_change_is_over(tmp_path: Path) -> None:
    # A session where only one run has the figure (here: B no longer has summarize's facts kept where it
    # compacted) must be in neither mean, or A and B disagree with B − A (it read 30.2% → 33.1%, "−0.4 pp").
    reference = Path(__file__).resolve().parents[2] / "reports" / "reference"
    changed = tmp_path / "b"
    shutil.copytree(reference, changed)
    frame = load_light(reference).sessions
    known = frame[~frame["damaged"] & (frame["setting"] == "summarize") & frame["preservation_k1"].notna()]
    assert len(known) >= 10
    dropped, moved = known["session"].iloc[0], known["session"].iloc[1]
    frame.loc[(frame["setting"] == "summarize") & (frame["session"] == dropped), "preservation_k1"] = np.nan
    frame.loc[(frame["setting"] == "summarize") & (frame["session"] == moved), "preservation_k1"] -= 0.5
    frame.drop(columns=["damaged"]).to_csv(changed / "sessions.csv.gz", index=False)
    diff = diff_runs(reference, changed, resamples=200)
    for row in diff.metrics.dropna(subset=["a", "b", "change"]).itertuples():
        assert row.b - row.a == pytest.approx(row.change, abs=1e-9), (row.label, row.metric)
    row = diff.metrics.set_index(["label", "metric"]).loc[("summarize", metric_named("preservation_k1").label)]
    assert row["n"] == len(known) - 1 and row["change"] == pytest.approx(-0.5 / (len(known) - 1))


def test_strategy_labels_in_charts_are_escaped(run_dir: Path) -> None:
    from compactlab.report.run_charts import colours_for, pareto_chart
    from compactlab.report.sawtooth import sawtooth_chart

    run = load_run(run_dir)
    hostile = {label: f"{label}{SCRIPT}" for label in run.labels}
    figures, choice = figures_and_recommendation(run)
    figures = figures.assign(setting=lambda f: f["setting"].map(hostile))
    choice = replace(
        choice,
        setting=hostile[choice.setting],
        frontier=tuple(map(hostile.get, choice.frontier)),
        not_recommendable={hostile[k]: v for k, v in choice.not_recommendable.items()},
    )
    colours = colours_for(hostile.values())
    svg, _ = pareto_chart(figures, choice, colours)
    calls = run.calls[run.calls["session"] == REAL_COMPACTION].assign(setting=lambda f: f["setting"].map(hostile))
    saw, _ = sawtooth_chart(calls, colours, [103])
    for chart in (svg, saw):
        assert "<script" not in chart and "&lt;script&gt;document.title=" in chart
        assert parse(chart).problems == []


def test_each_real_compaction_shows_its_real_and_modelled_cost(run_dir: Path, page: str) -> None:
    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    [cost] = [r for r in summary["real_costs"]["rows"] if r["session"] == REAL_COMPACTION]
    assert cost["call"] == 103 and cost["summarizer_real"] is None and cost["compared"] == "first call"
    opened = html.unescape(inflated(page))
    section = opened[opened.index('<section id="real-compactions">') : opened.index('<section id="metadata">')]
    # Per part, real beside modelled: Claude Code records no summarizer usage, the recorded strategy models none.
    assert "<tr><td>the summarizer call</td><td>not recorded</td><td>not modelled</td></tr>" in section
    real, modelled = f"${cost['first_call_real']:,.4f}", f"${cost['first_call_modelled']:,.4f}"
    assert f"</td><td>{real}</td><td>{modelled}</td></tr>" in section
    tokens = f"real: {cost['real_cache_read']:,} read, {cost['real_cache_write']:,} written, {cost['real_input']:,} uncached"
    assert tokens in section and f"modelled: {cost['modelled_cache_read']:,} read, {cost['modelled_new']:,} new" in section
    difference = 100 * cost["relative_difference"]
    assert f"{real} real, {modelled} modelled ({'+' if difference >= 0 else '−'}{abs(difference):.1f}%)" in section
