"""`compactlab docs`: where the reference is and how to open it as a site (mkdocs, built from docs/)."""

from __future__ import annotations

import argparse
import importlib.util
import shlex
import sys
from pathlib import Path

# A checkout (or an editable install) has the repository beside the package: bench/ is `compactlab`.
REPOSITORY = Path(__file__).resolve().parents[2]


def add_command(commands, command) -> None:
    docs = command(
        commands,
        "docs",
        "say where the reference is (docs/, a mkdocs site) and how to build or serve it here",
        "exit codes: 0 said where the reference is",
    )
    docs.add_argument("--json", action="store_true", help="print the paths and commands as one JSON object")
    docs.set_defaults(run=run_docs)


def where(repository: Path = REPOSITORY) -> dict:
    """The reference's folder, the built site and the commands that build and serve it (None where absent)."""
    source, config, site = repository / "docs", repository / "mkdocs.yml", repository / "site" / "index.html"
    checkout = source.is_dir() and config.is_file()
    python = shlex.quote(sys.executable)
    return {
        "docs": str(source) if checkout else None,
        "mkdocs_yml": str(config) if checkout else None,
        "site": str(site) if checkout and site.is_file() else None,
        "mkdocs_installed": importlib.util.find_spec("mkdocs") is not None,
        "install": f"{python} -m pip install -e {shlex.quote(f'{repository}[docs]')}" if checkout else None,
        # `python -m mkdocs`: the script's folder also holds the `compactlab` command, which the API reference's
        # loader would take for the package.
        "serve": f"cd {shlex.quote(str(repository))} && {python} -m mkdocs serve" if checkout else None,
        "build": f"cd {shlex.quote(str(repository))} && {python} -m mkdocs build --strict" if checkout else None,
    }


def format_where(found: dict) -> str:
    if found["docs"] is None:
        return (
            "This installation has no docs/ folder (the wheel ships the package, not its documentation). The reference is\n"
            "the docs/ folder of the compactlab repository, plain Markdown; in a checkout, `compactlab docs` says how to\n"
            "serve it as a site."
        )
    lines = [
        f"The reference: {found['docs']} (plain Markdown, one page per topic; the README links each page).",
        f"As a site (mkdocs, Material theme, the API reference from the docstrings; {found['mkdocs_yml']}):",
    ]
    if not found["mkdocs_installed"]:
        lines.append(f"  {found['install']}          # mkdocs is not installed here")
    lines += [
        f"  {found['serve']}          # then open http://127.0.0.1:8000",
        f"  {found['build']}   # writes site/index.html; a broken link or missing page fails",
    ]
    lines.append(f"Built site: {found['site']}" if found["site"] else "Built site: none yet (the build line writes it).")
    return "\n".join(lines)


def run_docs(args: argparse.Namespace) -> int:
    found = where()
    if args.json:
        import json

        print(json.dumps(found, indent=2))
    else:
        print(format_where(found))
    return 0
