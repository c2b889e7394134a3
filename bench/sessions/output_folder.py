"""Where a command may write its folder: never the filesystem root, the home folder, a dataset it
reads, or a folder that holds sessions.

A run, a sweep, an export and a suite check each write a folder of files. Written into `/` or the
home folder, those files mix with everything else there; written into a folder of sessions, every
later read of that folder takes the command's own files (config.json, summary.json, done.jsonl, an
export's canonical files) for sessions, and a refused run used to leave its lock there. So the
folder is checked, with the command's other checks, before anything is written.
"""

from __future__ import annotations

import os
from pathlib import Path

from compactlab.sessions.datasets import SESSION_SUFFIXES, PathArguments, folder_files, refuse_output_inside

# The files with a session suffix that compactlab itself writes into a run (or sweep) directory:
# a folder holding only these is a run directory, not a folder of sessions.
RUN_FILES = frozenset(
    {"config.json", "meta.json", "summary.json", "done.jsonl", "sweep.json", "session_facts.json", "estimation.json"}
)
SHOWN_SESSION_FILES = 3  # named in the error


def check_output_folder(
    out: Path, arguments: PathArguments, *, option: str = "--out", own_files: frozenset[str] = RUN_FILES
) -> None:
    """An error when `out` may not take a command's folder of files (see the module docstring).
    `arguments`: the inputs the command reads (None: every bundled dataset); `own_files`: the names of
    session-suffixed files the command itself writes there, which an existing folder may hold."""
    target = Path(os.path.realpath(out))
    if target == Path(target.anchor):
        raise ValueError(f"{option} {out} is the filesystem root: give a folder of its own for the command's files")
    home = Path(os.path.realpath(Path.home()))
    if target == home:
        raise ValueError(
            f"{option} {out} is the home folder: give a folder of its own for the command's files (e.g. {out}/compactlab-run)"
        )
    refuse_output_inside(out, arguments)
    if target.is_dir() and not is_run_directory(target):
        held = sessions_held(target, own_files)
        if held:
            shown = ", ".join(str(p.relative_to(target)) for p in held[:SHOWN_SESSION_FILES])
            more = f" and {len(held) - SHOWN_SESSION_FILES} more" if len(held) > SHOWN_SESSION_FILES else ""
            raise ValueError(
                f"{option} {out} holds session files ({shown}{more}): the command's files would mix with them and be read "
                f"as sessions later; give a new or empty folder"
            )


def is_run_directory(folder: Path) -> bool:
    """A folder a run (or sweep, or suite check) wrote: its configuration is written before anything
    else. What such a folder holds is the run's (its stress run, an LLM cache placed there)."""
    return (folder / "config.json").is_file() or (folder / "done.jsonl").is_file()


def sessions_held(folder: Path, own_files: frozenset[str] = RUN_FILES) -> list[Path]:
    """The session files under `folder`, as a read of it lists them (`datasets.folder_files`), that
    are not `own_files`."""
    found, _, _ = folder_files(folder)
    return [path for path in found if path.name.endswith(SESSION_SUFFIXES) and path.name not in own_files]
