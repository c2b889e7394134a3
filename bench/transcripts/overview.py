"""What is in a transcript, in numbers: the data behind `compactlab inspect`."""

from __future__ import annotations

from collections import Counter

import pandas as pd

from compactlab.transcripts.model import Transcript


def summarize(transcript: Transcript) -> dict:
    """One flat record per transcript. `llm_calls` counts recorded LLM calls (one per response);
    `max_prompt_tokens` is the largest prompt the provider billed (input incl. cache reads/writes)."""
    return {
        "path": transcript.source_path,
        "id": transcript.id,
        "format": transcript.source_format,
        "messages": len(transcript.messages),
        "llm_calls": len(transcript.calls),
        "max_prompt_tokens": transcript.max_prompt_tokens,
        "models": list(transcript.models),
        "context_window": transcript.context_window,
        "compactions": len(transcript.compactions),
        "is_subagent": transcript.is_subagent,
        "skipped_records": len(transcript.skipped),
        "skipped_reasons": skipped_reasons(transcript),
        "ignored_records": dict(transcript.ignored),
    }


def skipped_reasons(transcript: Transcript) -> dict[str, int]:
    """Skipped records grouped by reason, the column detail dropped so that alike reasons group."""
    return dict(Counter(s.reason.split(" (column")[0] for s in transcript.skipped).most_common())


def overview_frame(transcripts: list[Transcript] | tuple[Transcript, ...]) -> pd.DataFrame:
    rows = [summarize(t) for t in transcripts]
    # The path as Python strings: a file name may hold bytes that are not UTF-8 (kept as surrogate
    # escapes), which the Arrow-backed strings pandas infers where pyarrow is installed cannot hold.
    paths = pd.Series([row.pop("path") for row in rows], dtype=object)
    frame = pd.DataFrame(rows)
    if rows:
        frame.insert(0, "path", paths)
    return frame
