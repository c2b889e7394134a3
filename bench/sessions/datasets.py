"""Bundled datasets and turning command-line inputs (files, folders, dataset names) into files.

A bundled dataset is a folder `datasets/<name>/` with `dataset.toml` (machine-readable facts),
`README.md` (its card: source, commit, licence, caveats), the source's `LICENSE`, and the
sessions gzipped under `sessions/`. The folder is the repository's `datasets/` (a clone or an
editable install), the copy an installed wheel carries (`compactlab/bundled_datasets`), or wherever
`COMPACTLAB_DATASETS` points.
"""

from __future__ import annotations

import difflib
import os
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from compactlab.sessions.agent_homes import in_agent_folder, is_agent_session

SESSION_SUFFIXES = (".jsonl", ".json", ".jsonl.gz", ".json.gz", ".traj", ".traj.gz")
# Files, folders or dataset names, as a command line or the API gives them: `str` or `Path`, one or several.
PathArguments = str | os.PathLike | Sequence[str | os.PathLike] | None


@dataclass(frozen=True)
class Dataset:
    name: str
    folder: Path
    description: str
    source_format: str
    source: str
    license: str
    # True when the source holds real damaged records: its files are read leniently.
    lenient: bool = False

    @property
    def files(self) -> list[Path]:
        return sorted((self.folder / "sessions").glob("*.gz"))


def datasets_dir() -> Path:
    """Where the bundled datasets are: $COMPACTLAB_DATASETS, else the copy an installed wheel carries,
    else (a checkout, or an editable install) the repository's datasets/ folder."""
    configured = os.environ.get("COMPACTLAB_DATASETS")
    if configured:
        return Path(configured)
    package = Path(__file__).resolve().parents[1]
    bundled = package / "bundled_datasets"
    return bundled if bundled.is_dir() else package.parent / "datasets"


def list_datasets() -> list[Dataset]:
    root = datasets_dir()
    found = []
    for meta_path in sorted(root.glob("*/dataset.toml")):
        meta = tomllib.loads(meta_path.read_text(encoding="utf-8"))
        found.append(
            Dataset(
                name=meta_path.parent.name,
                folder=meta_path.parent,
                description=meta["description"],
                source_format=meta["format"],
                source=meta["source"],
                license=meta["license"],
                lenient=bool(meta.get("lenient", False)),
            )
        )
    return found


def get_dataset(name: str) -> Dataset:
    known = {d.name: d for d in list_datasets()}
    if name in known:
        return known[name]
    if not known:
        raise KeyError(
            f"no bundled datasets found in {datasets_dir()}: run compactlab from a clone of the repository "
            "(pip install -e .) or set COMPACTLAB_DATASETS to the datasets folder"
        )
    close = difflib.get_close_matches(name, known, n=3)
    hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    raise KeyError(f"{name!r} is neither a file, a folder nor a bundled dataset.{hint} Datasets: {', '.join(known)}")


@dataclass(frozen=True)
class Inputs:
    """The files named by the user's arguments, and what was passed over in folders."""

    files: tuple[Path, ...]
    # Files of bundled datasets known to hold damaged records, read leniently whatever the flag.
    lenient_files: frozenset[Path] = frozenset()
    # Files inside given folders that are not sessions by their name (README, LICENSE, ...):
    # counted and shown, never dropped silently.
    passed_over: tuple[Path, ...] = ()
    # Links found in given folders to files outside them: listed among `files`, so that each is a file
    # not read, counted and named, and never opened (`loading.read_files` refuses them, `link_out`): a
    # link to /etc/passwd would be parsed, a link to another user's sessions read in.
    links_out: frozenset[Path] = frozenset()


def input_names(arguments: PathArguments) -> list[str]:
    """Command-line inputs or the API's (`str` or `Path`, one or a sequence) as strings."""
    if arguments is None:
        return []
    if isinstance(arguments, (str, os.PathLike)):
        arguments = [arguments]
    if not isinstance(arguments, (list, tuple)) or not all(isinstance(a, (str, os.PathLike)) for a in arguments):
        raise TypeError(f"inputs: a list of files, folders or dataset names (str or Path), got {arguments!r:.80}")
    return [os.fspath(a) for a in arguments]


def resolve_inputs(arguments: PathArguments) -> Inputs:
    """Files for `arguments` (files, folders searched recursively, dataset names); none → all datasets."""
    arguments = input_names(arguments)
    if not arguments:
        datasets = list_datasets()
        if not datasets:
            get_dataset("")  # raises the "no bundled datasets found" error
        return Inputs(
            files=tuple(f for d in datasets for f in d.files),
            lenient_files=frozenset(f for d in datasets if d.lenient for f in d.files),
        )
    files: list[Path] = []
    lenient_files: set[Path] = set()
    passed_over: list[Path] = []
    links_out: set[Path] = set()
    named: set[Path] = set()  # a link named is read: the user asked for it
    for argument in arguments:
        path = Path(argument)
        if path.is_dir():
            found, skipped, outside = folder_files(path)
            links_out |= outside
            if not found:
                kinds = ", ".join(f"*{s}" for s in SESSION_SUFFIXES)
                held = f" (it holds {len(skipped)} other files)" if skipped else ""
                raise ValueError(f"{path}: no session files ({kinds}) in this folder{held}")
            files += found
            passed_over += skipped
        elif path.is_file() or path.is_symlink():
            files.append(path)  # a dangling or looping link fails when it is read, naming itself
            named.add(path)
        elif path.exists():
            raise ValueError(f"{path}: not a regular file or folder")
        else:
            dataset = get_dataset(argument)
            files.extend(dataset.files)
            if dataset.lenient:
                lenient_files.update(dataset.files)
    # A file named twice (or reached through two links) is read once: reading it twice would
    # replay its sessions twice.
    unique = list({os.path.realpath(f): f for f in reversed(files)}.values())[::-1]
    return Inputs(
        files=tuple(unique),
        lenient_files=frozenset(lenient_files),
        passed_over=tuple(passed_over),
        links_out=frozenset(links_out - named),
    )


def bundled_only(arguments: Iterable[str | os.PathLike] | None) -> bool:
    """Whether `arguments` name bundled datasets only (none: all of them), no file or folder of the user's."""
    return not any(Path(argument).exists() for argument in arguments or ())


def refuse_output_inside(out: Path, arguments: PathArguments) -> None:
    """An error when `out` (where a command writes) is one of the folders `arguments` read, or
    inside one: the command would write into the dataset, and every later read of that folder
    would take its own output (config.json, ...) for sessions."""
    arguments = input_names(arguments)
    folders = [Path(a) for a in arguments or () if Path(a).is_dir()]
    names = [a for a in arguments or () if not Path(a).exists()]
    folders += [d.folder for d in list_datasets() if not arguments or d.name in names]
    target = os.path.realpath(out)
    for folder in folders:
        if _within(target, os.path.realpath(folder)):
            raise ValueError(
                f"--out {out} is inside the dataset folder {folder}: the run would write into the dataset and later read "
                f"its own files as sessions; give an --out outside it"
            )


def link_out(path: Path) -> str:
    """Why `path`, a link out of the folder named (`Inputs.links_out`), is not read."""
    return f"a link to the file {os.path.realpath(path)}, outside the folder named: not read"


def folder_files(folder: Path) -> tuple[list[Path], list[Path], set[Path]]:
    """(session files, other files, the links among them to files outside `folder`) under `folder`,
    sorted, following links to folders once.

    Whatever cannot be listed or followed is returned among the session files, so that reading
    it fails with its reason, naming it (an error, or a counted failed file with --lenient): a
    folder that cannot be listed, a link to nothing, a loop of links. A link back to a folder
    already walked is not walked again (its files are already there).
    """
    found: list[Path] = []
    other: list[Path] = []
    outside: set[Path] = set()
    seen: set[tuple[int, int]] = set()
    inside = os.path.realpath(folder)
    pending = [folder]
    while pending:
        current = pending.pop()
        try:
            status = current.stat()
            if (status.st_dev, status.st_ino) in seen:
                continue
            seen.add((status.st_dev, status.st_ino))
            with os.scandir(current) as entries:
                listed = sorted(entries, key=lambda e: e.name)
        except OSError:
            found.append(current)
            continue
        for entry in listed:
            path = Path(entry.path)
            try:
                is_dir, is_file = entry.is_dir(), entry.is_file()
            except OSError:
                is_dir = is_file = False
            if is_dir and entry.is_symlink() and not _within(os.path.realpath(path), inside):
                # A link out of the folder named (to a parent, say) would read files nobody named:
                # it is a file not read, naming where it leads (`source.Source.raw`).
                found.append(path)
            elif is_dir:
                pending.append(path)
            elif entry.is_symlink() and not _within(os.path.realpath(path), inside):
                outside.add(path)
                (found if _session_name(path) else other).append(path)
            elif is_file or entry.is_symlink() or _session_name(path):
                # (a link to nothing or into a loop is neither a file nor a folder; a FIFO, socket or
                # device named like a session is read as one and refused, naming itself)
                (found if _session_name(path) else other).append(path)
            else:
                other.append(path)  # a FIFO, socket or device: passed over, counted
    return sorted(found), sorted(other), outside


def _session_name(path: Path) -> bool:
    """Whether a file found in a folder is a session by its name: inside an agent's folder of a home,
    one of its sessions (`agent_homes`); elsewhere, any file of a session suffix."""
    return is_agent_session(path) if in_agent_folder(path) else path.name.endswith(SESSION_SUFFIXES)


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)
