"""Summary drift: what one summary carried that the next one dropped while the session still needed it.

A session compacted several times by a summarizing strategy has a chain of summaries, each written
from the one before (merged into it, or re-summarized with it). CompactBench measures how facts
decay along such chains on synthetic sessions; here it is measured on the replayed real ones, from
the compaction rows alone (each row has its `summary` and the items its next steps needed,
`compactlab.scoring.preservation`):

    for consecutive summaries n and n+1 of a session, the facts needed later are the items the
    five recorded steps after compaction n+1 use that the history already held (the row's k=5
    `needed`); carried = those present in summary n; dropped = carried ones absent from summary n+1.

A session's drift is its dropped count over its carried count, pooled over its consecutive pairs
(None when it has no pair, or no carried fact). Only summaries that changed count: a compaction
that left the summary as it was (a prune stage after an earlier summary) wrote no new one.
Matching is `compactlab.scoring.matching.present`, the rule next-step preservation uses.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from compactlab.scoring.matching import Haystack, Item, present


def drift_counts(rows: Iterable[Mapping]) -> list[tuple[int, int] | None]:
    """Per compaction row, in the order given: (carried, dropped) when it wrote a new summary after an
    earlier one of the same session × setting, else None. Rows of one unit must come in replay order.

    The settings of a sweep often write the same summaries from the same contexts (thresholds a
    context jumps past, strategies that summarize alike): each distinct pair of summaries and
    needed items is matched once, and each summary made searchable once, for all the rows given."""
    rows = list(rows)
    counts: list[tuple[int, int] | None] = [None] * len(rows)
    previous: dict[tuple[str, str], Haystack] = {}
    haystacks: dict[str, Haystack] = {}
    matched: dict[tuple[str, str, tuple[str, ...]], tuple[int, int]] = {}
    for index, row in enumerate(rows):
        summary = row.get("summary")
        if row.get("failed") or not summary:
            continue
        unit = (row["session"], row["setting"])
        earlier = previous.get(unit)
        if earlier is not None and earlier.text == summary:
            continue  # the summary was not rewritten
        current = haystacks.get(summary)
        if current is None:
            current = haystacks[summary] = Haystack(summary)
        previous[unit] = current
        if earlier is None:
            continue
        needed = tuple((row.get("preservation") or {}).get("k5", {}).get("needed", ()))
        key = (earlier.text, summary, needed)
        if key not in matched:
            carried = [item for item in _items(needed) if present(item, earlier)]
            matched[key] = (len(carried), sum(1 for item in carried if not present(item, current)))
        counts[index] = matched[key]
    return counts


def _items(texts: Iterable[str]) -> list[Item]:
    """Items as compaction rows store them: "kind:text"."""
    return [Item(*text.split(":", 1)) for text in texts]  # type: ignore[arg-type]
