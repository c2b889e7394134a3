"""The fast scores of a compaction equal the definition's, on every compaction of every bundled dataset.

`compactlab.scoring.compaction_scores.scored_afresh` is the definition of a compaction's scores;
a run scores with `scored_fast` (preservation and summary recall on the contexts' positions,
`compactlab.scoring.fast_scores`). Here every compaction a replay scores under a sweep's strategies
and the production agent's own compactions (which add re-acquisition) is scored both ways, each
way with nothing the other computed at hand, and the two must be equal, key for key.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

import compactlab.replay.replay as replay_module
from compactlab.contract import Trigger
from compactlab.memo import forget
from compactlab.replay.replay import replay
from compactlab.replay.setting import Setting
from compactlab.runs.run_config import RunConfig, windows_of
from compactlab.runs.sweep import DEFAULT_STRATEGIES
from compactlab.scoring.compaction_scores import scored_afresh, scored_fast
from compactlab.scoring.context_positions import held, item_table, positions
from compactlab.scoring.fast_scores import KEPT
from compactlab.scoring.matching import Item
from compactlab.scoring.preservation import session_text
from compactlab.sessions.datasets import list_datasets
from compactlab.sessions.importers import load_file
from compactlab.sessions.model import Message
from tests.conftest import bundled

WINDOW = 32_000  # small enough that every dataset's sessions compact, several times in the long ones
# A sweep's strategies at a low and a high threshold, with keep budgets where they have them, and
# the production agent's own compactions (scored with re-acquisition).
SETTINGS = (
    *(
        Setting(f"{name}@{fraction:g}", name, trigger=Trigger(fraction=fraction))
        for name in DEFAULT_STRATEGIES
        for fraction in (0.5, 0.85)
    ),
    Setting("summarize@0.7/keep=8000", "summarize", (("keep_recent_tokens", 8_000),), Trigger(fraction=0.7)),
    Setting("recorded", "recorded"),
)
SESSION = "-Users-dain-workspace-JSSoundRecorder__7acd37a8"  # a Claude Code session of hundreds of messages
Asked = tuple[Sequence[Message], int, Sequence[Message], Sequence[Message], bool]


def _files(dataset, every_file: bool) -> list:
    """Every file of the dataset, or its smallest and largest files and one between."""
    files = sorted(dataset.files, key=lambda path: path.stat().st_size)
    return list(dict.fromkeys(files if every_file else [files[0], files[len(files) // 2], files[-1]]))


def _compactions(dataset, every_file: bool, monkeypatch) -> list[list[Asked]]:
    """Every compaction the replays score, session by session, as the replay asks for its scores."""
    asked: list[Asked] = []
    scores = replay_module.compaction_scores
    monkeypatch.setattr(replay_module, "compaction_scores", lambda *args: asked.append(args) or scores(*args))
    windows = windows_of(RunConfig(window=WINDOW))
    by_session = []
    for path in _files(dataset, every_file):
        for session in load_file(path, lenient=dataset.lenient):
            asked.clear()
            for setting in SETTINGS:
                replay(session, setting, windows)
            by_session.append(list(asked))
    return by_session


# A local run checks three files of each dataset; CI checks every file (minutes: marked slow).
@pytest.mark.parametrize("every_file", [False, pytest.param(True, marks=pytest.mark.slow)], ids=["three-files", "every-file"])
@pytest.mark.parametrize("dataset", list_datasets(), ids=lambda d: d.name)
def test_fast_scores_equal_the_definitions_on_every_compaction(dataset, every_file: bool, monkeypatch) -> None:
    by_session = _compactions(dataset, every_file, monkeypatch)
    compactions = [c for session in by_session for c in session]
    if not compactions:  # a dataset without recorded LLM calls (condenser pairs): nothing is replayed
        assert all(not any(m.call for m in session.messages) for f in dataset.files for session in load_file(f))
        return
    fast, plain = [], []
    for session in by_session:  # each way as a run scores a session: its compactions in order, from nothing
        forget()
        fast += [scored_fast(*args) for args in session]
        forget()
        plain += [scored_afresh(*args) for args in session]
    forget()
    assert len(fast) == len(plain) == len(compactions)
    for args, got, wanted in zip(compactions, fast, plain):
        assert got == wanted, f"compaction before message {args[1]} scored apart"
    # The comparison covers what the fast path decides: items kept and lost, summary recall both ways.
    rows = [k5 for scores, _ in plain for k5 in [scores["k5"]] if k5["needed"]]
    assert any(row["lost"] for row in rows) and any(not row["lost"] for row in rows)
    assert any(row["only_dropped"] for row in rows)


def test_an_item_no_message_holds_is_held_by_none_beside_one_many_hold() -> None:
    """An item without occurrences (a command only the joined text holds, a text with a line break)
    next to one with many: the table's pass over the occurrences must not lend it its neighbour's."""
    [session] = load_file(bundled("claude-code-log", SESSION))
    messages = session.messages
    text = session_text(messages)
    index = len(messages) // 2
    context = messages[:index]
    common = max(
        (Item("identifier", w) for w in ("self", "import", "return", "const", "function")),
        key=lambda i: len(text.occurring(i, index)),
    )
    items = [Item("command", "no such command in this session"), common]
    assert not text.occurring(items[0], index) and text.occurring(common, index)
    classes = np.zeros(len(messages), dtype=np.uint8)
    classes[positions(text, context)] = KEPT
    where = item_table(text, items, index).where(classes)
    assert where[0] == 0 and where[1] & 1 << KEPT
    assert held(items, [w & 1 << KEPT > 0 for w in where], list, lambda: context) == text.in_context(items, context)
