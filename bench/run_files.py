"""The files of a run directory, written so that an interruption never counts anything twice.

- Row files (`calls.jsonl`, `compactions.jsonl`) are appended a transcript at a time, and each
  append is committed by one line of `done.jsonl` that records the transcript, its settings, the
  dataset file and its hash, and how long each row file is with these rows (`calls_end`,
  `compactions_end`). One line is all or nothing: cut off, it is not JSON and commits nothing. A
  run that opens the directory again cuts every row file back to the last commit, so rows of a
  unit that was cut off (by a kill, a full disk) are dropped before the unit is replayed again.
- Everything else (config.json, meta.json, transcripts.csv, summary.json, report.html) is written
  to a temporary file and renamed over the old one: a reader sees the old file or the new one.
- `RunLock` holds an exclusive lock (`fcntl.flock` on `.lock`) while a process works in the
  directory: a second run or `--resume` on it fails at once with a clear message instead of
  writing between the first one's rows.
- `WRITE_HOOK`, None but in tests, is called before each of these writes with the path, so a test
  can fail or kill the process at every write point.
"""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROW_FILES = ("calls.jsonl", "compactions.jsonl")
DONE = "done.jsonl"
LOCK = ".lock"
ENDS = {"calls.jsonl": "calls_end", "compactions.jsonl": "compactions_end"}

WRITE_HOOK: Callable[[Path], None] | None = None


def _before_write(path: Path) -> None:
    if WRITE_HOOK is not None:
        WRITE_HOOK(path)


def write_atomic(path: Path, text: str) -> Path:
    """Write `text` (UTF-8) to `path` through a temporary file in the same folder and a rename."""
    path = Path(path)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    _before_write(path)
    try:
        with temporary.open("w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return path


class RunDirectoryBusy(ValueError):
    """Another process is working in the run directory."""


_HELD: dict[Path, list[int]] = {}  # run directory -> [lock descriptor, how many holders in this process]


class RunLock:
    """An exclusive lock on a run directory for as long as the `with` block runs (reentrant
    within a process: the CLI holds it over a run and the files it writes afterwards).

    Where `fcntl` is missing (Windows) there is no lock."""

    def __init__(self, out: Path) -> None:
        self.out = Path(out).resolve()

    def __enter__(self) -> RunLock:
        held = _HELD.get(self.out)
        if held is not None:
            held[1] += 1
            return self
        try:
            import fcntl
        except ImportError:
            return self
        self.out.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(self.out / LOCK, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(descriptor, 32, 0).decode("ascii", "replace").strip() or "unknown"
            os.close(descriptor)
            raise RunDirectoryBusy(
                f"{self.out} is in use by another compactlab run (process {holder}): wait for it to end, "
                f"or give another --out"
            ) from None
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, f"{os.getpid()}\n".encode(), 0)
        _HELD[self.out] = [descriptor, 1]
        return self

    def __exit__(self, *exc) -> None:
        held = _HELD.get(self.out)
        if held is None:
            return
        held[1] -= 1
        if not held[1]:
            del _HELD[self.out]
            os.close(held[0])  # closing the descriptor releases the lock


@dataclass(frozen=True)
class DoneLog:
    """What done.jsonl commits: the finished units, the dataset files they came from, and where
    the committed rows end. `ends` is None for a log written before commits recorded ends."""

    units: frozenset[tuple[str, str]] = frozenset()
    file_hashes: dict[str, str | None] = field(default_factory=dict)
    ends: dict[str, int] | None = field(default_factory=lambda: dict.fromkeys(ROW_FILES, 0))
    size: int = 0  # bytes of done.jsonl up to the end of its last whole line


def read_done(path: Path) -> DoneLog:
    """The commits in `path` (done.jsonl). A last line cut off by an interruption commits nothing."""
    if not path.exists():
        return DoneLog()
    units: set[tuple[str, str]] = set()
    hashes: dict[str, str | None] = {}
    ends: dict[str, int] | None = dict.fromkeys(ROW_FILES, 0)
    size, damaged = 0, None
    # A commit is a whole line, newline included (written last): the piece after the last newline
    # is empty, or a line cut off, which commits nothing.
    *whole, _cut_off = path.read_bytes().split(b"\n")
    for number, line in enumerate(whole, start=1):
        size += len(line) + 1
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError):
            damaged = damaged or number  # an older version went on after a cut-off line
            continue
        if "configs" in record:
            units.update((record["transcript"], label) for label in record["configs"])
            hashes[record["file"]] = record["file_sha256"]
            if ends is not None:
                ends = {name: record[key] for name, key in ENDS.items()}
        else:  # a line of a version that committed no ends: one unit per line
            units.add((record["transcript"], record["config"]))
            ends = None
    if damaged and ends is not None:
        raise ValueError(f"{path}:{damaged}: a damaged line in the middle of the log; this run directory cannot be resumed")
    return DoneLog(frozenset(units), hashes, ends, size)


def commit_line(transcript: str, labels: list[str], file: str, file_hash: str | None, ends: dict[str, int]) -> str:
    record = {"transcript": transcript, "configs": labels, "file": file, "file_sha256": file_hash, **{ENDS[n]: ends[n] for n in ROW_FILES}}
    return json.dumps(record, ensure_ascii=False) + "\n"


class RowFiles:
    """The run's row files and done.jsonl, open for appending while it runs, cut back to `log`'s
    last commit when opened (see the module docstring).

    Each write goes to the file at once (no buffer): a killed process loses nothing committed."""

    def __init__(self, out: Path, log: DoneLog) -> None:
        if log.ends is None:
            raise ValueError(
                f"{out}: this run was written by an older compactlab, whose done.jsonl does not say where its rows end; "
                f"it cannot be resumed safely: start it again (without --resume, or with another --out)"
            )
        self.out, self.log = out, log
        self.files: dict[str, int] = {}  # name -> descriptor, at the end of the file
        self.ends = dict(log.ends)

    def __enter__(self) -> RowFiles:
        for name, end in [*self.ends.items(), (DONE, self.log.size)]:
            path = self.out / name
            # Not O_APPEND: the kernel copies a part into a file only without it (copy_file_range).
            descriptor = self.files[name] = os.open(path, os.O_WRONLY | os.O_CREAT | getattr(os, "O_BINARY", 0), 0o666)
            size = os.fstat(descriptor).st_size
            if size < end:
                raise ValueError(f"{path} is shorter ({size:,} bytes) than done.jsonl says it was ({end:,}): the run directory was changed")
            if size > end:  # rows (or a done line) of a unit cut off before its commit
                os.ftruncate(descriptor, end)
            os.lseek(descriptor, end, os.SEEK_SET)
        return self

    def __exit__(self, *exc) -> None:
        for descriptor in self.files.values():
            os.close(descriptor)

    def commit(self, part: Path, call_bytes: int, transcript: str, labels: list[str], file: str, file_hash: str | None) -> None:
        """Append the part file's calls.jsonl lines (its first `call_bytes` bytes) and its
        compactions.jsonl lines (the rest), remove it, then commit them with one done.jsonl line."""
        self._append_part(part, [("calls.jsonl", call_bytes), ("compactions.jsonl", None)])
        self._write(DONE, commit_line(transcript, labels, file, file_hash, self.ends).encode("utf-8"))

    def _append_part(self, part: Path, sections: list[tuple[str, int | None]]) -> None:
        """Append each section of `part` (a row file's name and the section's size, in order; None:
        the rest) to that row file, then remove the part. The kernel copies them where it can: a
        sweep's parts are a hundred megabytes, which this process would otherwise read and write
        again while the workers need the cores."""
        position, end = 0, part.stat().st_size
        with part.open("rb") as source:
            for name, size in sections:
                size = end - position if size is None else size
                if size:
                    _before_write(self.out / name)
                    copied = _copied_in_kernel(source.fileno(), self.files[name], size)
                    if copied < size:
                        source.seek(position + copied)
                        _write_all(self.files[name], source.read(size - copied))
                    position += size
                    self.ends[name] += size
                    source.seek(position)  # where the next section starts (the kernel's copy moved it there too)
        part.unlink()

    def _write(self, name: str, data: bytes) -> None:
        _before_write(self.out / name)
        _write_all(self.files[name], data)


def _copied_in_kernel(source: int, target: int, size: int) -> int:
    """Copy up to `size` bytes from `source` to `target` with copy_file_range; how many it copied
    (less where the system or the file system does not offer it: the caller writes the rest)."""
    copied = 0
    try:
        while copied < size:
            step = os.copy_file_range(source, target, size - copied)
            if step == 0:
                break
            copied += step
    except (AttributeError, OSError) as exc:  # no copy_file_range here (not Linux), or not between these files
        if getattr(exc, "errno", None) == errno.ENOSPC:  # writing the rest would fail alike
            raise
    return copied


def _write_all(descriptor: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(descriptor, view) :]


PART_PREFIX = ".calls-"


def remove_parts(out: Path) -> None:
    """Remove the part files workers wrote (a killed run's; this process holds the lock)."""
    for part in out.glob(PART_PREFIX + "*.part"):
        part.unlink(missing_ok=True)


def finished_rows(out: Path, name: str) -> list[dict]:
    """The committed rows of the row file `name` of the run in `out` (also of a run that was cut
    off and not resumed yet: what follows the last commit is left out)."""
    log, path = read_done(out / DONE), out / name
    if not path.exists():
        return []
    with path.open("rb") as handle:
        data = handle.read(log.ends[name]) if log.ends is not None else handle.read()
    rows = []
    for line in data.decode("utf-8").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:  # only in a log of an older version: a line cut off by a kill
            continue
        if (row.get("transcript"), row.get("config")) in log.units:
            rows.append(row)
    return rows
