"""The replay's bookkeeping on real sessions, by numbers read off the raw files (`compactlab run` end to end: tests/runs/test_run_and_sweep.py)."""

from __future__ import annotations

import gzip
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from compactlab.contract import Trigger
from compactlab.replay.replay import replay, replay_plain
from compactlab.replay.setting import Setting
from compactlab.results.metrics import calls_frame, compactions_frame, compression_label, recorded_fidelity, session_summary
from compactlab.runs import run_result, runs
from compactlab.runs.run_config import RunConfig
from compactlab.sessions.importers import load_file
from compactlab.sessions.loading import ReadSession, load_inputs
from compactlab.sessions.model import CompactionMarker
from compactlab.tokens.context_windows import ContextWindows
from tests.conftest import REPO, bundled
from tests.runs.run_inputs import SESSIONS

MINI_PATH = bundled("mini-swe-agent-pr816", "deepseek_reasoner_dev_marshmallow-code__marshmallow-1343")
MINI = load_file(MINI_PATH)[0]
RAW = json.loads(gzip.decompress(MINI_PATH.read_bytes()))
RAW_USAGE = [m["extra"]["response"]["usage"] for m in RAW["messages"] if m["role"] == "assistant" and "extra" in m]
HUGE = ContextWindows(overrides={"": 10_000_000})


def test_without_compaction_the_replay_is_the_recording() -> None:
    replayed = replay(MINI, Setting("summarize", "summarize"), HUGE)
    assert replayed.compactions == []
    calls = calls_frame(replayed.calls)
    # Read off the raw file: 86 calls; the first prompts were 2,036, 2,461 and 2,726 tokens.
    assert len(calls) == len(RAW_USAGE) == 86
    assert calls["full_tokens"].tolist()[:3] == [2036, 2461, 2726]
    assert (calls["context_tokens"] == calls["full_tokens"]).all()
    assert calls["full_tokens"].sum() == sum(u["prompt_tokens"] for u in RAW_USAGE) == 1_427_583
    # The cache could serve the whole previous prompt of an uncompacted session.
    assert calls["full_prefix_tokens"].tolist()[1:3] == [2036, 2461]
    assert (calls["removed_tokens"] == 0).all()


def test_compaction_saves_tokens_from_the_compaction_on() -> None:
    window = 20_000
    replayed = replay(
        MINI, Setting("summarize", "summarize", trigger=Trigger(fraction=0.8)), ContextWindows(overrides={"": window})
    )
    calls = calls_frame(replayed.calls)
    compactions = compactions_frame(replayed.compactions)
    first = compactions.iloc[0]
    assert first["reason"] == "threshold" and first["tokens_before"] >= 0.8 * window
    assert first["tokens_after"] < first["tokens_before"]
    before = calls[calls["call"] < first["call"]]
    after = calls[calls["call"] >= first["call"]]
    assert (before["removed_tokens"] == 0).all()
    assert (after["removed_tokens"] > 0).all()
    assert (calls["full_tokens"] == [u["prompt_tokens"] for u in RAW_USAGE]).all()
    # The compaction changed the prompt from the summary on: the cache serves only the system prompt there.
    # (Under a fifth of the previous prompt, which a cache held whole: the compacted context itself is
    # small since its kept tail is budgeted in measured tokens, so the system prompt is a larger share of it.)
    at = calls[calls["call"] == first["call"]].iloc[0]
    previous = calls[calls["call"] == first["call"] - 1].iloc[0]
    assert at["compacted_before"] and at["prefix_tokens"] < 0.2 * previous["context_tokens"]
    summary = session_summary(calls, compactions).iloc[0]
    assert summary["billed_context"] == calls["context_tokens"].sum() < summary["billed_full"]
    assert summary["compactions"] == len(compactions[compactions["failed"].isna()])
    assert summary["peak_context"] <= window * 1.1 or summary["over_window_calls"] > 0
    assert first["preservation_k1"] is None or 0 <= first["preservation_k1"] <= 1


def test_recorded_strategy_replays_the_real_compaction() -> None:
    [compacted] = load_file(bundled("m-claude", "3af9b1a7"), lenient=True)
    replayed = replay(compacted, Setting("recorded", "recorded"), ContextWindows())
    [row] = replayed.compactions
    marker = compacted.compactions[0]
    # The summary, then what Claude Code re-attaches: four files and the todo list (tests/strategies/test_reattach.py).
    assert row.summary == marker.summary and row.event.messages_after == 6
    assert row.fidelity_recorded == 32_473  # the first prompt recorded after the real compaction
    assert row.fidelity_predicted is not None
    fidelity = recorded_fidelity(compactions_frame(replayed.compactions))
    # +10.5% under the shipped rules (one created document re-attached; see tests/strategies/test_reattach.py)
    assert len(fidelity) == 1 and abs(fidelity.loc[0, "relative_error"]) < 0.11
    # Other strategies never see the production summary: they replay the full history.
    other = replay(compacted, Setting("truncate", "truncate"), ContextWindows())
    assert all(c.summary != marker.summary for c in other.compactions)


def test_compression_label() -> None:
    assert compression_label(0.986) == "98.6% removed, 71.4× smaller"
    assert compression_label(0.5) == "50.0% removed, 2× smaller"
    # Below 2× the ratio only restates the share, less clearly ("1.03× smaller"): it is left out.
    assert compression_label(0.03) == "3.0% removed"
    assert compression_label(0.0) == "0.0% removed"


def test_a_walked_replay_keeps_the_books_as_the_shared_uncompacted_one() -> None:
    # Settings copy the uncompacted replay's rows until their first compaction and walk on from
    # there. A trigger that fires at the first call makes truncate (nothing to cut in a one-task
    # session) walk the whole session without changing it: its rows must be the shared ones, and
    # the attempt that changed nothing is no compaction (counted as such, once: the guard holds).
    walked = replay(MINI, Setting("t", "truncate", trigger=Trigger(fraction=0.0001)), HUGE)
    assert walked.compactions == []
    shared = calls_frame(replay(MINI, Setting("t", "truncate"), HUGE).calls)
    walked_calls = calls_frame(walked.calls)
    columns = ["message_index", "full_tokens", "context_tokens", "prefix_tokens", "full_prefix_tokens", "over_window"]
    pd.testing.assert_frame_equal(walked_calls[columns], shared[columns])
    assert (walked_calls["compactions_so_far"] == 0).all() and not walked_calls["compacted_before"].any()
    assert walked_calls["noop_before"].tolist() == [1] + [0] * 85
    summary = session_summary(walked_calls, compactions_frame(walked.compactions)).iloc[0]
    assert summary["compactions"] == 0 and summary["noop_compactions"] == 1 and summary["removed_share"] == 0


COASTING_CASES = [
    # (session, setting, window): many compactions; the hybrid estimator and the production
    # agent's compaction markers (3af9b1a7); windows so small that prompts overflow.
    (MINI, Setting("s", "summarize", trigger=Trigger(fraction=0.5), estimator="tiktoken-o200k"), 12_000),
    (
        MINI,
        Setting("m", "observation-masking", settings=(("keep_last", 2),), trigger=Trigger(fraction=0.3), estimator="chars/4"),
        10_000,
    ),
    ("3af9b1a7", Setting("x", "extractive", trigger=Trigger(fraction=0.9)), 30_000),
    (
        MINI,
        Setting(
            "p",
            "prune",
            settings=(("protect_turns", 0), ("protect_tokens", 1_000), ("minimum_tokens", 500)),
            trigger=Trigger(reserve_tokens=2_000),
        ),
        9_000,
    ),
    ("markers", Setting("s", "summarize", trigger=Trigger(fraction=0.5)), 12_000),
    ("3af9b1a7", Setting("s", "summarize", trigger=Trigger(fraction=0.6)), 40_000),
    (
        "3af9b1a7",
        Setting("m", "observation-masking", settings=(("keep_last", 3),), trigger=Trigger(warning=0.5, critical=0.7)),
        30_000,
    ),
]


@pytest.mark.parametrize(("session", "setting", "window"), COASTING_CASES)
def test_stretches_rowed_in_bulk_equal_walking_call_by_call(session, setting: Setting, window: int) -> None:
    # Between compactions the fast replay rows calls in bulk (compactlab.replay.fast.coasting); it must
    # give exactly the rows and compactions of the plain replay, which asks the engine at every call.
    if session == "markers":  # production compactions between calls, which a bulk stretch passes
        at = [i for i, m in enumerate(MINI.messages) if m.call is None and i > len(MINI.messages) // 2]
        session = replace(MINI, compactions=tuple(CompactionMarker(i, "auto", None, "earlier work") for i in at))
    elif isinstance(session, str):
        [session] = load_file(bundled("m-claude", session), lenient=True)
    windows = ContextWindows(overrides={"": window})
    coasted = replay(session, setting, windows)
    walked = replay_plain(session, setting, windows)
    assert len(walked.compactions) >= 3
    assert coasted.calls == walked.calls
    assert coasted.compactions == walked.compactions


def test_trigger_fires_from_its_lowest_level() -> None:
    # Replays find the first call a trigger fires at from this one number.
    triggers = [
        Trigger(),
        Trigger(fraction=0.55),
        Trigger(absolute=30_000),
        Trigger(reserve_tokens=8_192),
        Trigger(fraction=0.9, reserve_tokens=30_000),
        Trigger(warning=0.75, critical=0.9),
        Trigger(critical=0.95, absolute=50_000),
    ]
    for trigger in triggers:
        for window in (64_000, 128_000, 200_000, 131_071):
            level = trigger.fires_from(window)
            around = range(int(level) - 3, int(level) + 4)
            assert all((trigger.check(t, window) is not None) == (t >= level) for t in (*around, 0, window, 2 * window)), (
                trigger,
                window,
            )


def test_a_process_counts_each_distinct_text_once_across_sessions_and_settings(tmp_path: Path, monkeypatch) -> None:
    # The mini-swe-agent sessions repeat their system prompt and instructions: a run counts each
    # text once for all of them, and for every setting.
    from compactlab.runs import session_job
    from compactlab.tokens import tokenizers

    # (The run's token-estimation counts the same texts in the other encodings too: each once.)
    real = tokenizers.get_encoding
    encoded: list[tuple[str, str]] = []

    class Counting:
        def __init__(self, name: str) -> None:
            self.name, self.encoding = name, real(name)

        def encode(self, text, **options):
            encoded.append((self.name, text))
            return self.encoding.encode(text, **options)

    monkeypatch.setattr(tokenizers, "get_encoding", Counting)
    # A replaying process's cache starts afresh past CACHED_CHARS (memory flat in corpus size, issue 31);
    # this dataset's texts in three encodings pass 4 million characters, so the reuse is pinned with
    # a cache that holds them all (tests/tokens/test_estimators.py pins the bound: test_a_bounded_cache_starts_afresh_and_counts_the_same).
    monkeypatch.setattr(session_job, "CACHED_CHARS", 50_000_000)
    settings = tuple(
        Setting(f"m{f}", "observation-masking", trigger=Trigger(fraction=f), estimator="tiktoken-o200k") for f in (0.3, 0.6)
    )
    result = runs.run(RunConfig(datasets=("mini-swe-agent-pr816",), strategies=settings), tmp_path / "run", workers=1)
    assert len(result.read.sessions) > 30 and result.compactions["setting"].nunique() == 2
    assert len(encoded) == len(set(encoded))
    sessions = load_inputs(["mini-swe-agent-pr816"]).sessions
    assert len({t.messages[1].text() for t in sessions}) < len(sessions)  # texts the sessions share were there to count twice


def test_a_run_keeps_of_each_session_its_identity_skips_and_recorded_call_counts(tmp_path: Path) -> None:
    config = RunConfig(datasets=("m-claude",), strategies=(Setting("t", "truncate"),), lenient=True)
    result = runs.run(config, tmp_path / "run", workers=2)
    loaded = load_inputs(["m-claude"], lenient=True).sessions
    assert result.read.sessions == tuple(ReadSession.counted(t) for t in loaded)
    assert any(t.skipped for t in result.read.sessions)  # m-claude has damaged records
    # Not the recorded calls themselves: a run's memory must not grow with its sessions.
    assert all(
        kept.call_count == len(t.calls) and kept.models == tuple(dict.fromkeys(c.model for c in t.calls)) and not kept.calls
        for kept, t in zip(result.read.sessions, loaded)
    )


def test_text_columns_sent_as_codes_join_into_the_frame_the_texts_make() -> None:
    from compactlab.runs.text_codes import joined_text, text_codes

    replays = [
        replay(MINI, Setting(label, "truncate", trigger=Trigger(fraction=f))).calls for label, f in (("a", 0.3), ("b", 0.9))
    ]
    texts = {name: [v for r in replays for v in r[name]] for name in ("session", "setting", "model")}
    joined = {name: joined_text([text_codes(r[name]) for r in replays]) for name in texts}
    pd.testing.assert_frame_equal(pd.DataFrame(joined), pd.DataFrame(texts))
    assert set(texts["setting"]) == {"a", "b"}
    with_missing = [["gpt-5", None], ["gpt-5", "claude"]]  # a source without a model name
    joined = joined_text([text_codes(part) for part in with_missing])
    pd.testing.assert_frame_equal(pd.DataFrame({"m": joined}), pd.DataFrame({"m": [v for part in with_missing for v in part]}))


def test_first_stop_is_the_first_call_where_the_trigger_fires_or_the_prompt_overflows() -> None:
    from compactlab.replay.uncompacted import uncompacted
    from compactlab.tokens.metering import Meter

    overflowing = []
    for session in (MINI, load_file(bundled("m-claude", "21e3c711"), lenient=True)[0]):
        for window in (12_000, 40_000, 10_000_000):
            base = uncompacted(Meter(session, "tiktoken-o200k"), window)
            trigger, over = base.arrays["trigger"], base.arrays["over"]
            overflowing.append(over.any() and not over.all())
            sizes = sorted(set(trigger.tolist()))
            for fires_from in [
                0,
                float("inf"),
                *sizes[:: max(1, len(sizes) // 40)],
                *(s + 0.5 for s in sizes[:: max(1, len(sizes) // 40)]),
            ]:
                stops = np.flatnonzero((trigger >= fires_from) | over)
                assert base.first_stop(fires_from) == (int(stops[0]) if len(stops) else None)
    assert any(overflowing)  # a small window overflows somewhere, not everywhere


def test_a_run_makes_each_settings_strategy_once_not_per_session(tmp_path: Path) -> None:
    # A strategy in the user's repository is a file the registry executes when it makes one.
    counter = tmp_path / "made.txt"
    (tmp_path / "mine.py").write_text(
        "from pathlib import Path\nfrom compactlab.strategies.truncate import Truncate\n"
        f"with open({str(counter)!r}, 'a') as f:\n    f.write('x')\n"
        "class Mine(Truncate):\n    pass\n"
    )
    config = RunConfig(
        datasets=("claude-code-log",),
        strategies=(Setting("mine", f"{tmp_path / 'mine.py'}:Mine", trigger=Trigger(fraction=0.3)),),
    )
    result = runs.run(config, tmp_path / "run", workers=1)
    assert len(result.read.sessions) > 30 and not result.compactions.empty
    assert len(counter.read_text()) == 1  # made once, when the run starts


def test_a_fresh_run_groups_its_rows_by_codes_as_a_run_read_back_groups_its_texts(tmp_path: Path) -> None:
    # finish groups a fresh run's rows by the codes its text columns travelled as (models for the
    # costs, session x config for the summary); reading the rows back groups the texts themselves.
    strategies = (
        Setting("trunc", "truncate", trigger=Trigger(fraction=0.5)),
        Setting("mask", "observation-masking"),
    )
    # Four sessions of three agents (tests/runs/run_inputs.py) rather than two whole datasets: several
    # models, and files replayed in two worker processes whose codes the run merges.
    config = RunConfig(datasets=tuple(map(str, SESSIONS)), strategies=strategies)
    fresh = runs.run(config, tmp_path / "run", workers=2)
    assert fresh.calls["model"].nunique() > 1 and fresh.sessions["setting"].nunique() == 2
    read_back = run_result.finish(tmp_path / "run", fresh.read)
    pd.testing.assert_frame_equal(read_back.sessions, fresh.sessions)
    pd.testing.assert_frame_equal(read_back.calls[["cost_full", "cost_context"]], fresh.calls[["cost_full", "cost_context"]])


def test_only_the_walk_writes_its_state() -> None:
    # `Walk` has methods for what the fast path hands it (start_at, coasted, production_compaction):
    # no other module of the replay assigns to a walk's fields.
    import ast

    writers = []
    for path in sorted((REPO / "bench" / "replay").rglob("*.py")):
        if path.name == "walk.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AugAssign) else []
            for target in targets:
                while isinstance(target, ast.Subscript):
                    target = target.value
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "walk":
                    writers.append(f"{path.name}:{node.lineno}")
                elif (
                    isinstance(target, ast.Attribute) and isinstance(target.value, ast.Attribute) and target.value.attr == "rows"
                ):
                    writers.append(f"{path.name}:{node.lineno}")
    assert writers == []
