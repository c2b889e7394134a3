"""Which stage of compactlab may import which, and no import cycles, counting every import.

Data flows one way: sessions → tokens → strategies → compaction → llm → scoring → replay → results →
runs → report → gate → cli. `ALLOWED` lists, for every stage, the stages it may import: the design's
arrows, each pointing down that order (checked), never one the order allows but the design does not
(`replay/fast/` is the replay's own speed machinery: no other stage reaches into it). The import graph
(tests/package/layer_graph.py) counts imports inside functions and under TYPE_CHECKING, `importlib` imports
by literal name, the strategy entry points the registry loads, and the package `__init__` code an
import runs; no two modules import each other, directly or around a loop. The strategy contract
(`compactlab.contract`) sits just above the session model it speaks of and imports nothing else.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

from tests.package.layer_graph import REGISTRY, REPO, cycles, entry_point_modules, graph, modules

# The order of the stages, bottom first. A stage is a subpackage of compactlab or one of its
# top-level modules; "replay.fast" (compactlab.replay.fast) is the replay's private part, at its rank.
ORDER = [
    "version",
    "memo",
    "registry",  # compactlab.registry: the one registry type (strategies, importers, metrics)
    "sessions",
    "contract",
    "tokens",
    "strategies",
    "authoring",  # compactlab.authoring: what a strategy author imports (the contract, records, cut helpers)
    "compaction",
    "llm",  # provider clients, the call cache, prices and call limits
    "scoring",
    "replay",  # with replay.fast, its private part
    "results",
    "runs",
    "report",
    "gate",
    "cli",
    "pytest_plugin",
    "api",  # compactlab.api: the Python API's run and sweep, which write reports
    "",  # compactlab/__init__.py: the public API, above everything it names
]
# Stage → the stages its modules may import (besides its own).
ALLOWED: dict[str, set[str]] = {
    "version": set(),
    "memo": set(),
    "registry": set(),
    "sessions": {"memo", "registry"},
    "contract": {"sessions"},
    "tokens": {"memo", "sessions", "contract"},
    "strategies": {"memo", "registry", "sessions", "contract"},
    "authoring": {"sessions", "contract", "strategies"},
    "compaction": {"sessions", "contract"},
    "llm": {"sessions", "contract", "tokens", "compaction"},
    "scoring": {"memo", "sessions", "strategies", "llm"},
    "replay": {"memo", "sessions", "contract", "tokens", "strategies", "compaction", "scoring", "replay.fast"},
    "replay.fast": {"contract", "replay"},  # it rows calls as the replay defines them
    "results": {"sessions", "contract", "tokens", "strategies", "llm", "scoring", "replay"},
    "runs": {"memo", "sessions", "contract", "tokens", "strategies", "compaction", "llm", "scoring", "replay", "results"},
    "report": {"sessions", "tokens", "strategies", "llm", "scoring", "replay", "results", "runs"},
    "gate": {"sessions", "contract", "strategies", "llm", "scoring", "results", "runs"},
    "cli": {"version", "sessions", "tokens", "strategies", "llm", "results", "runs", "report", "gate"},
    "pytest_plugin": {"strategies", "scoring", "runs", "gate"},
    "api": {"results", "runs", "report"},
    "": {"version", "sessions", "contract", "tokens", "strategies", "replay", "runs", "api"},
}
# Arrows the order allows but the design does not: none is left. Each one added would be listed
# here, so that no new one joins it unseen. The transport of rows between processes moved beside the
# executor (runs/call_rows.py, runs/text_codes.py), and the compactions settings share moved out of
# replay/fast (replay/shared_compactions.py: a service the replay offers a run, not speed machinery
# hidden behind a plain definition), which removed the five arrows runs and results had into replay/fast.
KNOWN_EXCEPTIONS: set[tuple[str, str]] = set()


def stage(module: str) -> str:
    parts = module.split(".")
    if parts[1:3] == ["replay", "fast"]:
        return "replay.fast"
    return parts[1] if len(parts) > 1 else ""


def forbidden(arrows: dict[str, set[str]]) -> list[str]:
    """Every arrow between two stages that ALLOWED does not list, known exceptions aside."""
    return [
        f"{module} ({stage(module) or 'compactlab'}) imports {target} ({stage(target) or 'compactlab'})"
        for module, targets in sorted(arrows.items())
        for target in sorted(targets)
        if stage(target) != stage(module)
        and stage(target) not in ALLOWED[stage(module)]
        and (module, target) not in KNOWN_EXCEPTIONS
    ]


@functools.cache
def _graph() -> dict[str, set[str]]:
    return graph()


def test_every_stage_is_placed():
    assert {stage(module) for module in _graph()} <= set(ORDER) | {"replay.fast"} == set(ALLOWED)


def test_the_allowed_arrows_point_down_the_order():
    rank = {name: rank for rank, name in enumerate(ORDER)} | {"replay.fast": ORDER.index("replay")}
    upward = [(a, b) for a, targets in ALLOWED.items() for b in sorted(targets) if rank[b] > rank[a]]
    level = [(a, b) for a, targets in ALLOWED.items() for b in sorted(targets) if rank[b] == rank[a]]
    assert upward == [] and level == [("replay", "replay.fast"), ("replay.fast", "replay")]


def test_every_import_is_an_allowed_stage_pair():
    assert forbidden(_graph()) == []


def test_the_known_exceptions_are_still_there():
    """An exception that is gone must leave the list, or it would excuse the next arrow of its kind."""
    arrows = _graph()
    assert sorted((a, b) for a, b in KNOWN_EXCEPTIONS if b not in arrows.get(a, set())) == []


def test_an_upward_importlib_import_fails_the_check(tmp_path: Path):
    """The reader sees an import by name: a session module loading the report by importlib."""
    probe = tmp_path / "probe.py"
    probe.write_text('import importlib\n\n\ndef later():\n    return importlib.import_module("compactlab.report.run_report")\n')
    arrows = graph(extra={"compactlab.sessions.probe": probe.read_text(encoding="utf-8")})
    assert forbidden(arrows) == ["compactlab.sessions.probe (sessions) imports compactlab.report.run_report (report)"]
    dunder = graph(extra={"compactlab.tokens.probe": '__import__("compactlab.runs.runs")\n'})
    assert forbidden(dunder) == ["compactlab.tokens.probe (tokens) imports compactlab.runs.runs (runs)"]


def test_the_registry_imports_every_entry_point_module():
    registered = entry_point_modules()
    assert "compactlab.strategies.truncate" in registered and "compactlab.strategies.presets" in registered
    assert registered <= _graph()[REGISTRY]


def test_an_import_runs_the_package_init_with_code():
    """Importing compactlab.llm.prices from outside compactlab.llm runs compactlab/llm/__init__.py,
    which imports every LLM module: the importer imports the package."""
    arrows = _graph()
    importers = [module for module, targets in arrows.items() if "compactlab.llm.prices" in targets]
    outside = [m for m in importers if m != "compactlab.llm" and not m.startswith("compactlab.llm.")]
    assert outside and all("compactlab.llm" in arrows[m] for m in outside)
    # A package that is only a docstring runs nothing.
    assert not any("compactlab.report" in targets for targets in arrows.values())


def test_no_import_cycles():
    assert [" → ".join(cycle) for cycle in cycles(_graph())] == []


def test_the_contract_imports_only_the_session_model():
    assert _graph()["compactlab.contract"] == {"compactlab.sessions.model"}


def test_nothing_names_the_old_top_level_packages():
    old = [
        f"{path.relative_to(REPO)}:{node.lineno}"
        for path in modules().values()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom | ast.Import)
        and any(
            name.split(".")[0] in ("bench", "strategies")
            for name in (
                [node.module or ""]
                if isinstance(node, ast.ImportFrom) and not node.level
                else [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else []
            )
        )
    ]
    assert old == []


@pytest.mark.parametrize("module", ["compactlab.sessions.model", "compactlab.version"])
def test_the_bottom_imports_no_compactlab_module(module):
    assert _graph()[module] == set()


def test_the_layout_page_names_every_stage():
    layout = (REPO / "docs" / "layout.md").read_text(encoding="utf-8")
    stages = sorted(p.parent.name for p in (REPO / "bench").glob("*/__init__.py"))
    files = sorted(p.name for p in (REPO / "bench").glob("*.py"))
    assert [s for s in stages if f"bench/{s}/" not in layout] == []
    assert [f for f in files if f"bench/{f}" not in layout] == []
