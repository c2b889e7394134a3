"""Load every transcript named on a command line, with progress and an account of what failed.

Strict mode (the default) stops at the first problem with an error naming file and line.
Lenient mode skips damaged records (counted on each transcript) and, when a whole file cannot be
read (empty, unknown format, not JSON at all), records the file in `Loaded.failed` and goes on.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from bench.datasets import resolve_inputs
from bench.importers import load_file
from bench.model import Transcript
from bench.source import TranscriptError


@dataclass(frozen=True)
class FailedFile:
    path: Path
    error: str


@dataclass(frozen=True)
class Loaded:
    transcripts: tuple[Transcript, ...]
    failed: tuple[FailedFile, ...] = ()
    # Files in given folders that are not transcripts by name (README, LICENSE, ...).
    passed_over: tuple[Path, ...] = ()


def load_inputs(
    arguments: list[str] | None, *, lenient: bool = False, format: str | None = None, progress: bool = False
) -> Loaded:
    """Transcripts of every file, folder or dataset name in `arguments` (none: all bundled datasets)."""
    inputs = resolve_inputs(arguments)
    transcripts: list[Transcript] = []
    failed: list[FailedFile] = []
    files = tqdm(inputs.files, desc="reading transcripts", unit="file", disable=not progress, leave=False)
    for path in files:
        file_lenient = lenient or path in inputs.lenient_files
        try:
            transcripts.extend(load_file(path, lenient=file_lenient, format=format))
        except TranscriptError as exc:
            if not file_lenient:
                raise
            failed.append(FailedFile(path=path, error=str(exc)))
    return Loaded(transcripts=tuple(transcripts), failed=tuple(failed), passed_over=inputs.passed_over)
