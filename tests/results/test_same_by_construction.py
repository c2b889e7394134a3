"""Offline, settings that differ only in their prompts are one result: the rule that says so from
their construction, checked against the rows of real replays."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from compactlab.replay.replay import replay
from compactlab.replay.setting import Setting
from compactlab.results.same_by_construction import rendered_prompts, replayed_once, same_groups
from compactlab.runs import runs, session_job
from compactlab.runs.preview import compact, format_preview
from compactlab.runs.run_config import RunConfig
from compactlab.runs.run_storage import run_calls, run_compaction_rows
from compactlab.sessions.importers import load_file
from tests.conftest import bundled

SAME = ("summarize", "iterative-merge")  # openhands appends no file lists nor last request, as OpenHands
SESSIONS = (
    ("mini-swe-agent-pr816", "deepseek_chat_dev_rerun_pylint-dev__astroid-1333"),
    ("mini-swe-agent-pr816", "deepseek_chat_test_1-100_django__django-15213"),
    ("m-claude", "abc757d1-3da3-42fb-bb7b-ffa293a4ba29"),
)


def settings() -> list[Setting]:
    # seed-004 has its own emergency compaction (keeps window/5): not one of them.
    return [Setting(name, name) for name in (*SAME, "openhands", "seed-000", "seed-004", "pi")] + [
        Setting("summarize-4k", "summarize", (("keep_recent_tokens", 4000),)),
        Setting("summarize-llm", "summarize", (("summarizer", "llm"),)),
    ]


def test_the_rule_groups_settings_that_differ_only_in_prompts() -> None:
    [group] = same_groups(settings())
    assert (
        group.labels == SAME
    )  # not openhands (no file lists), archive (seed-000), seed-004 (its emergency rule), pi (its own cut), another cut, an LLM summarizer
    assert {"summary.j2", "update.j2", "turn_prefix.j2"} <= set(group.prompts_not_rendered)
    assert "needs an LLM [summarizer]" in group.why


def test_settings_the_rule_groups_make_the_same_compactions_on_real_sessions() -> None:
    compared = 0
    for dataset, stem in SESSIONS:
        # A small window, so that the sessions compact several times (a quarter of it is kept verbatim).
        [loaded] = load_file(bundled(dataset, stem))
        session = replace(loaded, context_window=64_000 if dataset == "m-claude" else 20_000)
        rows = {}
        for name in (*SAME, "seed-000"):
            done = replay(session, Setting(name, name))
            rows[name] = [
                (c.message_index, c.event.tokens_before, c.event.tokens_after, c.event.messages_after, c.summary, c.preservation)
                for c in done.compactions
            ]
            compared += len(done.compactions)
        assert rows["summarize"], stem
        assert all(rows[name] == rows["summarize"] for name in SAME), stem
        assert rows["seed-000"] != rows["summarize"]  # archive adds its pointer line
    assert compared > 20


def test_only_an_llm_summarizer_renders_its_prompts() -> None:
    offline = [Setting(name, name) for name in (*SAME, "seed-000", "pi")]
    assert rendered_prompts(offline) == set()
    with_llm = rendered_prompts([Setting("summarize-llm", "summarize", (("summarizer", "llm"),))])
    assert {"summary.j2", "update.j2", "turn_prefix.j2", "system.j2", "files.j2"} <= with_llm and "openhands.j2" not in with_llm


def test_preview_names_no_prompt_hash_when_no_prompt_was_rendered() -> None:
    [session] = load_file(bundled("m-claude", "abc757d1-3da3-42fb-bb7b-ffa293a4ba29"))
    shown = compact(session, "summarize")
    # The compaction carries the prompt set's hash (the gate notices a template change through the file
    # lists it renders), but no prompt was rendered: the preview does not name one.
    assert shown.event.changed and shown.event.prompt_hash and not shown.prompt_rendered
    assert "prompt " + shown.event.prompt_hash not in format_preview(shown)


def test_llm_free_settings_that_are_the_same_strategy_are_one_result_by_construction() -> None:
    masking = [
        Setting("observation-masking", "observation-masking"),
        Setting("masking-10", "observation-masking", (("keep_last", 10),)),  # the default, named
    ]
    [group] = same_groups(masking)
    assert group.labels == ("observation-masking", "masking-10") and not group.prompts_not_rendered
    assert "same strategy, settings, trigger and estimator" in group.why
    # The JetBrains preset masks the same way but runs as its source does (no loop guard, no task pinning:
    # `compactlab.contract.Harness`), so it is another result.
    assert same_groups([masking[0], Setting("jetbrains-masking", "jetbrains-masking")]) == []
    # Another window of observations, or another estimator for the bare strategy, is another result.
    assert same_groups([*masking[:1], Setting("mask-5", "observation-masking", (("keep_last", 5),))]) == []
    hybrid = Setting("masking-hybrid", "observation-masking", estimator="hybrid")
    assert same_groups([masking[0], hybrid], default_estimator="chars/4") == []
    # On a real session at a small window, both make the same compactions and the same calls.
    [loaded] = load_file(bundled("mini-swe-agent-pr816", "deepseek_chat_dev_rerun_pylint-dev__astroid-1333"))
    session = replace(loaded, context_window=20_000)
    done = [replay(session, config) for config in masking]
    rows = [[(c.message_index, c.event.tokens_before, c.event.tokens_after, c.preservation) for c in d.compactions] for d in done]
    assert rows[0] and rows[0] == rows[1]
    assert done[0].calls["context_tokens"] == done[1].calls["context_tokens"]


# Two groups identical by construction (summarize = iterative-merge: prompts only; observation-masking =
# masking-10: no LLM, the same masking with its default named) and two settings of their own.
RUN_SETTINGS = (
    Setting("summarize", "summarize"),
    Setting("iterative-merge", "iterative-merge"),
    Setting("observation-masking", "observation-masking"),
    Setting("masking-10", "observation-masking", (("keep_last", 10),)),
    Setting("jetbrains-masking", "jetbrains-masking"),
    Setting("truncate", "truncate"),
)


def _run_rows(out: Path) -> tuple[pd.DataFrame, list[dict]]:
    calls = run_calls(out).sort_values(["setting", "session", "call"]).reset_index(drop=True)
    compactions = sorted(run_compaction_rows(out), key=lambda r: (r["setting"], r["session"], r["call"]))
    return calls, compactions


def test_a_run_replays_settings_identical_by_construction_once_with_the_rows_of_replaying_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = [bundled(dataset, stem) for dataset, stem in SESSIONS]
    settings = RUN_SETTINGS
    assert replayed_once(settings) == {"iterative-merge": "summarize", "masking-10": "observation-masking"}
    # Compacting only where the production agent did is another result, whatever else is the same.
    assert replayed_once([settings[0], replace(settings[1], at_real_compactions=True)]) == {}
    replayed: list[str] = []

    def counted(session, config, *args, **kwargs):
        replayed.append(config.label)
        return replay(session, config, *args, **kwargs)

    monkeypatch.setattr(session_job, "replay", counted)  # in this process: one worker
    together = tmp_path / "together"
    runs.run(RunConfig(datasets=tuple(map(str, files)), strategies=settings, window=24_000), together, workers=1)
    # Decided before any work: the members are never replayed, each of the others once per session.
    once = ("summarize", "observation-masking", "jetbrains-masking", "truncate")
    assert sorted(replayed) == sorted(label for label in once for _ in files)
    calls, compactions = _run_rows(together)
    assert set(calls["setting"]) == {s.label for s in settings}  # reported under every name
    # Each setting replayed alone, in a run of its own: the same rows, row for row.
    alone_calls, alone_compactions = [], []
    for setting in settings:
        out = tmp_path / setting.label
        runs.run(RunConfig(datasets=tuple(map(str, files)), strategies=(setting,), window=24_000), out, workers=1)
        calls_alone, compactions_alone = _run_rows(out)
        alone_calls.append(calls_alone)
        alone_compactions += compactions_alone
    alone = pd.concat(alone_calls).sort_values(["setting", "session", "call"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(calls, alone)
    assert compactions == sorted(alone_compactions, key=lambda r: (r["setting"], r["session"], r["call"]))
    members = [r for r in compactions if r["setting"] == "iterative-merge"]
    assert len(members) > 10 and {r["strategy"] for r in members} == {"iterative-merge"}  # its own name
    assert any(r["setting"] == "masking-10" for r in compactions)


def test_a_summarize_subclass_with_code_of_its_own_is_never_one_result_with_summarize(tmp_path: Path) -> None:
    # Its settings equal summarize's, but its own code may compact otherwise: its rows are never copied.
    module = tmp_path / "own_summary.py"
    module.write_text(
        "from dataclasses import dataclass\n"
        "from compactlab.strategies.summarize import Summarize\n\n\n"
        "@dataclass(frozen=True)\n"
        "class Shorter(Summarize):\n"
        "    def compact(self, context, request):\n"
        "        return super().compact(context, request)\n"
    )
    own = Setting("shorter", f"{module}:Shorter")
    assert replayed_once([Setting("summarize", "summarize"), own]) == {}
    assert replayed_once([Setting("summarize", "summarize"), Setting("iterative-merge", "iterative-merge")])
