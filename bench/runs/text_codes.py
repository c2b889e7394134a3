"""Text columns as codes into their distinct values: cheap to send between processes and to group by.

A session's call rows repeat a few texts (session, setting, model) thousands of times; a run
moves them as numbers and builds the frame's column from the distinct values once.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

TextCodes = tuple[np.ndarray, list]  # a text column as codes into its distinct values


def text_codes(values: list) -> TextCodes:
    """A text column with few distinct values (session, setting, model) as codes into them: cheap
    to send between processes, and `coded_text` builds the frame's column from the distinct values."""
    # Numbered in order of first appearance, as pd.factorize would number them (its set-up cost
    # more than the numbering for a session's few thousand rows).
    distinct: dict = {}
    return _numbered(values, distinct), list(distinct)


def joined_codes(parts: list[TextCodes]) -> TextCodes:
    """The coded text columns of several replays, one after the other, as one coded column."""
    distinct: dict = {}
    codes = [_numbered(values, distinct)[part_codes] for part_codes, values in parts]
    return np.concatenate(codes) if codes else np.zeros(0, dtype=np.intp), list(distinct)


def _numbered(values: list, distinct: dict) -> np.ndarray:
    """Each value's number in `distinct`, which numbers a value not in it yet next."""
    return np.fromiter((distinct.setdefault(value, len(distinct)) for value in values), dtype=np.intp, count=len(values))


def joined_text(parts: list[TextCodes]):
    """The coded text columns of several replays, one after the other, as a frame's column."""
    return coded_text(joined_codes(parts))


def coded_text(coded: TextCodes):
    """A coded text column stored as pandas would store the texts themselves, built from the
    distinct texts instead of converting every row's."""
    codes, distinct = coded
    if not all(isinstance(value, str) for value in distinct):  # missing values: pandas decides as usual
        return np.array(distinct, dtype=object)[codes]
    return pd.Series(distinct).array.take(codes)


def summary_groups(sessions: TextCodes, settings: TextCodes) -> tuple[np.ndarray, list[tuple[str, str]]]:
    """Each row's session × setting as a number, numbered in sorted order, and the pairs by number:
    what `session_summary` groups by (numbers group faster than pairs of texts)."""
    session_codes, session_names = sessions
    config_codes, config_names = settings
    pairs, inverse = np.unique(session_codes * len(config_names) + config_codes, return_inverse=True)
    named = [(session_names[p // len(config_names)], config_names[p % len(config_names)]) for p in pairs.tolist()]
    order = sorted(range(len(named)), key=named.__getitem__)
    rank = np.empty(len(order), dtype=np.intp)
    rank[order] = np.arange(len(order))
    return rank[inverse.reshape(-1)], [named[i] for i in order]
