"""Per-session part of a run report: context size over the session and every compaction in detail.

To keep the file small, only the sessions with the most prompt tokens (plus every session with a
real compaction) get a chart and a drill-down; the report names the rule. Each is one line until it
is opened: its chart and drill-down are a lazy block (`compactlab.report.lazy`). Summary texts are
cut at `SUMMARY_CHARS` characters, and a text already shown for the same session is referred to
instead of repeated (offline summarizers often produce the same text).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import pandas as pd

from compactlab.report.lazy import lazy
from compactlab.report.overview_section import pct
from compactlab.report.page import environment
from compactlab.report.run_data import CHART_COLUMNS, RunData
from compactlab.report.sawtooth import sawtooth_chart
from compactlab.results.call_costs import cache_telemetry

SHOWN_SESSIONS = 12
SUMMARY_CHARS = 1200


def recorded_rows(run: RunData) -> list[dict]:
    """Compaction rows of the reference strategy that replays the production agent's compactions."""
    return [r for r in run.compaction_rows if run.strategy_of(r["setting"]) == "recorded" and not r.get("failed")]


def select_sessions(run: RunData, count: int = SHOWN_SESSIONS) -> list[str]:
    """The `count` sessions with the most uncompacted prompt tokens, plus those with a real compaction
    (the sessions where `recorded` made a compaction that did not fail: sessions.csv counts them)."""
    table = run.sessions
    sizes = table.drop_duplicates("session").set_index("session")["billed_full"].sort_values(ascending=False, kind="stable")
    chosen = list(sizes.index[:count])
    recorded = table["setting"].map(lambda label: run.strategy_of(label) == "recorded").astype(bool)
    chosen += [t for t in dict.fromkeys(table.loc[recorded & (table["compactions"] > 0), "session"]) if t not in chosen]
    return sorted(chosen, key=lambda t: -sizes.get(t, 0))


def source_of(run: RunData) -> dict[str, str]:
    """Each session's file name (session_facts.json; none in a run directory of format 2)."""
    return {t: facts["source"] for t, facts in run.session_facts.items()}


def sessions_context(run: RunData, colours: dict[str, str]) -> dict[str, Any]:
    chosen = select_sessions(run)
    sources = source_of(run)
    by_session: dict[str, list[dict]] = {}
    for row in run.compaction_rows:
        by_session.setdefault(row["session"], []).append(row)
    real_calls: dict[str, set[int]] = {}
    for row in recorded_rows(run):
        real_calls.setdefault(row["session"], set()).add(row["call"])
    shown = []
    macros = environment().get_template("run_session_detail.html.j2").module
    # The call rows of the sessions shown, and nothing else (with what each compaction did to the cache).
    drawn = run.calls_of(chosen, [*CHART_COLUMNS, "prefix_tokens", "cache_expired"])
    for position, session in enumerate(chosen):
        calls = drawn[drawn["session"] == session]
        cache = cache_at_calls(calls)
        rows = [{**row, **cache.get((row["setting"], row["call"]), {})} for row in by_session.get(session, [])]
        real = sorted(real_calls.get(session, ()))
        svg, untouched = sawtooth_chart(calls, colours, real)
        first = calls.drop_duplicates("call")
        anchor = f"t-{position}"
        view: dict[str, Any] = {
            "id": session,
            "anchor": anchor,
            "source": sources.get(session, ""),
            "calls": f"{len(first):,}",
            "peak": f"{int(first['full_tokens'].max()):,}",
            "models": ", ".join(sorted(first["model"].unique())),
            "svg": svg,
            "untouched": untouched,
            "real": len(real),
            "damaged": bool(run.sessions.loc[run.sessions["session"] == session, "damaged"].any()),
            "strategies": strategy_drilldown(rows),
        }
        view["block"] = lazy(macros.summary(view), macros.detail(view), anchor, "session")  # type: ignore[attr-defined]
        shown.append(view)
    total = run.sessions["session"].nunique()
    return {"shown": shown, "total": total, "count": SHOWN_SESSIONS, "summary_chars": f"{SUMMARY_CHARS:,}"}


def cache_at_calls(calls: pd.DataFrame) -> dict[tuple[str, int], dict[str, int]]:
    """Per (setting, call) of one session's call rows: the cache tokens the call's prompt invalidated
    and the tokens it wrote (`compactlab.results.call_costs.cache_telemetry`): after a compaction, what
    the compaction did to the cache."""
    if calls.empty:
        return {}
    ordered = calls.sort_values(["setting", "call"], kind="stable")
    telemetry = cache_telemetry(ordered)
    return {
        (setting, int(call)): {"cache_invalidated": int(lost), "cache_written": int(written)}
        for setting, call, lost, written in zip(
            ordered["setting"], ordered["call"], telemetry["invalidated_tokens"], telemetry["cache_write_tokens"]
        )
    }


def strategy_drilldown(rows: Sequence[dict]) -> list[dict[str, Any]]:
    """One group per strategy label with its compactions in call order; repeated summary texts referred back."""
    seen: dict[str, str] = {}
    groups: dict[str, list[dict]] = {}
    for row in sorted(rows, key=lambda r: (r["setting"], r["call"])):
        groups.setdefault(row["setting"], []).append(compaction_view(row, seen))
    return [
        {"label": label, "compactions": items, "effective": sum(1 for i in items if not i["noop"] and not i["failed"])}
        for label, items in sorted(groups.items())
    ]


def compaction_view(row: dict, seen: dict[str, str] | None = None, limit: int = SUMMARY_CHARS) -> dict[str, Any]:
    """One compaction as plain data: what was dropped, the summary text, the needed facts kept and lost."""
    summary = row.get("summary")
    same_as, text, cut = None, None, 0
    if summary:
        key = hashlib.sha256(summary.encode("utf-8")).hexdigest()
        if seen is not None and key in seen:
            same_as = seen[key]
        else:
            if seen is not None:
                seen[key] = f"{row['setting']} at call {row['call']}"
            text, cut = summary[:limit], max(0, len(summary) - limit)
    note = row.get("note") or ""
    return {
        "call": row["call"],
        "message_index": row["message_index"],
        "reason": row["reason"],
        "tokens_before": f"{row['tokens_before']:,}",
        "tokens_after": f"{row['tokens_after']:,}",
        "removed_share": pct(1 - row["tokens_after"] / row["tokens_before"]) if row["tokens_before"] else "–",
        "messages_removed": row["messages_removed"],
        "messages_before": row["messages_before"],
        "note": note,
        "failed": row.get("failed"),
        "stalled": bool(row.get("stalled")),
        "noop": note.startswith("nothing") and not row["messages_removed"],
        "summary": text,
        "summary_cut": f"{cut:,}" if cut else "",
        "summary_chars": f"{len(summary):,}" if summary else "",
        "same_as": same_as,
        # The next call's cache figures, where the report read them (`cache_at_calls`).
        "cache_invalidated": f"{row['cache_invalidated']:,}" if row.get("cache_invalidated") is not None else None,
        "cache_written": f"{row['cache_written']:,}" if row.get("cache_written") is not None else None,
        **dict(zip(("k1", "k5"), _both(row))),
    }


ITEMS_SHOWN = 24  # per list; the rest are counted


def _needed(row: dict, key: str, skip: frozenset[str] = frozenset()) -> dict[str, Any]:
    """Facts the next step(s) used: how many, which were kept and which lost (`skip`: already listed for k=1)."""
    found = (row.get("preservation") or {}).get(key) or {}
    needed, lost = list(found.get("needed", [])), set(found.get("lost", []))
    extra = [i for i in needed if i not in skip]
    kept_items, lost_items = [i for i in extra if i not in lost], [i for i in extra if i in lost]
    return {
        "score": pct(found.get("score"), 0) if found.get("score") is not None else "n/a",
        "needed": len(needed),
        "listed": len(extra),
        "lost_count": len(lost),
        "kept": [_item(i) for i in kept_items[:ITEMS_SHOWN]],
        "kept_more": max(0, len(kept_items) - ITEMS_SHOWN),
        "lost": [_item(i) for i in lost_items[:ITEMS_SHOWN]],
        "lost_more": max(0, len(lost_items) - ITEMS_SHOWN),
    }


def _both(row: dict) -> tuple[dict[str, Any], dict[str, Any]]:
    first = (row.get("preservation") or {}).get("k1") or {}
    return _needed(row, "k1"), _needed(row, "k5", frozenset(first.get("needed", [])))


def _item(text: str) -> dict[str, str]:
    kind, _, value = text.partition(":")
    return {"kind": kind, "value": value} if value else {"kind": "", "value": text}
