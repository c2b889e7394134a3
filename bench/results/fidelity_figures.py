"""How close the replay comes at real compactions: each compaction counted once, by family, in
tokens and in per cent.

A real compaction tests the replay once (`compactlab.results.metrics.recorded_fidelity`: the replay's
prediction of the first prompt after it against the recorded one). Two kinds of row are not a new
test, and are named and counted apart, never in a figure:
- **a copy**: a compaction with no call before it in its file. Claude Code's sub-agent copy files
  (`subagents/agent-acompact-*`, `agent-aside_question-*`) start with a copy of the main
  conversation and its compaction; the per-session constant is then measured on the tested call
  itself, so the error is the summary's size, every time;
- **a repeat**: the same compaction saved in another file (the same summary text, met earlier in
  the run's order of sessions).

The figures are given per family, never pooled silently: the counts of a gateway model run through
Claude Code describe its own prompt, not the one Anthropic's tokenizer counts, and Codex and pi
compact in their own ways. Each family's figures: the share within ±5% and ±10% of the recorded
size, within 3,000 and 7,500 tokens of it, and the median |error| both ways.
"""

from __future__ import annotations

import hashlib
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

import pandas as pd

ANTHROPIC = "Anthropic"
OTHER_THROUGH_CLAUDE_CODE = "other models through Claude Code"
FAMILY_OF_FORMAT = {"codex-rollout": "Codex", "pi-session": "pi"}
FAMILIES = (ANTHROPIC, OTHER_THROUGH_CLAUDE_CODE, "Codex", "pi")

COPY = "a copy: no call before it in its file (the constant would be measured on the tested call)"
REPEAT = "a repeat of"  # + the session and call first seen
NO_SIZE = "no recorded size: the provider reported 0 prompt tokens"
# Why a family's figure is shown apart from the replay's: its counts do not describe the prompt the replay rebuilds.
APART = {
    OTHER_THROUGH_CLAUDE_CODE: "another provider's model served through Claude Code: its usage counts that provider's prompt "
    "(another tokenizer; a gateway that may cache, rewrite or not report it), which the replay's fits do not describe",
}

SHARES = (0.05, 0.10)  # within ± this share of the recorded size
TOKENS = (3_000, 7_500)  # within this many tokens of it


def summary_sha(text: str | None) -> str | None:
    """What tells the same compaction saved in two files: its summary's hash (None without a summary)."""
    return hashlib.sha256(text.encode()).hexdigest()[:16] if isinstance(text, str) and text else None


def family_of(source_format: str, model: str | None) -> str:
    """The family a real compaction's figure is given in: the engine, and for Claude Code whether
    the model is Anthropic's (whose counts the replay's fit describes) or another served through it."""
    if source_format in FAMILY_OF_FORMAT:
        return FAMILY_OF_FORMAT[source_format]
    if source_format == "claude-code":
        return ANTHROPIC if isinstance(model, str) and model.startswith("claude") else OTHER_THROUGH_CLAUDE_CODE
    return source_format


def left_out(rows: Sequence[Mapping]) -> list[str]:
    """Per fidelity row (`session`, `call`, `summary_sha`, `fidelity_recorded`), in order: "" for a
    distinct compaction with a recorded size, else why it is in no figure (`repeats_of`, or `NO_SIZE`)."""
    return [why or ("" if row["fidelity_recorded"] else NO_SIZE) for row, why in zip(rows, repeats_of(rows))]


def repeats_of(rows: Sequence[Mapping]) -> list[str]:
    """Per row (`session`, `call`: the number of the first call after the compaction, `summary_sha`),
    in order: "" for a distinct compaction, else why it is not one (`COPY`, or `REPEAT` and the row
    first seen)."""
    seen: dict[str, str] = {}
    found = []
    for row in rows:
        sha = row.get("summary_sha") or ""
        if row["call"] == 0:
            found.append(COPY)
        elif sha and sha in seen:
            found.append(f"{REPEAT} {seen[sha]}")
        else:
            found.append("")
            if sha:
                seen[sha] = f"{row['session']} call {row['call']}"
    return found


@dataclass(frozen=True)
class FidelityFigures:
    """How close predictions came to the recorded sizes of some real compactions."""

    count: int
    within_5pct: float
    within_10pct: float
    within_3000: float
    within_7500: float
    median_pct: float  # median |error| / recorded
    median_tokens: float  # median |error| in tokens

    @staticmethod
    def of(predicted: Sequence[float], recorded: Sequence[float]) -> FidelityFigures:
        pairs = [(p, r) for p, r in zip(predicted, recorded) if r]
        if not pairs:
            return FidelityFigures(0, *(float("nan"),) * 6)
        tokens = [abs(p - r) for p, r in pairs]
        shares = [abs(p - r) / r for p, r in pairs]

        def within(values: list[float], limit: float) -> float:
            return sum(v <= limit for v in values) / len(values)

        return FidelityFigures(
            len(pairs),
            within(shares, SHARES[0]),
            within(shares, SHARES[1]),
            within(tokens, TOKENS[0]),
            within(tokens, TOKENS[1]),
            statistics.median(shares),
            statistics.median(tokens),
        )

    def line(self) -> str:
        if not self.count:
            return "no compaction"
        return (
            f"{self.count} compactions: {100 * self.within_5pct:.0f}% within ±5%, {100 * self.within_10pct:.0f}% within ±10%, "
            f"{100 * self.within_3000:.0f}% within 3,000 tokens, {100 * self.within_7500:.0f}% within 7,500; "
            f"median |error| {100 * self.median_pct:.1f}% ({self.median_tokens:,.0f} tokens)"
        )


def with_families(fidelity: pd.DataFrame, formats: Mapping[str, str]) -> pd.DataFrame:
    """The fidelity rows with their `family` (from `formats`: session → source format) and `left_out`
    ("" if counted, else why not)."""
    if fidelity.empty:
        return fidelity
    frame = fidelity.copy()
    models = frame["model"] if "model" in frame else pd.Series([None] * len(frame), index=frame.index)
    frame["family"] = [family_of(formats.get(s, ""), m) for s, m in zip(frame["session"], models)]
    frame["left_out"] = left_out(frame.to_dict("records"))
    return frame


def fidelity_document(frame: pd.DataFrame) -> dict:
    """What summary.json holds of the fidelity rows `with_families` marked: the distinct count, the
    copies and repeats left out, and the figures per family."""
    if frame.empty or "family" not in frame:
        return {"distinct": 0, "copies": 0, "repeats": 0, "no_size": 0, "families": {}}
    distinct = frame[frame["left_out"] == ""]
    families = {}
    for family in sorted(set(distinct["family"]), key=lambda f: (FAMILIES.index(f) if f in FAMILIES else len(FAMILIES), f)):
        rows = distinct[distinct["family"] == family]
        figures = FidelityFigures.of(rows["fidelity_predicted"].tolist(), rows["fidelity_recorded"].tolist())
        families[family] = {**asdict(figures), "line": figures.line(), "apart": APART.get(family)}
    return {
        "distinct": len(distinct),
        "copies": int((frame["left_out"] == COPY).sum()),
        "repeats": int(frame["left_out"].str.startswith(REPEAT).sum()),
        "no_size": int((frame["left_out"] == NO_SIZE).sum()),
        "families": families,
    }


def counts_line(document: Mapping) -> str:
    """The distinct count and what was left out, in words."""
    left = []
    if document.get("copies"):
        left.append(f"{document['copies']} copies (no call before them in their file)")
    if document.get("repeats"):
        left.append(f"{document['repeats']} repeats (the same compaction in another file)")
    if document.get("no_size"):
        left.append(f"{document['no_size']} with no recorded size (0 prompt tokens reported)")
    return f"{document.get('distinct', 0)} distinct real compactions" + (f"; left out: {', '.join(left)}" if left else "")
