"""The CI gate: `compactlab check` against the repository's own committed baseline, a prompt
template that drops the file list (fails) and its restoration (passes), exit-2 cases, and
`compactlab baseline` never overwriting silently."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from compactlab.cli.main import main
from compactlab.gate.gate import read_baseline
from compactlab.gate.suite import SuiteError
from compactlab.strategies.prompting import PROMPTS_DIR
from tests.conftest import REPO, bundled
from tests.fake_providers import serve

SUITE = REPO / "reports" / "baselines" / "suite.toml"
BASELINE = REPO / "reports" / "baselines" / "baseline.json"
MINI = bundled("mini-swe-agent-pr816", "deepseek_reasoner_dev_marshmallow-code__marshmallow-1343")
FILES_IMPORT = '{%- from "files.j2" import files -%}'


def copy_suite(tmp_path: Path, template: str) -> Path:
    """The repository's suite in tmp_path, its `summarize` strategy using `template` (next to it)."""
    text = SUITE.read_text(encoding="utf-8").replace('"../../datasets/', f'"{(REPO / "datasets").as_posix()}/')
    text = text.replace(
        'settings = { keep_recent_tokens = 4000, template = "summary.j2" }',
        f'settings = {{ keep_recent_tokens = 4000, template = "{template}" }}',
    )
    assert f'template = "{template}"' in text
    path = tmp_path / "suite.toml"
    path.write_text(text, encoding="utf-8")
    return path


def tiny_suite(tmp_path: Path, strategy: str = 'name = "summarize"', extra: str = "", metrics: str | None = None) -> Path:
    metrics = metrics if metrics is not None else '[metrics.preservation_k5]\ndirection = "higher"\ntolerance = 0.01\n'
    path = tmp_path / "suite.toml"
    path.write_text(
        f'datasets = ["{MINI.as_posix()}"]\nwindow = 20000\n{extra}\n[[strategy]]\n{strategy}\n\n{metrics}', encoding="utf-8"
    )
    return path


# --- the repository's own suite ------------------------------------------------------------------


def test_the_repository_suite_passes_against_its_committed_baseline(tmp_path, capsys) -> None:
    summary = tmp_path / "summary.md"
    code = main(["check", "--suite", str(SUITE), "--baseline", str(BASELINE), "--markdown-out", str(summary)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert out.startswith("## compactlab check: ✅ no regression")
    assert summary.read_text(encoding="utf-8") == out.rstrip("\n") + "\n"
    for label in ("summarize", "iterative-merge", "pi", "observation-masking", "prune"):
        assert f"### `{label}`" in out
    # What it guards offline, and what not: no model reads its prompt templates.
    assert "Prompt templates no model read: summary.j2, turn_prefix.j2, update.j2." in out


def test_a_template_change_no_model_read_is_no_result_and_restoring_it_passes(tmp_path, capsys) -> None:
    """The issue's case: `summary.j2` without its `files.j2` import. Offline the summaries come from the
    extractive stand-in, which reads no prompt: the change is not measured, so the check exits 2 naming
    the template and the settings (it used to pass, or fail on the file lists alone)."""
    source = (PROMPTS_DIR / "summary.j2").read_text(encoding="utf-8")
    assert source.startswith(FILES_IMPORT)
    suite = copy_suite(tmp_path, "summary.j2")  # resolved beside the suite first: the bundled file as edited
    (tmp_path / "summary.j2").write_text(source.replace(FILES_IMPORT, "", 1), encoding="utf-8")

    markdown = tmp_path / "check.md"
    code = main(["check", "--suite", str(suite), "--baseline", str(BASELINE), "--markdown-out", str(markdown)])
    captured = capsys.readouterr()
    assert code == 2, captured.out + captured.err
    assert "summary.j2 changed since the baseline (settings summarize, iterative-merge), but no model read it" in captured.err
    assert "configure a [summarizer]" in captured.err and "--update" in captured.err
    assert captured.out.startswith("## compactlab check: ⛔ not measured: no result")
    assert markdown.read_text(encoding="utf-8").startswith("## compactlab check: ⛔ not measured")
    assert "Prompt templates no model read: summary.j2, turn_prefix.j2, update.j2." in captured.out
    assert "`pi`" in captured.out and "pi)" not in captured.err  # pi renders the bundled summary.j2: unchanged

    (tmp_path / "summary.j2").write_text(source, encoding="utf-8")  # restored
    code = main(["check", "--suite", str(suite), "--baseline", str(BASELINE), "--only", "summarize"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "✅ no regression" in out and "prompt templates changed" not in out  # the same text: the same prompt hash


# --- exit code 2: usage and configuration errors -------------------------------------------------


def run_error(capsys, *argv: str) -> str:
    assert main(list(argv)) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    return captured.err


def test_configuration_errors_exit_2_with_a_clear_message(tmp_path, capsys) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("window = [\n", encoding="utf-8")
    assert "invalid TOML" in run_error(capsys, "check", "--suite", str(bad), "--baseline", str(BASELINE))

    typo = tiny_suite(tmp_path, metrics='[metrics.preservaton_k5]\ndirection = "higher"\n')
    err = run_error(capsys, "check", "--suite", str(typo), "--baseline", str(BASELINE))
    assert "unknown metric 'preservaton_k5' (did you mean 'preservation_k5'?)" in err

    direction = tiny_suite(tmp_path, metrics='[metrics.total_cost]\ndirection = "up"\n')
    assert '`direction` must be "higher" or "lower"' in run_error(
        capsys, "check", "--suite", str(direction), "--baseline", str(BASELINE)
    )

    no_metrics = tiny_suite(tmp_path, metrics="")
    assert "a suite needs a [metrics] table" in run_error(
        capsys, "baseline", "--suite", str(no_metrics), "--baseline", str(tmp_path / "b.json")
    )

    missing = tmp_path / "missing.json"
    err = run_error(capsys, "check", "--suite", str(SUITE), "--baseline", str(missing))
    assert f"no baseline at {missing}" in err and f"compactlab baseline --suite {SUITE} --baseline {missing}" in err

    other = tiny_suite(tmp_path, strategy='name = "truncate"')
    err = run_error(capsys, "check", "--suite", str(other), "--baseline", str(BASELINE))
    assert "the baseline has no strategy 'truncate'" in err and "--update" in err

    assert "no strategy labelled 'sumarize'" in run_error(
        capsys, "check", "--suite", str(SUITE), "--baseline", str(BASELINE), "--only", "sumarize"
    )


def test_a_missing_recording_in_offline_mode_is_an_error_not_a_skip(tmp_path, capsys) -> None:
    suite = tiny_suite(
        tmp_path,
        strategy='name = "summarize"\nsettings = { summarizer = "llm", fallback = "" }',
        extra='[summarizer]\nprovider = "recorded"\nmodel = "gpt-4o-mini"\ncache_dir = "llm-cache"\n',
    )
    err = run_error(capsys, "baseline", "--suite", str(suite), "--baseline", str(tmp_path / "baseline.json"))
    # A single-task session is one long turn: its summaries come from the turn-prefix template.
    assert re.search(r"turn_prefix.j2: \d+ summar(y needs|ies need) a model", err) and str(tmp_path / "llm-cache") in err
    assert not (tmp_path / "baseline.json").exists()


# --- the baseline file ------------------------------------------------------------------------------


def test_baseline_is_never_overwritten_without_update_and_says_what_changed(tmp_path, capsys) -> None:
    suite = tiny_suite(tmp_path)
    baseline = tmp_path / "baseline.json"
    assert main(["baseline", "--suite", str(suite), "--baseline", str(baseline)]) == 0
    assert "wrote" in capsys.readouterr().out
    written = baseline.read_text(encoding="utf-8")
    document = json.loads(written)
    assert document["suite"]["file"] == "suite.toml" and document["compactlab"]
    [session] = document["sessions"]
    assert document["sessions"][session]["file"].endswith(MINI.name)
    assert document["strategies"]["summarize"]["prompt_hashes"]  # it compacted with a prompt
    assert isinstance(document["values"]["summarize"]["preservation_k5"][session], float)

    err = run_error(capsys, "baseline", "--suite", str(suite), "--baseline", str(baseline))
    assert "exists" in err and "--update" in err
    assert baseline.read_text(encoding="utf-8") == written

    assert main(["check", "--suite", str(suite), "--baseline", str(baseline)]) == 0
    capsys.readouterr()
    suite.write_text(suite.read_text(encoding="utf-8").replace("window = 20000", "window = 12000"), encoding="utf-8")
    assert main(["baseline", "--suite", str(suite), "--baseline", str(baseline), "--update"]) == 0
    out = capsys.readouterr().out
    assert "updated" in out and "suite:" in out and "summarize · preservation_k5: mean" in out
    assert baseline.read_text(encoding="utf-8") != written


def test_record_once_with_a_provider_then_replay_offline_without_one(tmp_path, capsys, monkeypatch) -> None:
    """The cache committed next to a suite: recorded against a (local, fake) OpenAI-compatible
    server once, then checked with --offline and no server, no key."""
    monkeypatch.setenv("COMPACTLAB_TEST_GATE_KEY", "sk-test")
    baseline = tmp_path / "baseline.json"
    with serve() as server:
        suite = tiny_suite(
            tmp_path,
            strategy='name = "summarize"\nsettings = { summarizer = "llm", fallback = "" }',
            extra=f'[summarizer]\nprovider = "openai"\nmodel = "gpt-4o-mini"\nbase_url = "{server.openai_base_url}"\n'
            'api_key_env = "COMPACTLAB_TEST_GATE_KEY"\ncache_dir = "llm-cache"\nmax_retries = 0\n',
        )
        assert main(["baseline", "--suite", str(suite), "--baseline", str(baseline)]) == 0
        calls = server.count()
    assert calls > 0 and len(list((tmp_path / "llm-cache").rglob("*.json"))) == calls
    monkeypatch.delenv("COMPACTLAB_TEST_GATE_KEY")
    capsys.readouterr()
    assert main(["check", "--suite", str(suite), "--baseline", str(baseline), "--offline"]) == 0
    assert "✅ no regression" in capsys.readouterr().out
    # A prompt that was never recorded: offline, that is an error naming the cache, not a skip.
    template = tmp_path / "summary.j2"
    template.write_text((PROMPTS_DIR / "summary.j2").read_text(encoding="utf-8") + "\nBe brief.\n", encoding="utf-8")
    suite.write_text(
        suite.read_text(encoding="utf-8").replace('summarizer = "llm"', 'summarizer = "llm", template = "summary.j2"'),
        encoding="utf-8",
    )
    code = main(["check", "--suite", str(suite), "--baseline", str(baseline), "--offline"])
    err = capsys.readouterr().err
    assert code == 2
    assert re.search(r"summary.j2 changed: \d+ summar(y needs|ies need) a model", err) and "(--offline)" in err


def test_a_format_2_baseline_reads_as_this_format_with_its_sessions_renamed(tmp_path: Path) -> None:
    # Format 2 named the session files' hashes `transcripts`; a committed baseline of it stays usable
    # (recording its answers again may need a paid model), read with the key renamed.
    document = json.loads(BASELINE.read_text())
    assert document["format"] == 4 and document["sessions"]
    old = {k: v for k, v in document.items() if k != "sessions"} | {"transcripts": document["sessions"], "format": 2}
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps(old))
    assert read_baseline(path, SUITE) == {**document, "format": 3}  # upgraded to format 3, which records no summarizer
    path.write_text(json.dumps({**old, "format": 1}))
    with pytest.raises(SuiteError, match="not a compactlab baseline of format 4"):
        read_baseline(path, SUITE)
