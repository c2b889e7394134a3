"""Sessions no setting can keep under the window, named and kept out of the recommendation's veto.

A setting with one call over the window is not recommendable (an over-window request fails in
production). A session whose smallest possible prompt is already over the window overflows it
under every setting, so it would veto every one of them and leave no recommendation, whatever the
strategies do. Such a session is named with why (its smallest possible prompt against the window,
`compactlab.results.metrics.smallest_prompts`) and left out of the statistics; the recommendation is
made over the rest and counts them in its headline.

The floor depends on the session and the window only, never on the settings replayed: a run of the
recommended setting alone (`recommended.toml`) leaves out the same sessions as the sweep that chose
it, and a setting that overflows a session some other setting could keep under the window is still
vetoed.
"""

from __future__ import annotations

import pandas as pd


def unfit_sessions(sessions: pd.DataFrame) -> dict[str, str]:
    """Session id -> why no setting can keep it under the window, for every such session of a run's
    per-session table (a floor unknown, NaN, in a table written before the column: none, `compactlab.runs.run_format`)."""
    if sessions.empty:
        return {}
    # The floor and the window are the session's, the same under every setting.
    rows = sessions.drop_duplicates("session")
    over = rows[rows["floor_tokens"] > rows["window"]].sort_values("session")
    return {row["session"]: why_unfit(row) for _, row in over.iterrows()}


def why_unfit(row: pd.Series) -> str:
    fixed, floor, window = int(row["fixed_tokens"]), int(row["floor_tokens"]), int(row["window"])
    return (
        f"its smallest possible prompt is {floor:,} tokens against a {window:,}-token window: its smallest recorded "
        f"prompt (system prompt, instructions, task) is {fixed:,} tokens and its largest single step {floor - fixed:,}"
    )


def fitting(sessions: pd.DataFrame) -> pd.DataFrame:
    """The rows of the sessions some setting can keep under the window."""
    unfit = unfit_sessions(sessions)
    return sessions[~sessions["session"].isin(unfit)] if unfit else sessions


def check_window_fits_some_session(sessions: pd.DataFrame) -> None:
    """A window smaller than every session's smallest possible prompt measures nothing (every call of
    every setting is over it, 0% removed): refuse it with the numbers."""
    unfit = unfit_sessions(sessions)
    count = sessions["session"].nunique() if not sessions.empty else 0
    if not unfit or len(unfit) < count:
        return
    rows = sessions.drop_duplicates("session")
    smallest = rows.sort_values(["fixed_tokens", "session"]).iloc[0]
    raise ValueError(
        unfit_window_message(
            count, int(smallest["window"]), int(smallest["fixed_tokens"]), smallest["session"], int(rows["floor_tokens"].min())
        )
    )


def unfit_window_message(sessions: int, window: int, fixed: int, fixed_session: str, floor: int) -> str:
    """Why a window no session fits is refused: `fixed`, the smallest recorded prompt (in `fixed_session`),
    `floor` the smallest of the sessions' smallest possible prompts."""
    return (
        f"window {window:,} tokens is smaller than the smallest possible prompt of every one of the {sessions} sessions: "
        f"no strategy can keep any of them under it. The smallest recorded prompt (system prompt, instructions, task) is "
        f"{fixed:,} tokens ({fixed_session}); the smallest floor {floor:,}. Use a window above that (--window 0 replays "
        f"each model's real window)"
    )
