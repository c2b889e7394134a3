"""What is in a session, in numbers: the data behind `compactlab inspect`."""

from __future__ import annotations

from collections import Counter

import pandas as pd

from compactlab.sessions.model import Session


def summarize(session: Session) -> dict:
    """One flat record per session. `llm_calls` counts recorded LLM calls (one per response);
    `max_prompt_tokens` is the largest prompt the provider billed (input incl. cache reads/writes)."""
    return {
        "path": session.source_path,
        "id": session.id,
        "format": session.source_format,
        "messages": len(session.messages),
        "llm_calls": len(session.calls),
        "max_prompt_tokens": session.max_prompt_tokens,
        "models": list(session.models),
        "context_window": session.context_window,
        "compactions": len(session.compactions),
        "is_subagent": session.is_subagent,
        "skipped_records": len(session.skipped),
        "skipped_reasons": skipped_reasons(session),
        "ignored_records": dict(session.ignored),
    }


def skipped_reasons(session: Session) -> dict[str, int]:
    """Skipped records grouped by reason, the column detail dropped so that alike reasons group."""
    return dict(Counter(s.reason.split(" (column")[0] for s in session.skipped).most_common())


def overview_frame(sessions: list[Session] | tuple[Session, ...]) -> pd.DataFrame:
    rows = [summarize(t) for t in sessions]
    # The path as Python strings: a file name may hold bytes that are not UTF-8 (kept as surrogate
    # escapes), which the Arrow-backed strings pandas infers where pyarrow is installed cannot hold.
    paths = pd.Series([row.pop("path") for row in rows], dtype=object)
    frame = pd.DataFrame(rows)
    if rows:
        frame.insert(0, "path", paths)
    return frame
