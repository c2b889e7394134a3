"""Each real compaction is counted once: a copy of a conversation compacted elsewhere and the same
session saved twice are named and counted apart in summary.json, the terminal, the report and
`compactlab engines`, and the figures are given per family (compactlab.results.fidelity_figures)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from compactlab.cli.main import main
from compactlab.results.fidelity_figures import (
    ANTHROPIC,
    COPY,
    NO_SIZE,
    OTHER_THROUGH_CLAUDE_CODE,
    FidelityFigures,
    family_of,
    left_out,
)
from tests.conftest import SHARED

SESSION = "pai-claude-2/a94d7e8e-36ff-4bbb-ae42-09ee7a55005d.jsonl"  # one real manual compaction (Claude Code 2.1.6)


def test_families_follow_the_engine_and_for_claude_code_the_model() -> None:
    assert family_of("claude-code", "claude-opus-4-5-20251101") == ANTHROPIC
    assert family_of("claude-code", "glm-4.7") == OTHER_THROUGH_CLAUDE_CODE
    assert family_of("claude-code", None) == OTHER_THROUGH_CLAUDE_CODE
    assert family_of("codex-rollout", "gpt-5.5") == "Codex"
    assert family_of("pi-session", "claude-opus-4-5") == "pi"


def test_figures_in_tokens_and_per_cent() -> None:
    figures = FidelityFigures.of([100_000, 52_000, 40_000, 33_000], [100_000, 50_000, 50_000, 30_000])
    assert figures.count == 4
    assert figures.within_5pct == 0.5 and figures.within_10pct == 0.75  # 0%, 4%, 20%, 10%
    assert figures.within_3000 == 0.75 and figures.within_7500 == 0.75  # 0, 2,000, 10,000, 3,000 tokens
    assert figures.median_tokens == 2_500 and figures.median_pct == pytest.approx(0.07)


def test_a_copy_a_repeat_and_a_missing_size_are_left_out_with_why() -> None:
    rows = [
        {"session": "a", "call": 12, "summary_sha": "s1", "fidelity_recorded": 40_000},
        {"session": "a/agent-acompact-1", "call": 0, "summary_sha": "s1", "fidelity_recorded": 41_000},
        {"session": "b", "call": 12, "summary_sha": "s1", "fidelity_recorded": 40_000},
        {"session": "c", "call": 7, "summary_sha": "s2", "fidelity_recorded": 0},
        {"session": "d", "call": 9, "summary_sha": "s3", "fidelity_recorded": 20_000},
    ]
    assert left_out(rows) == ["", COPY, "a repeat of a call 12", NO_SIZE, ""]


@pytest.fixture(scope="module")
def copies(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real session, the same file saved again under another name, and a copy that starts at its
    compaction (as Claude Code's sub-agent copy files start with the compacted conversation)."""
    if not SHARED.is_dir():
        pytest.skip(f"the shared real sessions are not at {SHARED}")
    folder = tmp_path_factory.mktemp("copies")
    original = SHARED / SESSION
    shutil.copy(original, folder / "main.jsonl")
    shutil.copy(original, folder / "saved-again.jsonl")
    lines = original.read_text(encoding="utf-8").splitlines(keepends=True)
    boundary = next(i for i, line in enumerate(lines) if '"compact_boundary"' in line)
    (folder / "subagents").mkdir()
    (folder / "subagents" / "agent-acompact-0001.jsonl").write_text("".join(lines[boundary:]), encoding="utf-8")
    return folder


def test_a_run_counts_the_real_compaction_once(copies: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    code = main(
        ["run", "--strategy", "recorded", "--window", "0", "--no-estimation", "--dataset", str(copies), "--out", str(out)]
    )
    assert code == 0
    printed = capsys.readouterr().out
    summary = json.loads((out / "summary.json").read_text())
    rows = summary["recorded_fidelity"]
    assert len(rows) == 3  # the compaction seen in three files
    first = next(r for r in rows if not r["left_out"])
    assert first["session"].endswith("main") and first["family"] == ANTHROPIC
    assert sorted(r["left_out"] for r in rows) == ["", COPY, f"a repeat of {first['session']} call {first['call']}"]
    document = summary["fidelity"]
    assert (document["distinct"], document["copies"], document["repeats"]) == (1, 1, 1)
    assert list(document["families"]) == [ANTHROPIC] and document["families"][ANTHROPIC]["count"] == 1
    assert "1 distinct real compactions; left out: 1 copies (no call before them in their file), 1 repeats" in printed
    assert f"    {ANTHROPIC}: 1 compactions:" in printed


def test_engines_counts_the_real_compaction_once(copies: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["engines", str(copies)]) == 0
    printed = capsys.readouterr().out
    assert (
        "claude-code: 1 manual compaction(s) listed apart; not counted: 1 copies (no call before them in their file), 1 repeats (the same compaction in another file)"
        in printed
    )
