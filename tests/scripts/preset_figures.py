"""Measure what each preset does on the bundled data: tokens removed, facts kept, and at which windows.

    python -m tests.scripts.preset_figures [--window 64000] [--preset NAME ...] [--out DIR]

Replays every bundled dataset (the default run's data) through every preset at the default run's
window and prints, per preset: the sessions replayed, the mean share of prompt tokens removed
(`removed_share`), the next-step facts kept over the sessions it compacted (`preservation_k1`) and
over all sessions (an uncompacted session counts as 100%), its compactions, how many of them were
emergencies (an overflowing prompt), the over-window calls, the windows its calls ran at
(tokens: calls) and, below, the context size its trigger fires from in each session (tokens:
sessions): a preset's absolute sizes are scaled to a simulated window (`Harness.window`). Issue 29's
before → after figures are this script's output on both sides.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

import pandas as pd

from compactlab.replay.setting import window_and_trigger
from compactlab.runs import runs
from compactlab.runs.run_config import RunConfig, setting_from, windows_of
from compactlab.sessions.loading import load_inputs
from compactlab.strategies.registry import get_strategy, registered

EMERGENCIES = ("overflow", "silent_overflow")


def preset_names() -> tuple[str, ...]:
    """Every registered preset (a strategy with its own trigger)."""
    return tuple(name for name in registered() if hasattr(get_strategy(name), "trigger"))


def measure(window: int, out: Path, presets: tuple[str, ...]) -> list[dict]:
    """One row per preset: its figures over the bundled datasets at `window` (0: real windows)."""
    config = replace(RunConfig(), window=window, strategies=tuple(setting_from(name, "--preset") for name in presets))
    result = runs.run(config, out, overwrite=True, progress=False)
    sessions, calls, compactions = result.sessions, result.calls, result.compactions
    done = compactions[compactions["failed"].isna()] if not compactions.empty else compactions
    rows = []
    for name in presets:
        mine = sessions[sessions["setting"] == name]
        events = done[done["setting"] == name] if not done.empty else done
        windows = calls.loc[calls["setting"] == name, "window"].value_counts().sort_index()
        rows.append(
            {
                "preset": name,
                "sessions": len(mine),
                "compacted": int((mine["compactions"] > 0).sum()),
                "removed": mine["removed_share"].mean(),
                "kept_where_compacted": mine["preservation_k1"].mean(),
                "kept_all": mine["preservation_or_untouched"].mean(),
                "compactions": int(mine["compactions"].sum()),
                "emergencies": int(events["reason"].isin(EMERGENCIES).sum()) if len(events) else 0,
                "over_window": int(mine["over_window_calls"].sum()),
                "windows": ", ".join(f"{int(w):,}: {n}" for w, n in windows.items()),
            }
        )
    return rows


def fires_from(window: int, presets: tuple[str, ...]) -> dict[str, str]:
    """Per preset: the sizes its trigger fires from, over the bundled sessions with calls (tokens: sessions)."""
    windows = windows_of(RunConfig(window=window))
    sessions = [(t.calls[0].model, t.context_window) for t in load_inputs(None, lenient=True).sessions if t.calls]
    shown = {}
    for name in presets:
        preset = get_strategy(name)
        counts: dict[tuple[float, bool], int] = {}
        for model, recorded in sessions:
            at, trigger = window_and_trigger(preset, None, windows, model, recorded)
            key = (trigger.fires_from(at), trigger.fires_from(at) > at)  # above the window: it never fires
            counts[key] = counts.get(key, 0) + 1
        shown[name] = ", ".join(
            f"{size:,.0f}{' (above the window: never fires)' if above else ''}: {n}"
            for (size, above), n in sorted(counts.items())
        )
    return shown


def report(rows: list[dict], window: int | None) -> str:
    frame = pd.DataFrame(rows)
    at = (
        "the default run's windows"
        if window is None
        else "each model’s real window"
        if window == 0
        else f"a {window:,}-token window"
    )
    head = f"presets on the bundled datasets at {at}"
    lines = [
        head,
        f"{'preset':<19}{'sessions':>9}{'compacted':>10}{'removed %':>10}{'kept % (compacted)':>19}{'kept % (all)':>13}"
        f"{'compactions':>12}{'emergencies':>12}{'over-window':>12}  windows (tokens: calls)",
    ]
    for row in frame.itertuples():
        lines.append(
            f"{row.preset:<19}{row.sessions:>9}{row.compacted:>10}{100 * row.removed:>10.2f}"
            f"{100 * row.kept_where_compacted:>19.1f}{100 * row.kept_all:>13.1f}{row.compactions:>12}{row.emergencies:>12}"
            f"{row.over_window:>12}  {row.windows}"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--window", type=int, default=RunConfig().window, help="the run's window (0: real windows)")
    parser.add_argument("--preset", nargs="+", default=list(preset_names()), help="presets to measure (default: all)")
    parser.add_argument("--out", type=Path, default=Path("/tmp/preset-figures"))
    args = parser.parse_args()
    presets = tuple(args.preset)
    print(report(measure(args.window, args.out, presets), args.window))
    print("\nthe trigger fires from (tokens: sessions)")
    for name, sizes in fires_from(args.window, presets).items():
        print(f"{name:<19}{sizes}")


if __name__ == "__main__":
    main()
