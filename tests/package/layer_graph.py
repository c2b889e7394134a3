"""The import graph of compactlab's modules, as Python runs it, for tests/package/test_layers.py.

An arrow A → B means that importing A may run B. Read from the source, without importing anything:
- `import` and `from ... import` statements anywhere in a file (inside functions and under
  `TYPE_CHECKING` too: an import that runs late still ties the two modules together);
- `importlib.import_module("compactlab...")` and `__import__("compactlab...")` with a literal name;
- the `compactlab.strategies` entry points in pyproject.toml: the registry loads the module each one
  names, so the registry imports it;
- a package `__init__` with code in it: importing `compactlab.llm.prices` from outside `compactlab.llm`
  runs `compactlab/llm/__init__.py` first, so the importer imports that package too (the package root,
  `compactlab/__init__.py`, runs before every import and is checked on its own).
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ENTRY_POINT_GROUP = "compactlab.strategies"
REGISTRY = "compactlab.strategies.registry"  # the module that loads the entry-point group


def module_name(path: Path, repo: Path = REPO) -> str:
    """The installed name of a repository file: bench/ is the package, strategies/ its subpackage."""
    parts = list(path.relative_to(repo).with_suffix("").parts)
    parts = ["compactlab"] + (parts[1:] if parts[0] == "bench" else parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules(repo: Path = REPO) -> dict[str, Path]:
    files = sorted((repo / "bench").rglob("*.py")) + sorted((repo / "strategies").rglob("*.py"))
    return {module_name(path, repo): path for path in files}


def _named_by_call(node: ast.Call) -> str | None:
    """The module an `importlib.import_module("...")` or `__import__("...")` call names, if literal."""
    function = node.func
    called = function.attr if isinstance(function, ast.Attribute) else function.id if isinstance(function, ast.Name) else ""
    if called not in ("import_module", "__import__") or not node.args:
        return None
    first = node.args[0]
    return first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else None


def imports_in(name: str, source: str, known: set[str], is_package: bool = False, statements_only: bool = False) -> set[str]:
    """Every compactlab module the module `name` (whose text is `source`) imports, anywhere in it."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
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
        elif isinstance(node, ast.Call) and not statements_only and (named := _named_by_call(node)):
            found.add(named)
    return {module for module in found if module in known and module != name}


def entry_point_modules(repo: Path = REPO) -> set[str]:
    """The modules the `compactlab.strategies` entry points in pyproject.toml name."""
    project = tomllib.loads((repo / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return {target.partition(":")[0] for target in project["entry-points"][ENTRY_POINT_GROUP].values()}


def has_code(path: Path) -> bool:
    """Whether a file does anything when run: more than a docstring."""
    body = ast.parse(path.read_text(encoding="utf-8")).body
    return any(not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)) for node in body)


def packages_run_by(importer: str, target: str, packages_with_code: set[str]) -> set[str]:
    """The packages whose `__init__` code runs when `importer` imports `target` (never the root:
    it runs before every import; never a package the importer is inside: it ran before the importer)."""
    parts = target.split(".")
    parents = {".".join(parts[:end]) for end in range(2, len(parts))}
    return {p for p in parents if p in packages_with_code and not importer.startswith(p + ".")}


def graph(repo: Path = REPO, extra: dict[str, str] | None = None, statements_only: bool = False) -> dict[str, set[str]]:
    """Module → the compactlab modules importing it may run. `extra`: more modules (name → source), for
    testing this reader on a file that is not in the tree. `statements_only`: import statements alone,
    as the layer test read them before issue 30 (for tests/scripts/layer_figures.py's before figure)."""
    paths = modules(repo)
    sources = {name: path.read_text(encoding="utf-8") for name, path in paths.items()} | (extra or {})
    known = set(sources)
    packages = {name for name, path in paths.items() if path.name == "__init__.py"}
    arrows = {name: imports_in(name, source, known, name in packages, statements_only) for name, source in sources.items()}
    if statements_only:
        return arrows
    with_code = {name for name in packages if has_code(paths[name])}
    arrows[REGISTRY] |= entry_point_modules(repo) & known
    for name, targets in arrows.items():
        targets |= {package for target in set(targets) for package in packages_run_by(name, target, with_code)}
        targets.discard(name)
    return arrows


def cycles(arrows: dict[str, set[str]]) -> list[list[str]]:
    """Every loop a depth-first walk meets (each named from its first module back to it)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    found: list[list[str]] = []

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(arrows[module]):
            if state.get(target) == 1:
                found.append(path[path.index(target) :] + [target])
            elif target not in state:
                visit(target, path + [target])
        state[module] = 2

    for module in sorted(arrows):
        if module not in state:
            visit(module, [module])
    return found
