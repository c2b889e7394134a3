"""`compactlab prompts`: list, print or copy the bundled prompt templates (`compactlab.strategies.prompt_files`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from compactlab.strategies.prompt_files import bundled_names, bundled_path, copy_template, first_line, imported_files

USAGE = "compactlab prompts [show NAME | copy NAME DEST [--force]]"


def add_command(commands, command) -> None:
    prompts = command(
        commands,
        "prompts",
        "list the bundled prompt templates, print one (show NAME) or copy one to edit (copy NAME DEST)",
        "exit codes: 0 done; 2 no such template, a missing argument, or a file exists (pass --force to replace it)",
    )
    prompts.add_argument("action", nargs="?", choices=("list", "show", "copy"), default="list", help="default: list")
    prompts.add_argument("name", nargs="?", help="a bundled template, e.g. summary.j2")
    prompts.add_argument("destination", nargs="?", type=Path, help="copy: a folder, or a file name ending in .j2")
    prompts.add_argument("--force", action="store_true", help="copy: replace an existing file")
    prompts.set_defaults(run=run_prompts)


def run_prompts(args: argparse.Namespace) -> int:
    if args.action == "list":
        if args.name is not None:
            raise ValueError(f"`compactlab prompts list` takes no name; to print one: `compactlab prompts show {args.name}`")
        width = max(map(len, bundled_names()))
        for name in bundled_names():
            print(f"{name:<{width}}  {first_line(name)}")
        print("\n`compactlab prompts show NAME` prints one; `compactlab prompts copy NAME DEST` copies it to edit")
        return 0
    if args.name is None:
        raise ValueError(f"`compactlab prompts {args.action}` needs a template name ({USAGE}); `compactlab prompts` lists them")
    if args.action == "show":
        print(bundled_path(args.name).read_text(encoding="utf-8"), end="")
        return 0
    if args.destination is None:
        raise ValueError(f"`compactlab prompts copy {args.name}` needs a destination: a folder, or a file name ending in .j2")
    copied = copy_template(args.name, args.destination, force=args.force)
    for path in copied.written:
        print(f"wrote {path}")
    for path in copied.kept:
        print(f"kept {path} (it exists; the copy imports it)")
    if imported_files(args.name):
        print(f"the copy imports {', '.join(p.name for p in imported_files(args.name))} from its own folder first")
    print("name it in a strategy's settings, e.g. template = \"" + copied.written[0].name + '" (a path relative to the suite)')
    return 0
