"""Every flag a message or a help text names exists: a command line quoted in the source
(`compactlab CMD ... --flag`, `python -m tests.scripts.X ... --flag`) names only flags of that
command, and each command's help names only its own flags or those of a command it names before them.
The exit codes the top-level help lists are those of `compactlab.cli.exit_codes`, the one table."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from compactlab.cli import exit_codes
from compactlab.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[2]
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    found = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(found.choices)


def _flags(parser: argparse.ArgumentParser) -> set[str]:
    return {option for action in parser._actions for option in action.option_strings}


def _measure_flags(module: str) -> set[str]:
    path = ROOT / "tests" / "scripts" / (module.replace(".", "/") + ".py")
    if not path.is_file():
        return set()  # a script that does not exist: every flag named is wrong, and so is the name
    source = path.read_text()
    return set(re.findall(r"add_argument\(\s*\"(--[a-z0-9-]+)\"", source)) | {"--help"}


def test_every_command_line_quoted_in_the_source_names_flags_that_exist() -> None:
    commands = {name: _flags(parser) for name, parser in _commands().items()}
    wrong = []
    sources = [*sorted(path for folder in ("bench", "strategies", "tests/scripts") for path in (ROOT / folder).rglob("*.py"))]
    sources += [*sorted((ROOT / "docs").rglob("*.md")), ROOT / "README.md", ROOT / "reports" / "README.md"]
    for path in sources:
        text = path.read_text()
        for quoted in re.findall(r"`([^`\n]*)`", text):
            if (found := re.match(r"compactlab ([a-z][a-z-]*)", quoted)) and found.group(1) in commands:
                known, name = commands[found.group(1)], f"compactlab {found.group(1)}"
            elif found := re.match(r"python -m tests\.scripts\.([a-z_]+(?:\.[a-z_]+)*)(?![.\w])", quoted):
                known, name = _measure_flags(found.group(1)), found.group(0)
                if not known:
                    wrong.append(f"{path.relative_to(ROOT)}: {name} (no such script in tests/scripts/)")
            else:
                continue
            wrong += [f"{path.relative_to(ROOT)}: {name} {flag}" for flag in FLAG.findall(quoted) if flag not in known]
    assert not wrong, "flags that do not exist:\n" + "\n".join(wrong)


def test_every_flag_a_help_text_names_exists() -> None:
    commands = _commands()
    wrong = []
    for name, parser in commands.items():
        texts = [parser.description or "", parser.epilog or "", *(a.help or "" for a in parser._actions)]
        for text in texts:
            for found in FLAG.finditer(text):
                before = re.findall(r"[a-z][a-z-]*", text[: found.start()])
                named = next((word for word in reversed(before[-3:]) if word in commands), name)
                if found.group() not in _flags(commands[named]):
                    wrong.append(f"compactlab {name}'s help: {found.group()} (not a flag of {named})")
    assert not wrong, "\n".join(wrong)


def test_the_help_lists_every_exit_code_from_the_one_table() -> None:
    parser = build_parser()
    listed = [int(code) for code in re.findall(r"(?:exit codes: |; )(\d+) ", parser.epilog or "")]
    assert listed == list(exit_codes.MEANINGS)
    run = _commands()["run"].epilog or ""
    assert [int(code) for code in re.findall(r"(?:exit codes: |; )(\d+) ", run)] == [0, 2, 3, 4, 130]
