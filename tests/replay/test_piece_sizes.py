"""The walk's piece sizes equal the engine's definition, on every bundled dataset.

`Engine.piece_size_plain` is the definition of a piece's size (two contexts measured by the
engine's meter, their difference); a replay answers it with `Walk.piece_size` where it can, which
sums the piece's message estimates instead. Here every piece the strategies ask for during real
replays is answered both ways, in turn, and must agree, leaving the walk as the definition leaves it.
Likewise every context eviction's replays measure (`Walk.engine_meter` against `Walk.engine_meter_plain`).
(`tests/replay/test_fast_path_equals_plain.py` checks the rows the faster answers lead to.)
"""

from __future__ import annotations

import operator

import pytest

from compactlab.compaction.engine import Engine
from compactlab.contract import Trigger
from compactlab.replay.replay import replay
from compactlab.replay.setting import Setting
from compactlab.replay.walk import Walk
from compactlab.runs.run_config import RunConfig, windows_of
from compactlab.sessions.datasets import list_datasets
from compactlab.sessions.importers import load_file

WINDOW = 32_000  # small enough that every dataset's sessions compact
# Each strategy that budgets with pieces: tails (summarize, its presets), single messages and
# parts (observation masking, prune, evict), at two thresholds.
SETTINGS = tuple(
    Setting(f"{name}@{fraction}", name, trigger=Trigger(fraction=fraction))
    for name in ("summarize", "observation-masking", "prune", "evict", "pi", "claude-code")
    for fraction in (0.5, 0.8)
)


@pytest.mark.parametrize("dataset", list_datasets(), ids=lambda d: d.name)
def test_the_walks_piece_sizes_equal_the_definition(dataset, monkeypatch) -> None:
    answered: list[int] = []
    fallen_back: list[int] = []

    def both(engine: Engine, messages) -> int:
        walk = engine.piece_sizes.__self__  # type: ignore[union-attr]  # the replay's Walk, whose method it is
        fast = walk.piece_size(messages)
        counted = walk.counted
        plain = engine.piece_size_plain(messages)
        if fast is None:
            fallen_back.append(plain)
        else:
            assert fast == plain, (dataset.name, len(messages))
            assert counted[0] is walk.counted[0] and counted[1] == walk.counted[1]  # the walk left as the definition leaves it
            answered.append(fast)
        return plain

    monkeypatch.setattr(Engine, "piece_size", both)
    _replay_sample(dataset, SETTINGS)
    if not answered and not fallen_back:  # a dataset whose sessions never compact (or have no calls)
        pytest.skip(f"{dataset.name}: no compaction asked for a piece")
    assert answered, f"{dataset.name}: every piece fell back to the definition, so nothing was compared"


@pytest.mark.parametrize("dataset", list_datasets(), ids=lambda d: d.name)
def test_the_walks_context_sizes_equal_the_definition(dataset, monkeypatch) -> None:
    """`Walk.engine_meter` sizes the walk's own context in another tuple (eviction sizes the context
    it is given so) from its running sum; `Walk.engine_meter_plain` counts it anew. Every context
    the engine measures in real eviction replays is sized both ways and must agree."""
    from_running_sum: list[int] = []
    fast_meter, plain_meter = Walk.engine_meter, Walk.engine_meter_plain

    def both(walk: Walk, context) -> int:
        built = walk.last_built
        fast = fast_meter(walk, context)
        plain = plain_meter(walk, context)  # and the walk goes on as the definition leaves it
        assert fast == plain, (dataset.name, len(context.messages))
        same = built is not None and len(built.messages) == len(context.messages)
        if same and context.messages is not built.messages and all(map(operator.is_, built.messages, context.messages)):
            from_running_sum.append(fast)  # the case the running sum answers
        return plain

    monkeypatch.setattr(Walk, "engine_meter", both)
    _replay_sample(dataset, [Setting(f"evict@{f}", "evict", trigger=Trigger(fraction=f)) for f in (0.5, 0.8)])
    if not from_running_sum:
        pytest.skip(f"{dataset.name}: eviction never sized its context")


def _replay_sample(dataset, settings) -> None:
    """Replay the dataset's smallest and largest files and one between under each setting."""
    config = RunConfig(window=WINDOW)
    files = sorted(dataset.files, key=lambda path: path.stat().st_size)
    for path in list(dict.fromkeys([files[0], files[len(files) // 2], files[-1]])):
        for session in load_file(path, lenient=dataset.lenient):
            for setting in settings:
                replay(session, setting, windows_of(config))
