"""The replay's prompt-cache model on the recorded sessions against the cache the provider billed.

    python -m tests.scripts.cache_model_check [FOLDER ...] [--sessions]

For each session whose calls record cache writes (Claude Code, pi on Anthropic), the uncompacted
replay (the recorded session, the same rows every setting starts from) attributes cache writes to
each call: its prompt minus the part the cache served (`full_tokens − full_prefix_tokens`). This
prints, per folder and model family, how many sessions have modelled writes within 5% of the
recorded `cache_creation` tokens in sum, and how many have as many prefix breaks as the recorded
cache reads show. A recorded break is a call whose cache read falls below the previous call's
cached part (its read plus its write: the few uncached input tokens after the last cache
breakpoint are never cached); a modelled break is a call whose modelled prefix falls below the
previous prompt. Each recorded break is also put down to what explains it in the log: a pause past
the cache's lifetime or a change of model (`compactlab.replay.prompt_cache`), a prompt that shrank
(a compaction), or nothing the log records.

A session counted once: a file whose calls' request ids mostly appeared in a file read before (a
Claude Code sub-agent copy of its parent, the same session saved twice) is left out, and counted.
With no folder: the bundled datasets and the shared sessions beside the repository.
"""

from __future__ import annotations

import argparse
import statistics
from collections import Counter, defaultdict
from pathlib import Path

from compactlab.replay.uncompacted import uncompacted
from compactlab.sessions.loading import load_inputs
from compactlab.sessions.model import Session
from compactlab.tokens.calibration import model_family_of
from compactlab.tokens.metering import Meter

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "transcripts"
WITHIN = 0.05
WINDOW = 10_000_000  # no call overflows: the check is about the cache, not the window


def session_figures(session: Session) -> dict:
    """The recorded and modelled writes and breaks of one session, and the recorded breaks' causes."""
    base = uncompacted(Meter(session, "hybrid"), WINDOW)
    rows = base.columns
    # Up to the first production compaction: after it the uncompacted replay's prompt is the history
    # the agent no longer sent (sized by estimate), not the recorded prompt the provider cached.
    first_marker = min((m.at_message for m in session.compactions), default=len(session.messages))
    count = sum(index < first_marker for index in rows["message_index"])
    calls = list(session.calls)[:count]
    full, cached = rows["full_tokens"][:count], rows["full_prefix_tokens"][:count]
    modelled_writes = sum(f - c for f, c in zip(full, cached))
    modelled_breaks = sum(cached[i] < full[i - 1] for i in range(1, len(full)))
    causes: Counter[str] = Counter()
    cold = getattr(base, "cache", None)  # (absent before the cache model: the script also measures the old rule)
    for i in range(1, len(calls)):
        previous, call = calls[i - 1], calls[i]
        if call.cache_read_tokens >= previous.cache_read_tokens + previous.cache_write_tokens:
            continue
        if cold is not None and cold.cold[i]:
            causes["pause or model change"] += 1
        elif call.prompt_tokens < previous.prompt_tokens:
            causes["prompt shrank (a compaction)"] += 1
        else:
            causes["nothing the log records"] += 1
    return {
        "recorded_writes": sum(c.cache_write_tokens for c in calls),
        "modelled_writes": modelled_writes,
        "recorded_breaks": sum(causes.values()),
        "modelled_breaks": modelled_breaks,
        "causes": causes,
        "timed": all(c.timestamp is not None for c in calls),
    }


def distinct(sessions: list[Session]) -> tuple[list[Session], int]:
    """The sessions, less those whose calls mostly repeat an earlier session's (by request id)."""
    seen: set[str] = set()
    kept, copies = [], 0
    for session in sessions:
        ids = [c.request_id for c in session.calls if c.request_id]
        if ids and sum(i in seen for i in ids) * 2 >= len(ids):
            copies += 1
            continue
        seen.update(ids)
        kept.append(session)
    return kept, copies


def main(folders: list[str], per_session: bool) -> None:
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    left_out: Counter[str] = Counter()
    for folder in folders:
        name = Path(folder).name
        sessions, copies = distinct(list(load_inputs([folder], lenient=True).sessions))
        left_out[f"{name}: copies of another session"] += copies
        for session in sessions:
            figures = session_figures(session)
            if not figures["recorded_writes"]:
                left_out[f"{name}: no recorded cache writes before its first compaction"] += 1
                continue
            groups[(name, model_family_of(session))].append(figures)
            if per_session:
                error = (figures["modelled_writes"] - figures["recorded_writes"]) / figures["recorded_writes"]
                print(
                    f"  {session.id[:60]:60} writes {figures['recorded_writes']:>9,} modelled {figures['modelled_writes']:>9,}"
                    f" ({error:+.1%}); breaks {figures['recorded_breaks']} modelled {figures['modelled_breaks']}"
                )
    print(
        f"{'folder':24} {'family':8} {'sessions':>8} {'writes ±5%':>11} {'median error':>13} {'breaks equal':>13} {'untimed':>8}"
    )
    causes: Counter[str] = Counter()
    for (name, family), rows in sorted(groups.items()):
        errors = [abs(r["modelled_writes"] - r["recorded_writes"]) / r["recorded_writes"] for r in rows]
        within = sum(e <= WITHIN for e in errors)
        equal = sum(r["recorded_breaks"] == r["modelled_breaks"] for r in rows)
        untimed = sum(not r["timed"] for r in rows)
        print(
            f"{name:24} {family:8} {len(rows):8} {within:>5} of {len(rows):<3} {statistics.median(errors):>12.1%}"
            f" {equal:>6} of {len(rows):<4} {untimed:>6}"
        )
        for row in rows:
            causes.update(row["causes"])
    total = sum(causes.values())
    print(
        f"recorded prefix breaks: {total}; " + "; ".join(f"{k}: {v} ({v / max(1, total):.0%})" for k, v in causes.most_common())
    )
    for reason, count in sorted(left_out.items()):
        if count:
            print(f"left out: {reason}: {count}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m tests.scripts.cache_model_check", description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="*", help="session folders (default: the bundled datasets and the shared sessions)")
    parser.add_argument("--sessions", action="store_true", help="print each session's figures too")
    arguments = parser.parse_args()
    default = [str(p) for p in sorted((ROOT / "datasets").iterdir()) if p.is_dir()]
    default += [str(p) for p in sorted(SHARED.iterdir()) if p.is_dir()] if SHARED.exists() else []
    main(arguments.folders or default, arguments.sessions)
