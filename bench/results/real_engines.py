"""Presets against the real engines: where a preset would have compacted a real session, and to what
size, beside where and to what size the real agent did.

A preset says "this is how Claude Code / pi / Codex compacts". A session recorded by that agent
shows where it really compacted. Between two real compactions the recorded prompt counts are the
real agent's context, so the preset's trigger can be asked before every call of the stretch with
the sizes the agent itself saw (the last prompt and its output plus an estimate of the messages
since, as the hybrid estimator counts): the first call it fires at is where the preset would have
compacted. At the model's real window (the preset's own table, else the built-in one; not a run's
simulated one), since that is the window the real agent compacted in, by the trigger of the agent
version the session records. The preset's compacted size is its strategy applied at the
real compaction (the `recorded` replay's points), measured as every replayed prompt is, against
the first prompt recorded after it. Offline, summaries come from the extractive stand-in, so the
size compares what a preset keeps and re-attaches, not its model's summary.

Agreement is counted over automatic compactions (a manual one is the user's choice, not the
trigger's); a compaction whose source does not record what started it (pi) is listed with the
trigger "unknown" and counted apart.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from compactlab.replay.replay import replay
from compactlab.replay.setting import Setting, estimator_of, window_and_trigger
from compactlab.results.fidelity_figures import COPY, repeats_of, summary_sha
from compactlab.sessions.importers import format_facts
from compactlab.sessions.model import Session
from compactlab.strategies.registry import get_strategy
from compactlab.tokens.context_windows import ContextWindows
from compactlab.tokens.metering import Meter


def preset_of_format(source_format: str) -> str | None:
    """The preset that reproduces the engine that wrote files of this format (its importer says)."""
    return format_facts(source_format).engine_preset


NEAR_CALLS = 2  # a preset that fires within this many calls of the real compaction agrees with it


@dataclass(frozen=True)
class EngineRow:
    """One real compaction beside the preset of the engine that made it."""

    session: str
    engine: str  # the source format
    preset: str
    trigger: str  # auto, manual or unknown, as the source recorded it
    window: int
    threshold: float  # the smallest context size the preset's trigger fires at, in that window
    real_call: int  # the number of the first call after the real compaction
    real_tokens_before: int | None  # the size the real agent reported compacting from
    preset_call: int | None  # the first call of the stretch before which the preset fires; None: never
    peak_tokens: int  # the largest size the trigger saw in the stretch
    real_tokens_after: int | None  # the first prompt recorded after the real compaction
    preset_tokens_after: int | None  # the preset's compaction at the same point, measured
    summary_sha: str | None = None  # the recorded summary's hash: the same compaction saved in two files has one

    @property
    def calls_apart(self) -> int | None:
        return None if self.preset_call is None else self.preset_call - self.real_call

    @property
    def agrees(self) -> bool:
        return self.calls_apart is not None and abs(self.calls_apart) <= NEAR_CALLS

    def as_json(self) -> dict:
        return {**asdict(self), "calls_apart": self.calls_apart, "agrees": self.agrees}


def engine_rows(session: Session) -> list[EngineRow]:
    """Every real compaction of `session` beside the preset of its engine (none without one)."""
    preset_name = preset_of_format(session.source_format)
    calls = [(index, m.call) for index, m in enumerate(session.messages) if m.call is not None]
    if preset_name is None or not session.compactions or not calls:
        return []
    preset = get_strategy(preset_name)
    meter = Meter(session, estimator_of(preset))
    window, trigger = window_and_trigger(
        preset, None, ContextWindows(), calls[0][1].model, session.context_window, session.agent_version
    )
    after = _sizes_after(session, preset_name)
    rows, start = [], 0
    for marker in session.compactions:
        stretch = [(number, index) for number, (index, _) in enumerate(calls) if start <= index < marker.at_message]
        real_call = sum(1 for index, _ in calls if index < marker.at_message)
        fired, peak = None, 0
        # Before each call of the stretch but its first (nothing is known before it), and at the real compaction.
        checks = [*((number, index) for number, index in stretch[1:]), (real_call, marker.at_message)] if stretch else []
        for number, index in checks:  # the call before `number` is the last one the agent counted
            tokens = _seen_before(meter, session, calls[number - 1], index)
            peak = max(peak, tokens)
            if fired is None and trigger.check(tokens, window) is not None:
                fired = number
        rows.append(
            EngineRow(
                session.id,
                session.source_format,
                preset_name,
                marker.trigger,
                window,
                trigger.fires_from(window),
                real_call,
                marker.pre_tokens,
                fired,
                peak,
                *after.get(real_call, (None, None)),
                summary_sha(marker.summary),
            )
        )
        start = marker.at_message
    return rows


def _seen_before(meter: Meter, session: Session, last: tuple, index: int) -> int:
    """What a hybrid count sees before message `index`: the `last` call's (its message index and
    call) prompt and output, and the estimate of the messages after it."""
    last_index, call = last
    since = sum(meter.message_tokens(m) for m in session.messages[last_index + 1 : index])
    return round(call.prompt_tokens + call.output_tokens + since)


def _sizes_after(session: Session, preset_name: str) -> dict[int, tuple[int | None, int | None]]:
    """By the number of the call after each real compaction: (recorded, the preset's measured) sizes."""
    setting = Setting(f"{preset_name} at the real compactions", preset_name, at_real_compactions=True)
    replayed = replay(session, setting, ContextWindows())
    return {row.call: (row.fidelity_recorded, row.fidelity_predicted) for row in replayed.compactions}


def agreement(rows: list[EngineRow]) -> dict:
    """Per preset: how many automatic compactions it fires within `NEAR_CALLS` calls of, and the same
    for compactions of unknown trigger, counted apart; each compaction once (copies and
    repeats are counted apart, `compactlab.results.fidelity_figures.repeats_of`)."""
    found: dict[str, dict] = {}
    for row, why in zip(rows, _repeats(rows)):
        entry = found.setdefault(
            row.preset, {"auto": 0, "auto_agree": 0, "unknown": 0, "unknown_agree": 0, "manual": 0, "copies": 0, "repeats": 0}
        )
        if why:
            entry["copies" if why == COPY else "repeats"] += 1
        elif row.trigger == "manual":
            entry["manual"] += 1
        elif row.trigger in ("auto", "unknown"):
            entry[row.trigger] += 1
            entry[f"{row.trigger}_agree"] += row.agrees
    return found


def _repeats(rows: list[EngineRow]) -> list[str]:
    """Per row: "" for a distinct compaction, else why it is not one (`compactlab.results.fidelity_figures`)."""
    return repeats_of([{"session": r.session, "call": r.real_call, "summary_sha": r.summary_sha} for r in rows])


def format_engines(rows: list[EngineRow]) -> str:
    """The rows and the agreement per preset, for the terminal."""
    if not rows:
        return "no real compaction by an engine that has a preset (Claude Code, pi, Codex)"
    lines = [
        f"{'session':<30}{'preset':>12}{'trigger':>9}{'real call':>10}{'preset call':>12}{'apart':>6}"
        f"{'threshold':>11}{'real before':>12}{'after: real':>12}{'preset':>9}"
    ]
    for row in rows:
        apart = "never" if row.calls_apart is None else f"{row.calls_apart:+d}"
        lines.append(
            f"{row.session[:29]:<30}{row.preset:>12}{row.trigger:>9}{row.real_call:>10}"
            f"{'-' if row.preset_call is None else row.preset_call:>12}{apart:>6}{row.threshold:>11,.0f}"
            f"{_count(row.real_tokens_before):>12}{_count(row.real_tokens_after):>12}{_count(row.preset_tokens_after):>9}"
        )
    lines.append("")
    for preset, found in agreement(rows).items():
        lines.append(f"{preset}: {agreement_line(found)}")
    lines.append(
        "Each preset's trigger asked with the sizes the real agent saw, at the model's real window; sizes after are the "
        "first recorded prompt and the preset's own compaction at the same point (offline summaries: the extractive stand-in)."
    )
    return "\n".join(lines)


def _count(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def agreement_line(found: dict) -> str:
    """One preset's agreement (`agreement`) in words."""
    parts = []
    if found["auto"]:
        parts.append(f"fires within ±{NEAR_CALLS} calls of {found['auto_agree']} of {found['auto']} automatic compactions")
    if found["unknown"]:
        parts.append(
            f"fires within ±{NEAR_CALLS} calls of {found['unknown_agree']} of {found['unknown']} compactions whose trigger "
            "the source does not record"
        )
    if found["manual"]:
        parts.append(f"{found['manual']} manual compaction(s) listed apart")
    if found.get("copies") or found.get("repeats"):
        parts.append(
            f"not counted: {found.get('copies', 0)} copies (no call before them in their file), "
            f"{found.get('repeats', 0)} repeats (the same compaction in another file)"
        )
    return "; ".join(parts)


def engines_document(sessions: list[Session]) -> dict:
    """What summary.json holds of the presets against the real engines: every row, and the agreement per preset."""
    return rows_document([row for session in sessions for row in engine_rows(session)])


def rows_document(rows: list[EngineRow]) -> dict:
    """`engines_document` of the rows `engine_rows` gave, where each session was replayed ({} without any)."""
    if not rows:
        return {}
    return {
        "near_calls": NEAR_CALLS,
        "rows": [{**row.as_json(), "left_out": why} for row, why in zip(rows, _repeats(rows))],
        "agreement": {preset: {**found, "line": agreement_line(found)} for preset, found in agreement(rows).items()},
    }
