"""Reading session files: gzip transparently, UTF-8 strictly, errors that name file and line.

A `Source` is one file on disk. Importers ask it for JSONL records or for the whole file as one
JSON document; both are parsed once and cached, because format detection and import read the
same file. Damage is reported through `RecordIssues`, which either raises (strict, the default)
or collects `SkippedRecord`s (lenient), so no importer has to decide that policy itself.
"""

from __future__ import annotations

import codecs
import json
import os
import stat
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from compactlab.sessions.model import SkippedRecord


class SessionError(ValueError):
    """A file could not be read as a session. The message names the file and, when known, the line."""

    def __init__(self, path: Path | str, line: int | None, what: str):
        self.path = str(path)
        self.line = line
        self.what = what
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {what}")

    def __reduce__(self):  # so that an error met in a worker process reaches the parent whole
        return (SessionError, (self.path, self.line, self.what))


@dataclass(frozen=True)
class Record:
    """One parsed JSONL line and where it came from."""

    line: int
    data: Any  # a parsed JSON value: its shape is checked where it is read


class RecordIssues:
    """Strict mode raises on the first damaged record; lenient mode counts it and goes on."""

    def __init__(self, path: Path, lenient: bool):
        self.path = path
        self.lenient = lenient
        self.skipped: list[SkippedRecord] = []

    def report(self, line: int | None, what: str) -> None:
        if not self.lenient:
            hint = " (use --lenient to skip damaged records and count them)"
            raise SessionError(self.path, line, what + hint)
        self.skipped.append(SkippedRecord(line=line, reason=what))


class Source:
    """A session file. `.gz` is decompressed transparently."""

    def __init__(self, path: Path | str):
        self.path = Path(path)
        # Set when a truncated gzip stream was read as far as it goes (lenient callers use it).
        self.truncated_at: int | None = None
        self._head_parsed: list[object] = []  # the first lines, parsed as far as detection asked
        self._head_end: int | None = 0  # where the next of them starts (None: the file ended)
        self._head_exact: list[bool] = []  # per head line: whether `records` may take its value

    @cached_property
    def raw(self) -> bytes:
        try:
            if not stat.S_ISREG(mode := self.path.stat().st_mode) and not stat.S_ISDIR(mode):
                # Opening a FIFO would wait for a writer forever; a device may never end.
                raise SessionError(self.path, None, "not a regular file (a FIFO, socket or device): not read")
            data = self.path.read_bytes()
        except IsADirectoryError as exc:  # a folder that could not be listed (see datasets.folder_files)
            raise SessionError(self.path, None, f"cannot read folder: {_listing_error(self.path)}") from exc
        except OSError as exc:
            raise SessionError(self.path, None, f"cannot read file: {exc.strerror or exc}") from exc
        if self.path.suffix == ".gz" or data[:2] == b"\x1f\x8b":
            data = self._gunzip(data)
        # A UTF-8 byte-order mark (Windows editors and PowerShell write one) is no part of the first
        # record: read as utf-8-sig, every format, JSON lines and documents alike.
        data = data.removeprefix(codecs.BOM_UTF8)
        if not data or data.isspace():  # (not data.strip(): that copies the whole file)
            raise SessionError(self.path, None, "file is empty: there is no session in it")
        return data

    def _gunzip(self, data: bytes) -> bytes:
        """Every member of the gzip stream (`cat a.gz b.gz` makes a valid file of two), inflated
        in bounded steps so that a gzip bomb stops at `gunzip_limit` instead of filling memory.
        zlib rather than gzip.decompress so that a truncated stream still yields what it holds."""
        limit = gunzip_limit(len(data))
        chunks: list[bytes] = []
        size = 0
        pending = data
        while pending:
            inflater = zlib.decompressobj(wbits=47)
            try:
                while not inflater.eof:
                    chunk = inflater.decompress(pending, GUNZIP_STEP)
                    pending = inflater.unconsumed_tail
                    size += len(chunk)
                    if size > limit:
                        raise SessionError(
                            self.path,
                            None,
                            (
                                f"decompresses to more than {limit >> 20} MiB (from {len(data)} bytes): stopped, as a gzip "
                                f"bomb would fill memory. The limit is {GUNZIP_RATIO} times the file's size, at least "
                                f"{GUNZIP_FLOOR >> 20} MiB; set {GUNZIP_LIMIT_VARIABLE} (MiB) to read a larger file"
                            ),
                        )
                    chunks.append(chunk)
                    if not chunk and not pending:
                        break
            except zlib.error as exc:
                raise SessionError(self.path, None, f"not a valid gzip file: {exc} (after {size} bytes)") from exc
            if not inflater.eof:
                self.truncated_at = size
                break
            pending = inflater.unused_data
            if not pending.strip(b"\0"):  # zero padding after the last member (tape and some tools write it)
                break
        return b"".join(chunks)

    def _decode(self, data: bytes, line: int | None) -> str:
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            if line is None:
                line = data.count(b"\n", 0, exc.start) + 1
            raise SessionError(self.path, line, f"invalid UTF-8 at byte {exc.start} of the line: {exc.reason}") from exc

    @cached_property
    def text(self) -> str:
        return self._decode(self.raw, None)

    @cached_property
    def document(self) -> object:
        """The whole file parsed as a single JSON value (for JSON, not JSONL, formats)."""
        try:
            return json.loads(self.text)
        except json.JSONDecodeError as exc:
            raise SessionError(self.path, exc.lineno, f"invalid JSON: {exc.msg} (column {exc.colno})") from exc
        except RecursionError as exc:
            raise SessionError(self.path, None, TOO_DEEP) from exc

    def is_single_document(self) -> bool:
        """True when the file is one JSON value rather than JSON lines."""
        try:
            _ = self.document
        except SessionError:
            return False
        return True

    def records(self, issues: RecordIssues, back_to_back: bool = False) -> Iterator[Record]:
        """Each non-blank line parsed as JSON. Damaged lines go to `issues`. `back_to_back`: a line
        holding several JSON values one after the other (a lost newline) gives each of them."""
        lines = self.raw.split(b"\n")
        last = len(lines)
        for number, raw_line in enumerate(lines, start=1):
            if not raw_line.strip():
                continue
            if self.truncated_at is not None and number == last:
                issues.report(number, "line cut off where the gzip stream ends (truncated .gz file)")
                continue
            if number <= len(self._head_exact) and self._head_exact[number - 1]:  # parsed for detection
                yield Record(line=number, data=self._head_parsed[number - 1])
                continue
            try:
                text = self._decode(raw_line, number)
                data = json.loads(text)
            except SessionError as exc:
                issues.report(number, exc.what)
                continue
            except json.JSONDecodeError as exc:
                values = _back_to_back(text, exc) if back_to_back else None
                if values is None:
                    issues.report(number, f"invalid JSON: {exc.msg} (column {exc.colno})")
                    continue
                for value in values:
                    yield Record(line=number, data=value)
                continue
            except RecursionError:
                issues.report(number, TOO_DEEP)
                continue
            yield Record(line=number, data=data)
        if self.truncated_at is not None:
            issues.report(None, f"gzip stream truncated after {self.truncated_at} bytes; the rest is lost")

    def head_records(self, limit: int = 25) -> list[Record]:
        """The first parseable JSON lines, for format detection (damage is ignored here)."""
        found: list[Record] = []
        # Look at the first few lines only: a pretty-printed JSON document has thousands of lines
        # that are not JSON on their own, and detection must not parse them all. Each importer
        # asks in turn, so a line is parsed once for all of them.
        for number in range(1, limit * 4 + 1):
            if len(found) >= limit:
                break
            data = self._head_line(number)
            if data is not _NOT_JSON:
                found.append(Record(line=number, data=data))
        return found

    def _head_line(self, number: int) -> object:
        """Line `number` (from 1) parsed, or _NOT_JSON (also past the end of the file)."""
        parsed = self._head_parsed
        while len(parsed) < number and self._head_end is not None:  # parse the next line
            start = self._head_end
            end = self.raw.find(b"\n", start)
            self._head_end = None if end == -1 else end + 1
            line = self.raw[start : None if end == -1 else end]
            try:
                # No JSON text ends with a comma, a colon or an opening bracket: the lines of a
                # pretty-printed document mostly do, and are not parsed just to fail.
                parsed.append(_NOT_JSON if line.rstrip().endswith((b",", b":", b"{", b"[")) else json.loads(line))
            except (ValueError, RecursionError):  # (the line is reported when `records` reads it)
                parsed.append(_NOT_JSON)
            # `records` takes the value as it is when parsing the decoded line would give the same:
            # json.loads reads bytes as UTF-8 (allowing encoded surrogates, which start with 0xED)
            # unless they start with a BOM or a NUL byte.
            self._head_exact.append(
                parsed[-1] is not _NOT_JSON
                and line[:1] != b"\0"
                and line[1:2] != b"\0"
                and not line.startswith(codecs.BOM_UTF8)
                and b"\xed" not in line
            )
        return parsed[number - 1] if number <= len(parsed) else _NOT_JSON


_NOT_JSON = object()  # a head line that is not JSON on its own

TOO_DEEP = "JSON nested too deeply to read (thousands of levels of arrays or objects)"
GUNZIP_STEP = 1 << 20  # bytes inflated at a time
# A .gz file may inflate to GUNZIP_RATIO times its size, and always to GUNZIP_FLOOR: real
# sessions compress about 4 to 20 times; a gzip bomb of zeros about 1,000 times.
GUNZIP_RATIO = 100
GUNZIP_FLOOR = 64 << 20
GUNZIP_LIMIT_VARIABLE = "COMPACTLAB_MAX_GUNZIP_MB"


def gunzip_limit(compressed_size: int) -> int:
    """How many bytes a .gz file of `compressed_size` bytes may inflate to."""
    configured = os.environ.get(GUNZIP_LIMIT_VARIABLE)
    if configured:
        try:
            return int(float(configured) * (1 << 20))
        except ValueError:
            raise ValueError(f"{GUNZIP_LIMIT_VARIABLE}={configured!r}: expected a number of MiB") from None
    return max(GUNZIP_FLOOR, GUNZIP_RATIO * compressed_size)


def _listing_error(folder: Path) -> str:
    try:
        with os.scandir(folder):
            if folder.is_symlink():  # only links out of the folder named are left unwalked (datasets.folder_files)
                return f"a link to the folder {os.path.realpath(folder)}, outside the folder named: not followed"
            return "it is a folder, not a session file"
    except OSError as exc:
        return exc.strerror or str(exc)


def _back_to_back(text: str, error: json.JSONDecodeError) -> list[object] | None:
    """The JSON values of a line that holds several one after the other, or None when it is
    damaged otherwise."""
    if error.msg != "Extra data":
        return None
    decoder = json.JSONDecoder()
    values: list[object] = []
    position = 0
    try:
        while position < len(text):
            value, position = decoder.raw_decode(text, position)
            values.append(value)
            while position < len(text) and text[position].isspace():
                position += 1
    except json.JSONDecodeError:
        return None
    return values
