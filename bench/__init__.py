"""compactlab: replay real agent sessions through interchangeable context-compaction strategies
and measure what each one loses and costs.

The public API is the names in `__all__`; every other module is internal and may change.

    import compactlab

    loaded = compactlab.load_inputs(["claude-code-log"])          # files, folders or dataset names
    result = compactlab.run(compactlab.RunConfig(), "out")         # RunResult: .sessions, .calls, .compactions
    result.leaderboard(), result.recommendation()                  # what `compactlab run` prints
    result.write_report("out/report.html")                         # and its HTML report
    swept = compactlab.sweep(compactlab.RunConfig(), "sweep")       # `compactlab sweep`: .recommended_toml
    shown = compactlab.compact(loaded.sessions[0], "summarize")  # one compaction, before and after

A strategy is a frozen dataclass with one method, `compact(context, request) -> CompactionResult`
(see `Strategy`), registered through the `compactlab.strategies` entry-point group.

Names are imported when first used, so that `import compactlab` (and the pytest plugin) stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from compactlab.version import compactlab_version

if TYPE_CHECKING:
    from compactlab.api import RunResult, run, sweep
    from compactlab.contract import CompactionRequest, CompactionResult, Context, Strategy, Trigger
    from compactlab.replay.setting import Setting
    from compactlab.runs.preview import compact
    from compactlab.runs.run_config import RunConfig
    from compactlab.sessions.loading import load_inputs
    from compactlab.strategies.registry import get_strategy
    from compactlab.tokens.estimators import get_estimator

__version__ = compactlab_version() or "0+unknown"

_WHERE = {
    "load_inputs": "compactlab.sessions.loading",
    "run": "compactlab.api",
    "sweep": "compactlab.api",
    "RunResult": "compactlab.api",
    "RunConfig": "compactlab.runs.run_config",
    "Setting": "compactlab.replay.setting",
    "compact": "compactlab.runs.preview",
    "Strategy": "compactlab.contract",
    "Context": "compactlab.contract",
    "CompactionRequest": "compactlab.contract",
    "CompactionResult": "compactlab.contract",
    "Trigger": "compactlab.contract",
    "get_strategy": "compactlab.strategies.registry",
    "get_estimator": "compactlab.tokens.estimators",
}
__all__ = ["__version__", *_WHERE]


def __getattr__(name: str) -> object:
    if name not in _WHERE:
        raise AttributeError(f"module 'compactlab' has no attribute {name!r}; the public names are {sorted(_WHERE)}")
    value = getattr(importlib.import_module(_WHERE[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))
