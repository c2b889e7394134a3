"""A run's token estimation gathered as its sessions arrive, its call rows kept on disk.

The estimation has a row per recorded call × estimator (nine estimators by default): kept in the
run's process for every session, it was the largest thing that grew with the corpus (issue 31: a
small frame per session). `compactlab.runs.session_results.RunTotals` hands each block of sessions'
estimation to `EstimationParts`, which writes the block's call rows to a Parquet file in a
temporary folder at once; `write_calls` streams the blocks into the run's `estimation/calls.parquet`
at the end, one block in memory at a time. The rest (the fits, the counts, the damaged sessions'
ids, the size-check rows) is a few numbers per session and is kept.
"""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from compactlab.tokens.estimation import EstimationResult


class EstimationParts:
    """The estimation of the sessions added so far, in the order they were added."""

    def __init__(self) -> None:
        self._folder = tempfile.TemporaryDirectory(prefix="compactlab-estimation-")
        self.parts: list[Path] = []
        self._rest: list[EstimationResult] = []  # each block's result, without its call rows
        self.size_rows: list[dict] = []  # tests.scripts.prompt_size_check's rows

    def add(self, block: list[EstimationResult], size_rows: list[dict]) -> None:
        """One block of sessions' estimation and size-check rows: its call rows written, the rest kept."""
        result = EstimationResult.combined(block)
        if len(result.calls):
            path = Path(self._folder.name) / f"{len(self.parts):06d}.parquet"
            result.calls.to_parquet(path, index=False)
            self.parts.append(path)
        self._rest.append(replace(result, calls=result.calls.iloc[:0]))
        self.size_rows += size_rows

    def result(self) -> EstimationResult:
        """The estimation of every session added, without its call rows (`write_calls` writes them)."""
        return EstimationResult.combined(self._rest)

    def write_calls(self, path: Path) -> None:
        """Every call row, as one frame of them all would be written (a column's type widened where
        blocks differ, as pandas widens it when it joins them), one block read at a time."""
        if not self.parts:
            self.result().calls.to_parquet(path, index=False)
            return
        schemas = [pq.read_schema(part) for part in self.parts]
        schema = pa.unify_schemas(schemas, promote_options="permissive").remove_metadata()
        with pq.ParquetWriter(path, schema) as writer:
            for part in self.parts:
                writer.write_table(pq.read_table(part).cast(schema))

    def close(self) -> None:
        self._folder.cleanup()
