"""One run, every surface: the CLI table, summary.json, the report, `compactlab diff` and the CI gate
show each figure from one computation (`compactlab.results.leaderboard.setting_figures`) under one label
(`compactlab.results.catalogue`), and the recommendation of the one rule (`compactlab.results.recommendation`).

Real sessions: two bundled Claude Code files (one that compacts at the 64k window, one that never
reaches it, neither damaged, so every surface averages over the same sessions), four strategies, two
of them identical by construction (summarize and iterative-merge on the extractive stand-in): the CLI
table and the report show them as one row naming both, summary.json, diff and the gate each label.
"""

from __future__ import annotations

import contextlib
import html
import io
import json
import math
import re

import pandas as pd
import pytest

from compactlab.cli.main import main
from compactlab.report.diff import diff_runs, format_diff
from compactlab.report.run_data import load_light
from compactlab.results.catalogue import REPORTED, metric
from compactlab.results.leaderboard import setting_figures
from compactlab.results.recommendation import Rule
from tests.conftest import VERDICT, bundled

FILES = (("claude-code-log", "-Users-dain-workspace-claude-code-log-sample__37f83ec9"), ("m-claude", "97b0ffde"))
STRATEGIES = ("summarize", "pi", "prune", "iterative-merge")
SAME = {"summarize", "iterative-merge"}  # one result by construction (compactlab.results.same_by_construction)


def _main(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(list(argv))
    return code, out.getvalue()


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict:
    folder = tmp_path_factory.mktemp("agree")
    files = [str(bundled(dataset, stem)) for dataset, stem in FILES]
    code, printed = _main(
        "run", "--dataset", *files, "--strategy", *STRATEGIES, "--window", "64000", "--out", str(folder / "run")
    )
    assert code == 0, printed
    summary = json.loads((folder / "run" / "summary.json").read_text())
    assert not summary["left_out"]["skipped_records"]  # every surface averages over the same sessions
    return {
        "folder": folder,
        "dir": folder / "run",
        "files": files,
        "printed": printed,
        "summary": summary,
        "figures": {row["setting"]: row for row in summary["leaderboard"]},
    }


def figure(row: dict, name: str) -> float:
    value = row[f"{name}_total" if metric(name).aggregate == "sum" else f"{name}_mean"]
    return float("nan") if value is None else value  # summary.json writes an undefined figure as null


def plain(text: str) -> str:
    """A figure as text with the report's typography undone (true minus, dollar sign, word joiner)."""
    return html.unescape(text).replace("−", "-").replace("\u2060", "").replace("$", "").lstrip("+").strip()


def test_summary_json_holds_the_one_computation_and_the_rule(run: dict) -> None:
    summary = run["summary"]
    again = setting_figures(load_light(run["dir"]).sessions).set_index("setting")
    for config, row in run["figures"].items():
        for name in REPORTED:
            assert figure(row, name) == pytest.approx(
                again.loc[config, f"{name}_total" if metric(name).aggregate == "sum" else f"{name}_mean"], nan_ok=True
            )
    recommendation = summary["recommendation"]
    assert recommendation["rule"] == Rule().text and recommendation["reason"]
    assert set(recommendation["not_recommendable"]) | set(recommendation["frontier"]) <= set(run["figures"])
    if recommendation["setting"] is not None:
        best = run["figures"][recommendation["setting"]]
        assert best["over_window_calls_total"] == 0 and recommendation["setting"] in recommendation["frontier"]
        # No recommendable setting is better on both axes of the plot.
        for config, row in run["figures"].items():
            if config not in recommendation["not_recommendable"] and config != recommendation["setting"]:
                assert not (
                    row["removed_share_mean"] >= best["removed_share_mean"]
                    and row["preservation_or_untouched_mean"] >= best["preservation_or_untouched_mean"]
                    and (row["removed_share_mean"], row["preservation_or_untouched_mean"])
                    != (best["removed_share_mean"], best["preservation_or_untouched_mean"])
                )
    for config, why in recommendation["not_recommendable"].items():
        row = run["figures"][config]
        assert ("over the context window" in why) == (row["over_window_calls_total"] > 0)


def test_the_cli_table_shows_the_figures_under_the_catalogue_labels(run: dict) -> None:
    lines = run["printed"].splitlines()
    header = re.split(r"\s{2,}", lines[0].strip())
    assert header == ["setting"] + [metric(name).label for name in REPORTED]
    shown = []
    for line in lines[1 : len(run["figures"])]:  # one line fewer than settings: the two identical ones share a row
        cells = re.split(r"\s{2,}", line.strip())
        labels = cells[0].rstrip(" ★◆✗").split(" = ")
        shown.append(set(labels))
        for config in labels:  # a shared row holds each of its settings' figures
            for name, cell in zip(REPORTED, cells[1:], strict=True):
                assert cell.split(" [")[0] == metric(name).format(figure(run["figures"][config], name)), (config, name)
    assert SAME in shown and set().union(*shown) == set(run["figures"]) and sum(map(len, shown)) == len(run["figures"])
    assert re.search(
        r"^\d+ rows? (names|each name) settings that are one result under several names \(e\.g\. .*\): "
        r"identical by construction: .*update\.j2.* were never rendered.*comparing summary prompts needs an LLM \[summarizer\]",
        run["printed"],
        re.M,
    )
    assert f"rule: {Rule().text}" in run["printed"]


def test_the_report_shows_the_same_figures_labels_and_recommendation(run: dict) -> None:
    page = (run["dir"] / "report.html").read_text(encoding="utf-8")
    table = re.search(r'<table class="sortable" id="leaderboard-table">(.*?)</table>', page, re.S).group(1)
    headers = [html.unescape(h) for h in re.findall(r'<th scope="col"[^>]*>([^<]*)</th>', table)]
    assert headers == ["Strategy"] + [metric(name).label for name in REPORTED]
    rows = re.findall(r'<tr[^>]*data-label="([^"]+)"(?: data-labels="([^"]+)")?>(.*?)</tr>', table, re.S)
    shown = [set(json.loads(html.unescape(labels))) if labels else {label} for label, labels, _ in rows]
    assert SAME in shown and set().union(*shown) == set(run["figures"]) and sum(map(len, shown)) == len(run["figures"])
    for labels, (_, _, body) in zip(shown, rows):
        cells = re.findall(r'<td class="num" data-value="[^"]*">([^<]*)', body)
        for config in labels:  # a shared row holds each of its settings' figures
            for name, cell in zip(REPORTED, cells, strict=True):
                assert plain(cell) == plain(metric(name).format(figure(run["figures"][config], name))), (config, name)
        if len(labels) > 1:
            assert (
                set(re.search(r"<td>([^<]*)", body).group(1).strip().split(" = ")) == labels
                and "identical by construction" in body
            )
    assert "comparing summary prompts needs an LLM [summarizer]" in html.unescape(page)
    # Offline no compaction rendered a prompt: the metadata names the templates without a hash.
    assert "prompt: <code>" not in page and re.search(
        r"Not rendered by any compaction of this run, so no hash is shown:.*summary\.j2", page, re.S
    )
    # The first screen's headline, and the lines right under it (the why and the rule in full).
    headline = html.unescape(
        re.search(r'<div class="headline">(.*?)</div>', page, re.S).group(1)
        + re.search(r'<div class="verdict-more" id="verdict-why">(.*?)</div>', page, re.S).group(1)
    )
    recommendation = run["summary"]["recommendation"]
    assert recommendation["rule"] in headline
    if recommendation["setting"] is None:
        assert "No recommendation:" in headline and recommendation["reason"] in headline
    else:
        best = run["figures"][recommendation["setting"]]
        # "Use X", or the verdict's doubt first ("No clear winner. Best by the rule: X", "Tentatively ...: X").
        assert re.search(VERDICT + re.escape(f"{recommendation['setting']}</strong>"), headline)
        for name in ("removed_share", "preservation_or_untouched", "over_window_share", "preservation_k1"):
            assert (
                f"{metric(name).label} <strong>{metric(name).format(figure(best, name))}" in headline
                or f"{metric(name).label}: {metric(name).format(figure(best, name))}" in headline
            ), name


def test_diff_shows_the_same_figures_under_the_same_labels(run: dict) -> None:
    diff = diff_runs(run["dir"], run["dir"], resamples=200)
    assert set(diff.metrics["metric"]) == {metric(name).label for name in REPORTED}
    text = format_diff(diff)
    assert f"rule: {Rule().text}" in text
    by_label = {metric(name).label: name for name in REPORTED}
    for row in diff.metrics.itertuples():
        name = by_label[row.metric]
        expected = figure(run["figures"][row.label], name)
        assert row.a == pytest.approx(expected, nan_ok=True), (row.label, name)
        shown = metric(name).format(expected).replace("-", "−")
        assert re.search(rf"^{re.escape(row.label)}\s+{re.escape(row.metric)}\s+{re.escape(shown)}\s", text, re.M), (
            row.label,
            name,
        )


def test_the_gate_guards_the_same_figures_under_the_same_labels(run: dict) -> None:
    folder = run["folder"]
    # A metric a strategy of the suite cannot measure on these sessions (e.g. facts kept by one that never
    # compacted) guards nothing for it: the gate refuses it (exit 2), so only the measurable ones are guarded.
    measurable = [name for name in REPORTED if all(not math.isnan(figure(run["figures"][c], name)) for c in STRATEGIES)]
    # Defined for every setting on every session: what tokens, windows, compactions and costs give.
    assert {
        "removed_share",
        "preservation_or_untouched",
        "over_window_share",
        "over_window_calls",
        "compactions",
        "cost_change",
    } <= set(measurable)
    guarded = "\n".join(
        f"[metrics.{name}]" + ('\ndirection = "lower"' if metric(name).direction == "neither" else "") for name in measurable
    )
    suite = folder / "suite.toml"
    datasets = ", ".join(json.dumps(f) for f in run["files"])
    strategies = ", ".join(json.dumps(s) for s in STRATEGIES)
    suite.write_text(f"datasets = [{datasets}]\nstrategies = [{strategies}]\nwindow = 64000\n\n{guarded}\n", encoding="utf-8")
    baseline = folder / "baseline.json"
    assert _main("baseline", "--suite", str(suite), "--baseline", str(baseline))[0] == 0
    code, markdown = _main("check", "--suite", str(suite), "--baseline", str(baseline))
    assert code == 0, markdown
    for config in STRATEGIES:
        section = markdown.split(f"### `{config}`")[1].split("###")[0]
        for name in measurable:
            found = re.search(rf"^\| {re.escape(metric(name).label)} \(`{name}`\) \| \w+ \| [^|]+ \| ([^|]+) \|", section, re.M)
            assert found, (config, name)
            expected = figure(run["figures"][config], name)
            shown = found.group(1).strip()
            if shown == "–":
                assert math.isnan(expected)
            else:
                assert float(shown) == pytest.approx(expected, rel=1e-3, abs=1e-9), (config, name)


def test_every_label_is_one_metric() -> None:
    labels = pd.Series([metric(name).label for name in REPORTED])
    assert not labels.duplicated().any()
