"""Issue 44, points 1, 2 and 5: tolerances that mean a loss, the suite's own power measured by
`baseline` and stated by `check`, and the scaffold (`compactlab init`) with a model on the local
wire-format server (`tests/fake_providers.py`): one that follows its prompt (`summarizing`: keeps
paths, identifiers and errors only when the prompt asks for them) and one that ignores it
(`prompt_ignoring`). Everything runs on the scaffold's bundled sessions."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd
import pytest

from compactlab.cli.main import main
from compactlab.gate.compare import compare
from compactlab.gate.suite import MetricSpec, load_suite
from compactlab.results.compaction_values import CompactionValue
from compactlab.strategies.prompting import PROMPTS_DIR
from tests.conftest import REPO
from tests.fake_behaviours import prompt_ignoring, summarizing
from tests.fake_providers import FakeProvider, serve

# The scaffold's whole suite replayed with a model: a baseline and checks, tens of seconds each.
pytestmark = pytest.mark.slow

KEY_ENV = "COMPACTLAB_TEST_POWER_KEY"  # never set: the local server needs none, CI has none
DEGRADED = "{{ conversation }} Summarize briefly.\n"
RECALL = "`summarize-70` · dropped facts the summary kept (k=5) (`summary_recall_k5`)"


@dataclass(frozen=True)
class Scaffold:
    suite: Path
    baseline: Path
    server: FakeProvider
    printed: str  # what `baseline` printed


def scaffold(folder: Path, server: FakeProvider, monkeypatch, capsys) -> Scaffold:
    """`compactlab init`, then its baseline with the local server as the model."""
    assert main(["init", str(folder)]) == 0
    suite, baseline = folder / "ci" / "compactlab-suite.toml", folder / "ci" / "compactlab-baseline.json"
    for name in ("COMPACTLAB_PROVIDER", "OPENAI_API_KEY", KEY_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("COMPACTLAB_MODEL", "gpt-4o-mini")
    monkeypatch.setenv("COMPACTLAB_KEY_ENV", KEY_ENV)
    monkeypatch.setenv("COMPACTLAB_BASE_URL", server.openai_base_url)
    capsys.readouterr()
    assert main(["baseline", "--suite", str(suite), "--baseline", str(baseline)]) == 0
    return Scaffold(suite, baseline, server, capsys.readouterr().out)


def check(capsys, made: Scaffold) -> tuple[int, str]:
    code = main(["check", "--suite", str(made.suite), "--baseline", str(made.baseline)])
    return code, capsys.readouterr().out


def template(made: Scaffold, text: str) -> None:
    (made.suite.parent / "summary.j2").write_text(text, encoding="utf-8")


def test_the_scaffold_detects_its_tolerance_and_a_prompt_follower_fails_the_degraded_prompt(
    tmp_path, capsys, monkeypatch
) -> None:
    with serve() as server:
        server.otherwise = summarizing()
        made = scaffold(tmp_path, server, monkeypatch, capsys)
        recorded = json.loads(made.baseline.read_text(encoding="utf-8"))["sensitivity"]["summarize-70"]["summary_recall_k5"]
        assert recorded["detects_required"] and recorded["compactions"] > 100
        assert 0 < recorded["share"] <= 0.5 and recorded["loss"] > 0  # a fall by half is detected
        assert re.search(r"sensitivity \(measured in [\d.]+ s by resampling", made.printed)

        code, out = check(capsys, made)  # the unchanged template
        assert code == 0, out
        head = out.split("Suite `", 1)[0]
        assert head.startswith("## compactlab check: ✅ no regression")
        assert re.search(rf"{re.escape(RECALL)}: this suite detects a loss of [\d.]+ points or more", head)

        monkeypatch.delenv("COMPACTLAB_BASE_URL")  # CI without a key: the degraded prompt is no result
        template(made, DEGRADED)
        code, out = check(capsys, made)
        assert code == 2 and out.startswith("## compactlab check: ⛔ not measured")

        monkeypatch.setenv("COMPACTLAB_BASE_URL", server.openai_base_url)
        code, out = check(capsys, made)
        assert code == 1, out
        failed = out.split("Suite `", 1)[0]
        assert out.startswith("## compactlab check: ❌") and f"**{RECALL}**" in failed
        lost = out.split(f"**{RECALL}:", 1)[1].split("###", 1)[0]
        assert "Facts lost at its compactions that the baseline kept:" in lost
        assert len(re.findall(r"^- `[^`]+`: `(?:path|identifier|error):", lost, re.M)) >= 3


def test_with_a_model_that_ignores_the_prompt_the_check_says_it_cannot_tell(tmp_path, capsys, monkeypatch) -> None:
    """The instructions rewritten to ask for nothing: the model's summaries do not change, so no
    figure moves; the check says it cannot tell rather than pass green. Dropping the template's file
    lists too is caught: what the summaries carried was those lists, and it falls to 0."""
    with serve() as server:
        server.otherwise = prompt_ignoring()
        made = scaffold(tmp_path, server, monkeypatch, capsys)
        imports = (PROMPTS_DIR / "summary.j2").read_text(encoding="utf-8").split("\n", 1)[0]
        assert imports.startswith('{%- from "files.j2" import files -%}')  # the file lists stay
        asks_nothing = f"{imports}\n<conversation>\n{{{{ conversation }}}}\n</conversation>\n\nSummarize briefly.\n"
        template(made, asks_nothing)
        code, out = check(capsys, made)
        assert code == 0, out
        head = out.split("Suite `", 1)[0]
        assert head.startswith("## compactlab check: ⚠️ no regression it can tell")
        assert "this suite cannot tell the new prompt from the old" in head
        assert re.search(rf"{re.escape(RECALL)}: this suite detects a loss of [\d.]+ points or more", head)

        template(made, DEGRADED)
        code, out = check(capsys, made)
        assert code == 1, out
        assert "fell to 0, a regression whatever the tolerance" in out.split("Suite `", 1)[0]


def test_a_suite_too_small_for_its_tolerance_is_refused_with_the_fix(tmp_path, capsys, monkeypatch) -> None:
    """The scaffold on three of its sessions at its window: too few compactions to detect a loss of
    twice the recall's tolerance, so `baseline` writes nothing and exits 2, saying what to do."""
    assert main(["init", str(tmp_path)]) == 0
    suite = tmp_path / "ci" / "compactlab-suite.toml"
    sessions = sorted((REPO / "datasets" / "mini-swe-agent-v1" / "sessions").iterdir())[:3]
    text = suite.read_text(encoding="utf-8")
    listed = ", ".join(f'"{p.as_posix()}"' for p in sessions)
    suite.write_text(re.sub(r"^datasets = .*$", f"datasets = [{listed}]", text, count=1, flags=re.M), encoding="utf-8")
    with serve() as server:
        server.otherwise = summarizing()
        monkeypatch.setenv("COMPACTLAB_MODEL", "gpt-4o-mini")
        monkeypatch.setenv("COMPACTLAB_KEY_ENV", KEY_ENV)
        monkeypatch.setenv("COMPACTLAB_BASE_URL", server.openai_base_url)
        code = main(["baseline", "--suite", str(suite), "--baseline", str(tmp_path / "baseline.json")])
    err = capsys.readouterr().err
    assert code == 2 and not (tmp_path / "baseline.json").exists()
    assert "this suite cannot detect a loss of its own tolerance" in err
    assert "more sessions" in err and "a smaller window than 12,000 tokens" in err


# --- the rule itself, on a real baseline --------------------------------------------------------------


@pytest.fixture(scope="module")
def follower_baseline(tmp_path_factory) -> tuple[Path, dict]:
    folder = tmp_path_factory.mktemp("power-rule")
    with serve() as server, pytest.MonkeyPatch.context() as patch:
        server.otherwise = summarizing()
        assert main(["init", str(folder)]) == 0
        patch.setenv("COMPACTLAB_MODEL", "gpt-4o-mini")
        patch.setenv("COMPACTLAB_KEY_ENV", KEY_ENV)
        patch.setenv("COMPACTLAB_BASE_URL", server.openai_base_url)
        suite, baseline = folder / "ci" / "compactlab-suite.toml", folder / "baseline.json"
        assert main(["baseline", "--suite", str(suite), "--baseline", str(baseline)]) == 0
        return suite, json.loads(baseline.read_text(encoding="utf-8"))


SMALL = 0.4  # the baseline's recall scaled to about 0.09: the small share (its scaffold had 0.10)


def _scaled(document: dict, factor: float) -> tuple[dict, pd.DataFrame, list[CompactionValue]]:
    """The baseline with its summary recall times SMALL at every compaction, and a new run with it
    times `factor` more."""
    points = document["compactions"]["summarize-70"]["summary_recall_k5"]
    small = {t: [[at, v * SMALL, lost] for at, v, lost in ps] for t, ps in points.items()}
    means = {t: sum(v for _, v, _ in ps) / len(ps) for t, ps in small.items()}
    baseline = {
        **document,
        "values": {"summarize-70": {"summary_recall_k5": means}},
        "compactions": {"summarize-70": {"summary_recall_k5": small}},
    }
    values = [
        CompactionValue(t, "summarize-70", at, "summary_recall_k5", v * factor, ()) for t, ps in small.items() for at, v, _ in ps
    ]
    rows = [{"session": t, "setting": "summarize-70", "summary_recall_k5": m * factor} for t, m in means.items()]
    return baseline, pd.DataFrame(rows), values


@pytest.mark.parametrize(
    "spec, factor, verdict",
    [
        (MetricSpec("summary_recall_k5", "higher", 0.05), 0.5, "worse"),  # the old scaffold's: half lost passes
        (MetricSpec("summary_recall_k5", "higher", 0.05, relative_tolerance=0.25), 0.5, "regression"),
        (MetricSpec("summary_recall_k5", "higher", 0.5), 0.0, "regression"),  # to 0: whatever the tolerance
        (MetricSpec("summary_recall_k5", "higher", 0.05, relative_tolerance=0.25), 0.9, "worse"),
    ],
)
def test_a_share_that_falls_by_half_or_to_zero_fails(follower_baseline, spec, factor, verdict) -> None:
    suite_path, document = follower_baseline
    suite = load_suite(suite_path)
    one = replace(suite, metrics=(spec,), config=replace(suite.config, strategies=suite.config.strategies[:1]))
    baseline, table, values = _scaled(document, factor)
    [comparison] = compare(one, baseline, table, values).comparisons
    assert 0.05 < comparison.baseline < 0.12  # a small share
    assert comparison.verdict == verdict


def test_the_default_tolerance_of_summary_recall_is_also_relative(tmp_path) -> None:
    (tmp_path / "suite.toml").write_text(
        'datasets = ["mini-swe-agent-v1"]\nstrategies = ["summarize"]\n[metrics.summary_recall_k5]\n'
        "[metrics.preservation_k5]\n[metrics.removed_share]\ntolerance = 0.01\n",
        encoding="utf-8",
    )
    recall, preservation, removed = load_suite(tmp_path / "suite.toml").metrics
    assert (recall.tolerance, recall.relative_tolerance) == (0.05, 0.25)
    assert recall.allowed(0.10) == pytest.approx(0.025) and recall.allowed(0.40) == 0.05
    assert preservation.relative_tolerance is None and removed.relative_tolerance is None
