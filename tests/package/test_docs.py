"""The reference moved from the README into docs/ (issue 43, point 5), and nothing was lost on the way.

Until abf14d9 the README was one 95 KB file holding the whole reference. Each of its sections now has
a page of the documentation site (mkdocs.yml builds docs/ with --strict in .ci/run). Checked here:
- every heading of the old README, listed below, has its page, and the page holds the section's
  own words (its opening sentence, and for the long replay section each of its parts);
- when the old README is in this clone's history, every sentence and every code block of it is in
  README.md or docs/, word for word, except the few rewritten on the move (listed with what replaced them);
- every page is in the site's navigation, and `compactlab docs` says where the reference is and how to
  build it.
"""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from compactlab.cli.docs_cli import format_where, where
from compactlab.cli.main import main
from tests.conftest import REPO

OLD = "abf14d9"  # the last commit whose README held the whole reference
# Each heading of the old README: the page its content is on, and words of it that must be there.
OLD_HEADINGS = {
    "(the top: the two commands)": [("index.md", "Both run on every core (pytest-xdist: `-n auto`")],
    "## What it is": [("index.md", "Agents that run long sessions must *compact* their conversation before")],
    "## The canonical session": [("sessions.md", "Every importer produces the same typed, frozen records")],
    "## Formats read": [("formats.md", "Detected from content (`.gz` is read transparently); `compactlab formats` lists them")],
    "## Bad input": [("bad-input.md", "A malformed line or record stops the import with an error naming the file")],
    "## Bundled datasets": [("datasets.md", "`datasets/` holds real sessions of real agents, gzipped (about 14 MB)")],
    "## Token estimation: how wrong is the trigger's count?": [
        ("token-estimation.md", "A compaction trigger is only as good as its token estimate")
    ],
    "## Compaction engine, strategies and presets": [
        ("strategies.md", "Before each LLM call the engine (`bench/compaction/engine.py`) measures the agent's context"),
        ("strategies.md", "Presets reproduce real designs with their trigger and estimator"),
    ],
    "## Replay: what a strategy would have done to real sessions": [
        ("replay.md", "`compactlab run` walks each recorded session call by call as the agent would"),
        ("replay.md", "**Replay is open-loop.**"),
        ("metrics.md", "**Metrics** (per call, per compaction, per session"),
        ("metrics.md", "**How a compacted prompt is sized**"),
        ("metrics.md", "**One catalogue, one computation**"),
        ("metrics.md", "**Recoverable and unrecoverable loss**"),
        ("metrics.md", "**Summary recall**"),
        ("recommendation.md", "**The recommendation**"),
        ("recommendation.md", "**Statistics**: per setting, means with bootstrap 95% confidence intervals"),
        ("run-directory.md", "A run directory holds `config.json`, `meta.json`"),
        ("configuration.md", "Every key (generated from the schema; a test keeps this table equal to it)"),
        ("sweep.md", "`compactlab sweep` replays a grid of trigger thresholds × keep-recent budgets × strategies"),
    ],
    "### From Python (a notebook)": [("python.md", "`compactlab.run` and `compactlab.sweep` go as far as the commands do")],
    "### Large corpora and clusters": [("clusters.md", "A run's memory does not grow with its corpus")],
    "## The report": [("report.md", "`compactlab run` ends by writing `report.html` into its run directory")],
    "## Regression-testing summary prompts in CI": [
        ("gate.md", "A *suite* is a run configuration plus the metrics to guard"),
        ("gate.md", "**What the gate can and cannot detect.**"),
        ("gate.md", "**Recorded answers.**"),
        ("gate.md", "**The CI job.**"),
    ],
    "### pytest plugin": [("gate.md", "Installing compactlab registers the `compactlab_replay` fixture")],
    "## Commands": [("commands.md", "Every command exits 0 when done and 2 on bad input or configuration")],
    "## Layout": [("layout.md", "One import namespace, `compactlab`, from two top-level folders")],
}
# Sentences rewritten on the move (a link into the site, a pointer that said "above"), and what holds their content now.
REWRITTEN = {
    # Issue 47: each compaction also shows what it did to the prompt cache.
    "what was dropped, the summary text, the facts the next steps needed that were kept and lost.": "and the cached tokens it invalidated and what the next call wrote",
    "or it did not measure what changed (a prompt no model read).": "or it did not measure what changed (a prompt no model read, or answers recorded by a summarizer other than this one",
    '(see "What the gate can and cannot detect").': "(see [What the gate can and cannot detect](gate.md#what-the-gate-can-and-cannot-detect))",
    "[docs/preset-rules.md](docs/preset-rules.md) is the table": "[docs/preset-rules.md](preset-rules.md) is the table",
    "applies the one recommendation rule above to it": "applies the one [recommendation rule](recommendation.md) to it",
    "the dated figures are in [docs/performance.md](docs/performance.md).": "the dated figures are in [docs/performance.md](performance.md).",
    "`docs/` — the labelling rule, performance.": "`docs/` — this reference (mkdocs.yml builds it into a site",
    "then the test command above.": "then the test command ([Home](index.md)).",
    # Issue 43: the default window became each model's real window for the user's own sessions.
    "At the default run's 64,000-token window": "At the main job's simulated 64,000-token window",
    "64,000 tokens by default (`--window`, 0 for the model's real window)": "real window for a file of your own, 64,000 tokens for a bundled dataset's",
    "By default every session is replayed as if its model had a 64,000-token window": "A run of your own sessions (a file or a folder) replays each model at its real window",
    "at their real 128k–200k windows the bundled sessions almost never reach a trigger.": "128k–200k windows they almost never reach a trigger",
    "`--window 0` uses real windows.": "`--window 0` replays them at real windows.",
    # Issue 43: the report's first screen (the answer, its window, the cost's coverage, the plot and its key)
    # and the detail on demand.
    "the recommended setting in one sentence with its figures": "holds the answer and the Pareto plot side by side",
    "the sessions left out because no setting can fit them, and the settings that are not recommendable": "the sessions left out\n  because no setting can fit them, the settings that are not recommendable and why",
    "it fits a laptop screen), what each strategy is, the Pareto plot": "leaderboard (the catalogue's figures under its labels; it fits a laptop screen), what each\n  strategy is",
    "the frontier of the recommendable settings;": "the dashed frontier of the recommendable settings",
    "one that fits nowhere is a number, listed under the plot;": "the key beside the plot names every\n    number",
    "only the frontier and the recommendation are named), the recommended setting": "tests (every pair with `--all-pairs`), and how to read it (open loop).",
    "for the 12 sessions with the most prompt tokens and every session with a real compaction, the context size": "one line each that opens to show the context size at each call per strategy",
    # Issue 45: the root, the home folder and a folder holding sessions are refused too.
    "`--out` equal to or inside a dataset folder is refused.": "`--out` equal to or inside a dataset folder is refused, and so are the filesystem root",
    # Issue 46: formats 1 to 3 are refused, not read (version 0.1.0 had no users to migrate).
    "`bench/runs/run_format.py` is the one place that reads an older one (3:": "`bench/runs/run_format.py` is the one place that reads it,",
    'where 4 says "session" and "setting"': "and refuses an older one naming its format (1 to 3",
    "Parquet rows without the number, read, its report without session_facts.json": "written before 0.1.0 had users",
    "`--resume` continues a directory of format 4 only) or refuses it naming the format (1:": "`--resume` continues a directory of\nformat 4 only)",
    # Issue 45: a suite reads only the environment variables of its purpose.
    "Values of `[summarizer]` may come from the environment:": "may come from the environment, each from its own variable",
    '`"${NAME}"`, or `"${NAME:-default}"` (an empty result leaves the key out).': 'written `"${NAME}"` or `"${NAME:-default}"` (an empty result leaves the key out)',
    # Issue 46: each importer states its format's facts.
    "- `bench/sessions/` — the canonical model, what a message is to a compaction": "importers (`importers/`, each stating its format's facts: `FormatFacts`)",
    # Issue 46: the report's prompt-size rows moved into the replay stage, every script into tests/scripts/.
    "without a real compaction (`bench/runs/prompt_size_check.py`)": "without a real compaction (`bench/replay/prompt_size_errors.py`)",
    "- `tests/scripts/` — the runnable scripts:": "- `tests/scripts/` — the runnable scripts, none in the installed package",
    "every measurement (`python -m tests.scripts.NAME`).": "every measurement, the tools that regenerate committed data",
    "The only scripts elsewhere are those that need what only `tests/` holds": "and those that need what only `tests/` holds (the wire-format fake",
    "`tests/scripts/` (`python -m tests.scripts.NAME`), since the package never imports `tests/`.": "from a checkout, `python -m tests.scripts.NAME`.",
}
# Issue 46: the measurement scripts left the package for tests/scripts/ (run from a checkout); the old
# README is read with their new names, and the old names are nowhere in README.md or docs/.
RENAMED = {
    "compactlab.measure.": "tests.scripts.",
    "bench/measure/": "tests/scripts/",
    "compactlab.runs.prompt_size_check": "tests.scripts.prompt_size_check",
    "compactlab.tokens.fit_calibration": "tests.scripts.fit_calibration",
    "compactlab.sessions.bundle_datasets": "tests.scripts.bundle_datasets",
}
# Code blocks and table rows changed since on purpose: their first words, and what holds them now.
CHANGED_BLOCKS = {
    # Issue 47: the trigger's cache-expiry rule.
    "| [[strategy]] | `trigger` | table |": "on_cache_expiry (a lower share at a call after the prompt cache expired)",
    'datasets = ["m-claude", "mini-swe-agent-pr816"]\nwindow = 64000\nstrategies': "window = 64000   # a simulated window (a stress test)",
    "|  | `window` | integer |": "0 for your own sessions; 64000 for the bundled datasets alone",
    "import compactlab\n\nstrategies = tuple(": "under the report's names (raw=True: summary.json's keys)",
    "compactlab --version\ncompactlab init": "[--lenient] [--all-skips] [--format NAME]",
    # Issue 47: the anthropic-messages row names what it reads of server-side compaction.
    "| `anthropic-messages` |": "the `compaction` entries of `usage.iterations` are its summarizer call's usage",
    # Issue 48: Codex and Claude Code have newer versions; the older ones' rows are under their versioned names.
    "| `codex` | 12 |": "| `codex@0100b103` | 12 | 7 | 5 | 12 |",
    "| `claude-code` | 9 |": "| `claude-code@2026-06-07` | 9 | 5 | 4 | 9 |",
    "| `opencode` | 20 |": "| `opencode@31e22f65` | 20 | 14 | 6 | 20 |",
    "| `claude-code` | 11.45%": "| `claude-code@2026-06-07` | 11.45% | 68.7% | 126 | 0 | 0 |",
    "| `opencode` | 11.40%": "| `opencode@31e22f65` | 11.40% | 83.8% | 147 | 1 | 0 |",
}


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def _pages() -> dict[str, str]:
    return {p.name: _flat(p.read_text(encoding="utf-8")) for p in sorted((REPO / "docs").glob("*.md"))}


def _all_text() -> str:
    return _flat((REPO / "README.md").read_text(encoding="utf-8") + " " + " ".join(_pages().values()))


def test_every_heading_of_the_old_readme_has_its_page_and_its_words() -> None:
    pages = _pages()
    missing = [
        (heading, page, words)
        for heading, places in OLD_HEADINGS.items()
        for page, words in places
        if page not in pages or _flat(words) not in pages[page]
    ]
    assert missing == []


def _old_readme() -> str:
    shown = subprocess.run(["git", "show", f"{OLD}:README.md"], cwd=REPO, capture_output=True, text=True)
    if shown.returncode != 0:
        pytest.skip(f"commit {OLD} is not in this clone's history (a shallow clone)")
    return shown.stdout


def test_every_sentence_and_code_block_of_the_old_readme_is_kept() -> None:
    old, now = _old_readme(), _all_text()
    assert [name for name in RENAMED if name in now] == []
    for name, new in RENAMED.items():
        old = old.replace(name, new)
    headings = re.findall(r"^#{2,3} (.*)$", old, re.M)
    assert len(headings) == len(OLD_HEADINGS) - 1 and all(any(h in listed for listed in OLD_HEADINGS) for h in headings)
    blocks = re.findall(r"^```\w*\n(.*?)^```", old, re.S | re.M)
    lines = re.sub(r"^```.*?^```", "", old, flags=re.S | re.M).splitlines()
    rows = [line for line in lines if line.startswith("|")]  # table rows, each kept whole
    prose = _flat(" ".join(line for line in lines if not line.startswith(("#", "|", "<!--"))))
    sentences = [s for s in re.split(r"(?<=[.:;])\s+", prose) if len(s) > 30]
    assert len(sentences) > 500 and len(blocks) > 10 and len(rows) > 100
    lost = [s for s in sentences if s not in now and not any(old_words in s for old_words in REWRITTEN)]
    changed = tuple(CHANGED_BLOCKS)
    lost += [block[:80] for block in blocks if _flat(block) not in now and not block.startswith(changed)]
    lost += [row[:80] for row in rows if _flat(row) not in now and not row.startswith(changed)]
    assert lost == []
    assert [new for new in (*REWRITTEN.values(), *CHANGED_BLOCKS.values()) if _flat(new) not in now] == []


def test_every_page_is_in_the_site_s_navigation() -> None:
    config = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    listed = set(re.findall(r":\s*([\w.-]+\.md)\s*$", config, re.M))
    assert listed == set(_pages()), "every docs/*.md in mkdocs.yml's nav, and nothing else"
    assert "theme:\n  name: material" in config and "mkdocstrings" in config and "strict: true" in config


def test_compactlab_docs_says_where_the_reference_is_and_how_to_build_it(capsys) -> None:
    assert main(["docs"]) == 0
    out = capsys.readouterr().out
    assert str(REPO / "docs") in out and "-m mkdocs serve" in out and "-m mkdocs build --strict" in out
    assert main(["docs", "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert found["docs"] == str(REPO / "docs") and found["mkdocs_yml"] == str(REPO / "mkdocs.yml")


def test_an_installation_without_the_repository_points_to_it(tmp_path) -> None:
    found = where(tmp_path)  # a wheel install: no docs/ beside the package
    assert found["docs"] is None and found["serve"] is None
    assert "docs/ folder of the compactlab repository" in format_where(found)
