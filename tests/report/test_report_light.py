"""The report stays light and says what its figures cover (issue 43, point 4), on real runs: the detail
of each session is a closed block inflated when opened, long names are cut with the whole name as a
tooltip, and the first screen says over how many sessions the cost is."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

from compactlab.cli.main import main
from compactlab.report.lazy import inflated, lazy, lazy_bytes, unpack
from compactlab.report.names import NAME_CHARS, short_name, shortened
from compactlab.results.cost_coverage import format_cost_coverage
from tests.conftest import SharedRun, bundled

# A Codex rollout of a model the bundled prices lack, beside a priced Claude Code session.
UNPRICED = ("codex-rollouts", "Prometheus-AGS__prometheus-parking-lot-rs__rollout-2025-12-06T15-11-37")
PRICED = ("claude-code-log", "-Users-dain-workspace-claude-code-log-sample__37f83ec9")


def test_a_long_name_is_cut_in_the_middle_with_the_whole_name_as_its_tooltip() -> None:
    name = "-Users-dain-workspace-claude-code-log-sample__07f2e15c-a38b-454b-9148-60edc06de401"
    cut = shortened(name)
    assert len(cut) == NAME_CHARS and cut.startswith("-Users-dain-workspace") and cut.endswith("60edc06de401") and "…" in cut
    assert str(short_name(name)) == f'<span class="name" title="{name}">{cut}</span>'
    assert (
        str(short_name("3af9b1a7-6512-4883-ad18-320658ced099"))
        == '<span class="name">3af9b1a7-6512-4883-ad18-320658ced099</span>'
    )
    assert "<b>" not in str(short_name("<b>" + "x" * 60)) and "&lt;b&gt;" in str(short_name("<b>" + "x" * 60))


def test_a_lazy_block_holds_its_content_packed_until_opened() -> None:
    block = str(lazy("one line", "<p>the detail &amp; more</p>", "t-0", "session"))
    assert "the detail" not in block and block.startswith('<details id="t-0" class="lazy session" data-lazy="')
    page = f"<main>{block}</main>"
    assert lazy_bytes(page) > 0
    assert inflated(page) == '<main><details id="t-0" class="lazy session" open><summary>one line</summary>' + (
        '<div class="lazy-body"><p>the detail &amp; more</p></div></details></main>'
    )
    packed = re.search(r'data-lazy="([^"]+)"', block).group(1)
    assert unpack(packed) == "<p>the detail &amp; more</p>" and lazy("x", "y") == lazy("x", "y")  # deterministic


def test_the_report_of_real_sessions_is_light_and_its_long_names_cut(shared_claude_run: SharedRun) -> None:
    page = (shared_claude_run.folder / "report.html").read_text(encoding="utf-8")
    opened = inflated(page)
    # 50 real sessions × 4 strategies; before (main 074608a) every session's chart and compactions were inline:
    # the page was what `opened` is now.
    assert len(page.encode()) < 900_000 and len(opened) > 2 * len(page), (len(page), len(opened))
    assert page.count("<svg") == 1  # the Pareto plot; the saw-tooths and the estimation charts are on demand
    # Long names (Claude Code's session names, the paths of the facts never re-acquired) are cut, whole in the tooltip.
    names = {html.unescape(i) for i in re.findall(r'<span class="name" title="([^"]+)">', opened)}
    assert any(n.startswith("path:/Users/") for n in names) and all(len(n) > NAME_CHARS for n in names)
    for name in names:
        assert f'title="{html.escape(name)}">{html.escape(shortened(name), quote=False)}</span>' in opened
    table = re.search(r'id="trust-reacquisition-table">(.*?)</table>', page, re.S).group(1)
    assert 'class="wrap items"' in table and '<span class="name" title="path:/' in table


def test_the_first_screen_says_over_how_many_sessions_the_cost_is(tmp_path: Path) -> None:
    out = tmp_path / "run"
    files = [str(bundled(*UNPRICED)), str(bundled(*PRICED))]
    arguments = ["run", "--dataset", *files, "--strategy", "truncate", "pi", "--no-estimation", "--out", str(out)]
    assert main(arguments) == 0
    coverage = json.loads((out / "summary.json").read_text())["cost_coverage"]
    assert coverage["sessions"] == 2 and coverage["priced"] == 1 and "gpt-5.1-codex-max" in coverage["unpriced_models"]
    page = (out / "report.html").read_text(encoding="utf-8")
    said = html.unescape(
        re.sub(r"<[^>]+>", "", re.search(r'<p class="cost warn" id="cost-coverage">(.*?)</p>', page, re.S).group(1))
    )
    # The command line's sentence, word for word: what it printed is what the report shows.
    assert said == f"Cost: {format_cost_coverage(coverage).removeprefix('cost ')}."
    assert said.startswith("Cost: over 1 of 2 sessions; unpriced: gpt-5.1-codex-max (1 session)")
    headline = re.search(r'<div class="headline">(.*?)</div>', page, re.S).group(1)
    if "cost change" in headline:  # a recommendation: its cost figure says its coverage where it is given
        assert "(over 1 of 2 sessions)" in headline
