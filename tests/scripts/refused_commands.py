"""What a refused command leaves behind, and whether the folder then takes a corrected command.

    .venv/bin/python -m tests.scripts.refused_commands FOLDER [--root]

Runs each command that writes a folder (`run`, `sweep`, `export`, `estimate --out`) and each that reads
sessions (`inspect`, `engines`) with one mistake at a time on a copy of FOLDER, and prints a table:
the exit code, the files left in the output folder and added to the dataset folder, and, where the
output folder was a new one, whether the same command without the mistake then succeeds there (a
refused run that leaves a `.lock` or a config.json made the folder refuse a corrected run). The home
folder is a temporary one (HOME is set for the commands), so `--out $HOME` writes nowhere that
matters. `--root` adds `--out /`, which writes into the filesystem root on a checkout that accepts it:
run it only where that is acceptable. Uses only the command line, so it measures an older checkout
just as well (copy it there). The machine's load is printed first.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

RUNNERS = ("run", "sweep")


def _files(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")} if folder.is_dir() else set()


def _unreadable(where: Path) -> Path:
    """A folder whose only file is no session format at all: with --lenient, a file not read."""
    where.mkdir()
    (where / "notes.jsonl").write_text('{"note": "not a session"}\n')
    return where


def _all_damaged(where: Path) -> Path:
    """A folder whose only session file holds no message once its damaged records are skipped."""
    where.mkdir()
    (where / "damaged.jsonl").write_text('{"type": "user", "sessionId": "s", "mezzage": {}}\n')
    return where


Case = tuple[str, list[str], "Path | None", "list[str] | None"]


def cases(data: Path, work: Path, root: bool) -> list[Case]:
    """(name, arguments, output folder, the corrected arguments to try in it after) per mistake."""
    home = Path(os.environ["HOME"])
    unreadable, damaged = _unreadable(work / "unreadable"), _all_damaged(work / "damaged")
    holding = work / "holding"
    shutil.copytree(data, holding)
    found: list[Case] = []
    for command in RUNNERS:
        strategy = ["--strategy", "truncate"] if command == "run" else ["--strategy", "truncate", "--thresholds", "0.8"]
        base = [command, "--dataset", str(data), *strategy]
        # A mistake in the arguments, into a new folder: the corrected command is then tried there.
        for number, (name, arguments) in enumerate(
            {
                "--context-window key no model has": [*base, "--context-window", "claude-sonet-4=100000"],
                "--window 100": [*base, "--window", "100"],
                "unknown strategy": [command, "--dataset", str(data), "--strategy", "sumarize"],
                "unknown estimator": [*base, "--estimator", "tiktokn"],
            }.items()
        ):
            out = work / f"{command}-{number}"
            found.append((f"{command}: {name}", [*arguments, "--out", str(out)], out, [*base, "--out", str(out)]))
        places = {"inside the dataset": data / "out", "a folder holding sessions": holding, "the home folder": home}
        places |= {"/": Path("/")} if root else {}
        found += [(f"{command}: --out {name}", [*base, "--out", str(out)], out, None) for name, out in places.items()]
        for name, inputs in {"no file readable": unreadable, "every record damaged": damaged}.items():
            out = work / f"{command}-{name[:5]}"
            found.append(
                (
                    f"{command}: --lenient, {name}",
                    [command, "--dataset", str(inputs), *strategy, "--lenient", "--out", str(out)],
                    out,
                    None,
                )
            )
    for name, inputs in {"no file readable": unreadable, "every record damaged": damaged}.items():
        for command in ("export", "estimate", "inspect", "engines"):
            written: Path | None = work / f"{command}-{name[:5]}" if command in ("export", "estimate") else None
            arguments = [command, str(inputs), "--lenient"] + (["--out", str(written)] if written is not None else [])
            found.append((f"{command}: --lenient, {name}", arguments, written, None))
    found.append(("export: --out the home folder", ["export", str(data), "--out", str(home)], home, None))
    return found


def _compactlab(arguments: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "compactlab.cli.main", *arguments], capture_output=True, text=True, env=env)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="a folder of session files (a copy is used)")
    parser.add_argument("--root", action="store_true", help="also try --out / (writes into / where it is accepted)")
    args = parser.parse_args(argv)
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    print("| mistake | exit | left in the output folder | added to the dataset | corrected command after |")
    print("|---|---|---|---|---|")
    refused = left_behind = blocked = 0
    with tempfile.TemporaryDirectory() as temporary:
        work = Path(temporary)
        data = work / "data"
        shutil.copytree(args.folder, data)
        (work / "home").mkdir()
        env = {**os.environ, "HOME": str(work / "home")}
        os.environ["HOME"] = env["HOME"]  # (cases() reads it)
        for name, arguments, out, corrected in cases(data, work, args.root):
            dataset_before, out_before = _files(data), _files(out) if out is not None else set()
            done = _compactlab(arguments, env)
            left = sorted(_files(out) - out_before) if out is not None and out != data / "out" else []
            added = sorted(_files(data) - dataset_before)
            after = ""
            if corrected is not None:
                again = _compactlab(corrected, env)
                after = f"exit {again.returncode}" + (
                    "" if again.returncode == 0 else f": {(again.stderr.strip().splitlines() or [''])[-1][:80]}"
                )
                blocked += again.returncode != 0
            refused += done.returncode == 2
            left_behind += done.returncode != 0 and bool(left or added)  # (a command that succeeded writes)
            shown = f"{len(left)} {left[:3]}" if left else "nothing"
            print(f"| {name} | {done.returncode} | {shown} | {added[:3] or 'nothing'} | {after or '-'} |")
            for path in sorted((data / "out").glob("*")) if (data / "out").exists() else ():
                shutil.rmtree(path) if path.is_dir() else path.unlink()
    print(
        f"\nrefused (exit 2): {refused}; refused but left something behind: {left_behind}; folder refused a corrected command after: {blocked}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
