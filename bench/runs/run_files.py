"""The files of a run directory, written so that an interruption never counts anything twice.

- A session's rows are two Parquet parts (`rows/calls/`, `rows/compactions/`, see
  `compactlab.runs.run_storage`), written whole under their own names by the process that replayed it, then
  committed by one line of `done.jsonl` that records the session, its settings, the dataset
  file and its hash, and names the parts. One line is all or nothing: cut off, it is not JSON and
  commits nothing. A run that opens the directory again cuts done.jsonl back to its last whole
  line and removes every part no line names, so rows of a unit that was cut off (by a kill, a full
  disk) are dropped before the unit is replayed again.
- A run directory of an older format is refused by `compactlab.runs.run_format` alone.
- Everything else (config.json, meta.json, sessions.csv, summary.json, report.html) is written
  to a temporary file and renamed over the old one: a reader sees the old file or the new one.
- `RunLock` holds an exclusive lock (`fcntl.flock` on `.lock`) while a process works in the
  directory: a second run or `--resume` on it fails at once with a clear message instead of
  writing between the first one's rows.
- `WRITE_HOOK`, None but in tests, is called before each of these writes with the path, so a test
  can fail or kill the process at every write point.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

DONE = "done.jsonl"
LOCK = ".lock"

WRITE_HOOK: Callable[[Path], None] | None = None


def before_write(path: Path) -> None:
    if WRITE_HOOK is not None:
        WRITE_HOOK(path)


@contextmanager
def naming(path: Path) -> Iterator[None]:
    """An OSError met while writing `path` names it (a full disk's `os.write` error names no file)."""
    try:
        yield
    except OSError as exc:
        if exc.filename is None:
            raise OSError(exc.errno or 0, exc.strerror or str(exc), str(path)) from exc
        raise


def write_atomic(path: Path, text: str) -> Path:
    """Write `text` (UTF-8) to `path` through a temporary file in the same folder and a rename."""
    path = Path(path)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    before_write(path)
    try:
        # A file name that is not UTF-8 (lone surrogates in Python) is written as \udcNN, which a
        # JSON reader reads back as it was, rather than stopping the run at its last file.
        with naming(path), temporary.open("w", encoding="utf-8", errors="backslashreplace") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        with naming(path):
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
                f"{self.out} is in use by another compactlab run (process {holder}): wait for it to end, or give another --out"
            ) from None
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, f"{os.getpid()}\n".encode(), 0)
        _HELD[self.out] = [descriptor, 1]
        return self

    @staticmethod
    def check_free(out: Path) -> None:
        """Refuse `out` now when another process holds its lock, creating nothing: a run checks this
        before its other checks' work, and takes the lock itself once they passed."""
        folder = Path(out).resolve()
        if folder in _HELD or not (folder / LOCK).is_file():
            return
        with RunLock(folder):  # the lock file is there: taking the lock and letting it go adds nothing
            pass

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
    """What done.jsonl commits: the finished units, the dataset files they came from, and each
    session's row parts (by kind, `compactlab.runs.run_storage`)."""

    units: frozenset[tuple[str, str]] = frozenset()
    file_hashes: dict[str, str | None] = field(default_factory=dict)
    parts: dict[str, list[dict[str, str]]] = field(default_factory=dict)  # session -> its commits' parts, in order
    size: int = 0  # bytes of done.jsonl up to the end of its last whole line

    def part_names(self, kind: str) -> list[str]:
        """Every committed part of `kind`, in commit order."""
        return [commit[kind] for commits in self.parts.values() for commit in commits]


def read_done(path: Path) -> DoneLog:
    """The commits in `path` (done.jsonl). A last line cut off by an interruption commits nothing;
    a damaged line before it is an error naming it (the directory's format is checked before,
    `compactlab.runs.run_format`)."""
    if not path.exists():
        return DoneLog()
    units: set[tuple[str, str]] = set()
    hashes: dict[str, str | None] = {}
    parts: dict[str, list[dict[str, str]]] = {}
    size = 0
    # A commit is a whole line, newline included (written last): the piece after the last newline
    # is empty, or a line cut off, which commits nothing.
    *whole, _cut_off = path.read_bytes().split(b"\n")
    for number, line in enumerate(whole, start=1):
        size += len(line) + 1
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            units.update((record["session"], label) for label in record["settings"])
            hashes[record["file"]] = record["file_sha256"]
            parts.setdefault(record["session"], []).append(dict(record["parts"]))
        except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError, ValueError) as exc:
            reason = (
                "not JSON"
                if isinstance(exc, (json.JSONDecodeError, UnicodeDecodeError))
                else f"no commit ({exc!r} missing or wrong)"
            )
            raise ValueError(
                f"{path}:{number}: a damaged line ({reason}); this run directory cannot be read or resumed"
            ) from None
    return DoneLog(frozenset(units), hashes, parts, size)


def drop_commits(out: Path, sessions: set[str]) -> None:
    """Rewrite done.jsonl without the commits of `sessions` (their parts are then no longer the
    run's: `--resume` replays them again, as for a session never finished)."""
    path = Path(out) / DONE
    log = read_done(path)
    with path.open("rb") as handle:
        whole = handle.read(log.size).decode("utf-8", "surrogateescape").splitlines(keepends=True)
    kept = [line for line in whole if not line.strip() or json.loads(line).get("session") not in sessions]
    write_atomic(path, "".join(kept))


def commit_line(session: str, labels: list[str], file: str, file_hash: str | None, parts: dict[str, str]) -> str:
    record = {"session": session, "settings": labels, "file": file, "file_sha256": file_hash, "parts": parts}
    # ASCII: a file name that is not UTF-8 (lone surrogates in Python) is written as \udcNN and read back as it was.
    return json.dumps(record) + "\n"


class Commits:
    """done.jsonl, open for appending while a run works, cut back to `log`'s last whole line when
    opened (see the module docstring); `remove_unnamed` then drops parts no line names.

    Each line goes to the file at once (no buffer): a killed process loses nothing committed."""

    def __init__(self, out: Path, log: DoneLog) -> None:
        self.out, self.log = out, log
        self.descriptor = -1
        # The parts done.jsonl names (those of `log`, then each commit's): all others are not the run's.
        self.named = [name for commits in log.parts.values() for commit in commits for name in commit.values()]

    def __enter__(self) -> Commits:
        path = self.out / DONE
        self.descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_BINARY", 0), 0o666)
        if os.fstat(self.descriptor).st_size > self.log.size:  # a done line cut off
            os.ftruncate(self.descriptor, self.log.size)
        return self

    def __exit__(self, *exc) -> None:
        os.close(self.descriptor)

    def commit(self, session: str, labels: list[str], file: str, file_hash: str | None, parts: dict[str, str]) -> None:
        """Commit a session's parts (written already, under their names) with one done.jsonl line."""
        before_write(self.out / DONE)
        with naming(self.out / DONE):
            _write_all(self.descriptor, commit_line(session, labels, file, file_hash, parts).encode("utf-8"))
        self.named += parts.values()


def _write_all(descriptor: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(descriptor, view) :]
