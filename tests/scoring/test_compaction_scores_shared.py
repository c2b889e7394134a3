"""A compaction that several settings of a sweep make alike is scored once, and each setting's rows
are the rows it gets replayed alone."""

from __future__ import annotations

from dataclasses import replace

import pytest

from compactlab.memo import forget
from compactlab.replay.replay import replay
from compactlab.replay.shared_compactions import shared_by_setting
from compactlab.runs.run_config import RunConfig, windows_of
from compactlab.runs.sweep import grid
from compactlab.scoring import compaction_scores
from compactlab.sessions.importers import load_file
from compactlab.strategies.registry import get_strategy
from compactlab.tokens.metering import Meter
from tests.conftest import bundled
from tests.scripts.speed_sweep import THRESHOLDS

# Claude Code sessions whose context jumps past several thresholds at one call, so that settings
# differing only in their trigger make some compactions alike (tests/replay/test_shared_compactions.py).
SESSIONS = {
    "summarize": "-Users-dain-workspace-JSSoundRecorder__7acd37a8",
    "observation-masking": "-Users-dain-workspace-coderabbit-review-helper__cb2e607c",
}


@pytest.mark.parametrize("name", list(SESSIONS))
def test_alike_compactions_are_scored_once_and_rows_equal_each_setting_alone(name, monkeypatch) -> None:
    [session] = load_file(bundled("claude-code-log", SESSIONS[name]))
    settings = [replace(c, estimator="tiktoken-o200k") for c in grid([name], THRESHOLDS, (16_000,))]
    windows = windows_of(RunConfig())
    alone = []
    for setting in settings:
        forget()  # nothing an earlier setting scored is at hand: each setting's scores made afresh
        alone.append(replay(session, setting, windows))
    forget()
    afresh = []
    scored = compaction_scores.scored_afresh
    monkeypatch.setattr(compaction_scores, "scored_afresh", lambda *args: afresh.append(args) or scored(*args))
    # As a run replays them: one meter, the compactions of equal strategies shared.
    sharing = shared_by_setting({c.label: get_strategy(c.strategy, **dict(c.settings)) for c in settings})
    meter = Meter(session, "tiktoken-o200k")
    together = [replay(session, c, windows, meter=meter, strategy=sharing[c.label]) for c in settings]
    assert [r.compactions for r in together] == [r.compactions for r in alone]
    rows = [row for r in together for row in r.compactions if row.preservation is not None]
    assert len(afresh) < len(rows)  # some compactions were made alike by several settings, scored once
    # Each row holds its own dicts: a change to one setting's scores is no change to another's.
    held = [id(d) for row in rows for d in row.preservation.values()]
    assert len(held) == len(set(held))


def test_scores_equal_scoring_afresh_and_tell_contexts_apart() -> None:
    [session] = load_file(bundled("claude-code-log", SESSIONS["summarize"]))
    messages = session.messages
    index = next(i for i, m in enumerate(messages) if m.role == "assistant" and i > len(messages) // 2)
    before, after = messages[:index], messages[:2] + messages[index - 4 : index]
    forget()
    first = compaction_scores.compaction_scores(messages, index, before, after, False)
    assert first == compaction_scores.scored_afresh(messages, index, before, after, False)
    # Other contexts after of the same length (other ends; the same ends, another message between them)
    # are scored as themselves, not found in the memo.
    for other in (messages[:2] + messages[index - 6 : index - 2], messages[:1] + messages[3:4] + messages[index - 4 : index]):
        assert other != after and len(other) == len(after)
        assert compaction_scores.compaction_scores(messages, index, before, other, False) == compaction_scores.scored_afresh(
            messages, index, before, other, False
        )
    # The same context as new tuples of the same messages: the same scores, in dicts of its own.
    again = compaction_scores.compaction_scores(messages, index, tuple(before), tuple(after), False)
    assert again == first and all(again[0][k] is not first[0][k] for k in first[0])
