"""What is in a session, in numbers: the data behind `compactlab inspect`."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from compactlab.sessions.loading import Loaded
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


# A listing of damage, one line per record, grows with the data (912 records of 15 sessions made 195 KB):
# `inspect` groups it by kind, with counts and a few examples; --all-skips and --json give every one.
EXAMPLES = 3
GROUP_FROM = 10  # files not read are listed one by one up to this many


@dataclass(frozen=True)
class DamageGroup:
    kind: str  # the reason, without what differs between records of one kind
    count: int
    sessions: int  # how many sessions hold records of this kind
    examples: tuple[str, ...]  # FILE:LINE of the first few


def damage_kind(reason: str) -> str:
    """A skipped record's reason without its column and its quoted values (ids, names), so alike records group."""
    return re.sub(r"'[^']{2,}'|\"[^\"]{2,}\"", "'…'", reason.split(" (column")[0])


def damage_groups(sessions: Sequence[Session]) -> list[DamageGroup]:
    """The records `sessions` skipped, by kind, the commonest first."""
    found: dict[str, list[tuple[str, str]]] = defaultdict(list)  # kind -> (session id, FILE:LINE)
    for session in sessions:
        name = Path(session.source_path).name
        for skipped in session.skipped:
            found[damage_kind(skipped.reason)].append((session.id, f"{name}:{skipped.line}" if skipped.line else name))
    groups = [DamageGroup(kind, len(places), len({s for s, _ in places}), _examples(places)) for kind, places in found.items()]
    return sorted(groups, key=lambda g: (-g.count, g.kind))


def _examples(places: list[tuple[str, str]]) -> tuple[str, ...]:
    """The first place of each session first, then the next ones: examples from several sessions."""
    firsts = list({session: place for session, place in reversed(places)}.values())[::-1]
    return tuple(dict.fromkeys([*firsts, *(place for _, place in places)]))[:EXAMPLES]


def format_damage(sessions: Sequence[Session], failed: Sequence[tuple[Path, str]], every: bool = False) -> list[str]:
    """The lines `inspect` prints of what it skipped and could not read: grouped by kind with counts and
    examples, or (`every`) each session's and each file's line."""
    lines: list[str] = []
    damaged = [s for s in sessions if s.skipped]
    if every:
        for session in damaged:
            reasons = "; ".join(f"{n}× {r}" for r, n in skipped_reasons(session).items())
            lines.append(f"  skipped in {session.source_path}: {reasons}")
    elif damaged:
        total = sum(len(s.skipped) for s in damaged)
        lines.append(f"  {total} damaged records skipped in {len(damaged)} sessions, by kind (--all-skips lists each session's):")
        for group in damage_groups(damaged):
            lines.append(
                f"    {group.count}× {group.kind} (in {group.sessions} session{'s' if group.sessions != 1 else ''}; "
                f"e.g. {', '.join(group.examples)})"
            )
    if every or len(failed) <= GROUP_FROM:
        return lines + [f"  file not read: {error}" for _, error in failed]
    kinds: dict[str, list[str]] = defaultdict(list)
    for path, error in failed:
        kinds[damage_kind(error.removeprefix(str(path)).lstrip(":0123456789 "))].append(Path(path).name)
    lines.append(f"  {len(failed)} files not read, by reason (--all-skips lists each):")
    for kind, names in sorted(kinds.items(), key=lambda k: (-len(k[1]), k[0])):
        lines.append(f"    {len(names)}× {kind} (e.g. {', '.join(names[:EXAMPLES])})")
    return lines


def format_overview(loaded: Loaded, every: bool = False) -> str:
    """What `compactlab inspect` prints: a row per session, the totals, and what was skipped or not read
    (grouped by kind unless `every`)."""
    lines: list[str] = []
    frame = overview_frame(loaded.sessions)
    if not frame.empty:
        table = frame.assign(
            file=frame["id"].str.slice(0, 44),
            models=frame["models"].map(lambda m: ", ".join(m)[:40]),
            max_prompt=frame["max_prompt_tokens"].astype("Int64"),
        )[["file", "format", "messages", "llm_calls", "max_prompt", "compactions", "skipped_records", "models"]]
        lines.append(table.to_string(index=False))
        lines.append("")
        lines.append(
            f"{len(frame)} sessions, {frame['messages'].sum()} messages, {frame['llm_calls'].sum()} LLM calls, "
            f"{frame['compactions'].sum()} real compactions, {frame['skipped_records'].sum()} damaged records skipped"
        )
    lines += format_damage(loaded.sessions, [(f.path, f.error) for f in loaded.failed], every)
    if loaded.passed_over:
        lines.append(f"  {len(loaded.passed_over)} files in the given folders are not sessions by name and were not read")
    return "\n".join(lines)
