"""The gate catches a worse summary prompt: an LLM summarizer on the local wire-format server
(`tests/fake_providers.py`), whose answer follows its prompt, replays ten real mini-swe-agent
sessions. The original prompt asks for exact file paths, names, commands and errors, and gets them;
`{{ conversation }} Summarize briefly.` gets one line. Against a baseline made with the original,
the near-empty prompt fails `compactlab check` (exit 1) on what its summaries no longer carry, with
the lost facts listed; the original passes."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

from compactlab.cli.main import main
from compactlab.gate.gate import compare
from compactlab.gate.suite import load_suite
from compactlab.results.compaction_values import CompactionValue
from compactlab.strategies.prompting import PROMPTS_DIR
from tests.conftest import bundled
from tests.fake_behaviours import summarizing
from tests.fake_providers import FakeProvider, serve

SESSIONS = (
    "deepseek_chat_dev_pvlib__pvlib-python-1707",
    "deepseek_chat_dev_rerun_pylint-dev__astroid-1333",
    "deepseek_chat_dev_rerun_pvlib__pvlib-python-1154",
    "deepseek_chat_dev_rerun_sqlfluff__sqlfluff-1517",
    "deepseek_chat_dev_rerun_sqlfluff__sqlfluff-1733",
    "deepseek_chat_test_1-100_astropy__astropy-14182",
    "deepseek_chat_test_1-100_django__django-11422",
    "deepseek_chat_test_1-100_django__django-12113",
    "deepseek_chat_test_1-100_django__django-15213",
    "deepseek_chat_test_1-100_django__django-15400",
)
NEAR_EMPTY = "{{ conversation }} Summarize briefly.\n"
KEY_ENV = "COMPACTLAB_TEST_SUMMARY_KEY"
METRICS = {"preservation_k5": 0.01, "preservation_k5_path": 0.02, "summary_recall_k5": 0.05}


def write_suite(folder: Path, server: FakeProvider, metrics: dict[str, float] = METRICS) -> Path:
    """A suite of the ten sessions with `summarize` on the LLM summarizer, its prompt at prompts/summary.j2
    (for the history and for the first part of a split turn: these single-task sessions are one long turn)."""
    datasets = ", ".join(f'"{bundled("mini-swe-agent-pr816", stem).as_posix()}"' for stem in SESSIONS)
    tables = "".join(
        f'[metrics.{name}]\ndirection = "higher"\ntolerance = {tolerance}\n\n' for name, tolerance in metrics.items()
    )
    path = folder / "suite.toml"
    path.write_text(
        f"datasets = [{datasets}]\nwindow = 20000\n\n"
        f'[summarizer]\nprovider = "openai"\nmodel = "gpt-4o-mini"\nbase_url = "{server.openai_base_url}"\n'
        f'api_key_env = "{KEY_ENV}"\ncache_dir = "llm-cache"\nmax_retries = 0\n\n'
        '[[strategy]]\nname = "summarize"\n'
        'settings = { summarizer = "llm", fallback = "", keep_recent_tokens = 4000, template = "prompts/summary.j2", '
        'turn_prefix_template = "prompts/summary.j2" }\n\n' + tables,
        encoding="utf-8",
    )
    (folder / "prompts").mkdir(exist_ok=True)
    return path


def check(capsys, suite: Path, baseline: Path) -> tuple[int, str]:
    code = main(["check", "--suite", str(suite), "--baseline", str(baseline)])
    return code, capsys.readouterr().out


@dataclass(frozen=True)
class Recorded:
    suite: Path
    template: Path
    baseline: Path  # made with the original prompt
    near_empty: Path  # a baseline file made with the near-empty prompt: its per-compaction values
    server: FakeProvider
    original_calls: int  # requests the original prompt's run made


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Recorded:
    folder = tmp_path_factory.mktemp("summary-prompt")
    original = (PROMPTS_DIR / "summary.j2").read_text(encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch, serve() as server:
        patch.setenv(KEY_ENV, "sk-test")
        server.otherwise = summarizing()
        suite = write_suite(folder, server)
        template = folder / "prompts" / "summary.j2"
        template.write_text(original, encoding="utf-8")
        assert main(["baseline", "--suite", str(suite), "--baseline", str(folder / "baseline.json")]) == 0
        calls = server.count()
        template.write_text(NEAR_EMPTY, encoding="utf-8")
        assert main(["baseline", "--suite", str(suite), "--baseline", str(folder / "near-empty.json")]) == 0
        template.write_text(original, encoding="utf-8")
        yield Recorded(suite, template, folder / "baseline.json", folder / "near-empty.json", server, calls)


def test_a_near_empty_summary_prompt_fails_the_gate_and_the_original_passes(recorded, capsys, monkeypatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test")
    server, asked = recorded.server, recorded.original_calls
    assert asked > 30  # every compaction of the ten sessions asked the server for its summary
    briefs = [r.body["messages"][-1]["content"] for r in server.received[asked:]]
    assert briefs and all("Summarize briefly." in prompt and "Preserve exact" not in prompt for prompt in briefs)
    answers = server.count()

    recorded.template.write_text(NEAR_EMPTY, encoding="utf-8")
    code, out = check(capsys, recorded.suite, recorded.baseline)
    assert code == 1, out
    assert out.startswith("## compactlab check: ❌")
    row = next(
        line for line in out.splitlines() if line.startswith("| dropped facts the summary kept (k=5) (`summary_recall_k5`)")
    )
    assert "**❌ regression**" in row
    change = float(re.search(r"\| higher \| 0\.05 \| [\d.]+ \| [\d.]+ \| ([-+.\de]+) \[", row).group(1))
    assert change < -0.3  # the one-line summaries carry almost none of the dropped facts
    # The lost facts, per session: facts the next steps used that the original prompt's summaries kept.
    lost = out.split("**`summarize` · dropped facts the summary kept (k=5) (`summary_recall_k5`):", 1)[1]
    assert "Facts lost at its compactions that the baseline kept:" in lost
    listed = re.findall(r"^- `([^`]+)`: (.+)$", lost.split("###", 1)[0], re.M)
    assert len(listed) >= 3 and all(re.search(r"`(path|identifier|command|error|number|url):", facts) for _, facts in listed)

    recorded.template.write_text((PROMPTS_DIR / "summary.j2").read_text(encoding="utf-8"), encoding="utf-8")
    code, out = check(capsys, recorded.suite, recorded.baseline)
    assert code == 0, out
    assert "✅ no regression" in out and "prompt templates changed" not in out
    assert server.count() == answers  # both prompts' answers replayed from the cache: no new calls


def test_a_loss_confined_to_a_few_long_sessions_fails_once_compactions_are_resampled(recorded) -> None:
    """The issue's case: 7 of 10 sessions unchanged, the 3 with the most compactions worse. The
    new run is the original prompt's values, but the near-empty prompt's in those 3 sessions."""
    suite = load_suite(recorded.suite)
    before, after = (json.loads(path.read_text(encoding="utf-8")) for path in (recorded.baseline, recorded.near_empty))
    metric = "preservation_k5_path"
    points = before["compactions"]["summarize"][metric]
    longest = sorted(points, key=lambda t: (-len(points[t]), t))[:3]
    assert len(points) == 10 and all(len(points[t]) >= 6 for t in longest)
    values, rows = [], []
    for session in points:
        source = after if session in longest else before
        rows.append(
            {
                "session": session,
                "setting": "summarize",
                **{m: source["values"]["summarize"][m].get(session) for m in METRICS},
            }
        )
        for name in METRICS:
            for at, value, lost in source["compactions"]["summarize"][name].get(session, []):
                values.append(CompactionValue(session, "summarize", at, name, value, tuple(lost)))
    table = pd.DataFrame(rows)
    old_rule = compare(suite, before, table).comparisons  # sessions resampled only
    new_rule = compare(suite, before, table, values).comparisons
    [old], [new] = ([c for c in found if c.metric.name == metric] for found in (old_rule, new_rule))
    assert old.change == new.change < -0.02  # the same change, worse than the tolerance on average
    assert old.high == 0 and old.verdict in ("ok", "worse")  # a resample without the 3 sessions: no change
    assert new.verdict == "regression" and new.within_high < -0.02 <= new.high
    assert {session for session, _ in new.lost_facts} <= set(longest) and new.lost_facts
