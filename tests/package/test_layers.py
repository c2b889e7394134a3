"""The layer order of compactlab's packages, and no import cycles, counting every import.

Data flows one way: transcripts → tokens → strategies → compaction → llm → scoring → replay → results →
runs → report → gate → cli. A module may import its own stage and the stages below it, never one
above, not even inside a function or under TYPE_CHECKING; and no two modules import each other,
directly or around a loop. The strategy contract (`compactlab.contract`) sits just above the
transcript model it speaks of and imports nothing else.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# Bottom first. A stage is a subpackage of compactlab or one of its top-level modules.
LAYERS = [
    "version",
    "memo",
    "transcripts",
    "contract",
    "tokens",
    "strategies",
    "compaction",
    "llm",  # provider clients, the call cache, prices and call limits
    "scoring",
    "replay",
    "results",
    "runs",
    "report",
    "gate",
    "cli",
    "measure",
    "pytest_plugin",
    "api",  # compactlab.api: the Python API's run and sweep, which write reports
    "",  # compactlab/__init__.py: the public API, above everything it names
]
RANK = {name: rank for rank, name in enumerate(LAYERS)}


def _module_name(path: Path) -> str:
    """The installed name of a repository file: bench/ is the package, strategies/ its subpackage."""
    rel = path.relative_to(REPO).with_suffix("")
    parts = list(rel.parts)
    parts = ["compactlab"] + (parts[1:] if parts[0] == "bench" else parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    files = sorted((REPO / "bench").rglob("*.py")) + sorted((REPO / "strategies").rglob("*.py"))
    return {_module_name(path): path for path in files}


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """Every compactlab module `name` imports, anywhere in the file."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            for alias in node.names:
                submodule = f"{module}.{alias.name}"
                found.add(submodule if submodule in known else module)
    return {module for module in found if module in known and module != name}


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, set(modules)) for name, path in modules.items()}


def test_every_stage_is_placed():
    assert {_layer(module) for module in _graph()} <= set(LAYERS)


def test_no_module_imports_a_stage_above_its_own():
    upward = [
        f"{module} ({_layer(module) or 'compactlab'}) imports {target} ({_layer(target) or 'compactlab'})"
        for module, targets in _graph().items()
        for target in sorted(targets)
        if RANK[_layer(target)] > RANK[_layer(module)]
    ]
    assert upward == []


def test_no_import_cycles():
    graph = _graph()
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    cycles: list[list[str]] = []

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(graph[module]):
            if state.get(target) == 1:
                cycles.append(path[path.index(target) :] + [target])
            elif target not in state:
                visit(target, path + [target])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert [" → ".join(cycle) for cycle in cycles] == []


def test_the_contract_imports_only_the_transcript_model():
    assert _graph()["compactlab.contract"] == {"compactlab.transcripts.model"}


def test_nothing_names_the_old_top_level_packages():
    old = [
        f"{path.relative_to(REPO)}:{node.lineno}"
        for path in _modules().values()
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


@pytest.mark.parametrize("module", ["compactlab.transcripts.model", "compactlab.version"])
def test_the_bottom_imports_no_compactlab_module(module):
    assert _graph()[module] == set()


def test_the_readme_layout_names_every_stage():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    layout = readme[readme.index("## Layout") :].split("\n## ", 1)[0]
    stages = sorted(p.parent.name for p in (REPO / "bench").glob("*/__init__.py"))
    modules = sorted(p.name for p in (REPO / "bench").glob("*.py"))
    assert [s for s in stages if f"bench/{s}/" not in layout] == []
    assert [m for m in modules if f"bench/{m}" not in layout] == []
