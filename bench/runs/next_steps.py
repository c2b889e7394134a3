"""A next step for every dead end of a verdict: its cause in one line, and the command to try next.

The dead ends: no recommendation (settings over the window, too few facts kept), nothing compacted
(no trigger fired), a verdict resting on too few compactions. Each command is the user's own
(`compactlab.runs.next_command.CommandLine`) with the one change that answers the cause: a real window
for calls over a simulated one, a simulated stress window where the real one is never reached, lower
triggers, a lower share of facts to keep.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from compactlab.results.recommendation import MIN_COMPACTIONS, MIN_KEPT, OVER, REMOVED
from compactlab.runs.config_schema import DEFAULT_WINDOW
from compactlab.runs.next_command import CommandLine

LOWER_THRESHOLDS = (0.3, 0.4, 0.5)  # a sweep below the default grid's lowest trigger (0.5)


@dataclass(frozen=True)
class NextStep:
    cause: str  # one line: what the dead end is
    command: str  # the command to try next

    def as_json(self) -> dict:
        return {"cause": self.cause, "command": self.command}


def next_steps(document: dict, command: CommandLine, thresholds: Sequence[float] = ()) -> list[NextStep]:
    """The dead ends of the verdict in summary.json `document`, each with its next command; none for a
    clear verdict. `command`: the user's; `thresholds`: a sweep's grid (empty for a run)."""
    recommendation = document.get("recommendation") or {}
    board = document.get("leaderboard") or []
    if not board:
        return []
    window = (document.get("verdict_window") or {}).get("tokens")
    at = f"the simulated {window:,}-token window" if window else "the models' real windows"
    sweep = command.as_command("sweep")
    steps: list[NextStep] = []
    if recommendation.get("setting") is None:
        over = [row for row in board if (row.get(OVER) or 0) > 0]
        if over:
            cause = f"no recommendation: {len(over)} of {len(board)} settings let calls exceed {at}"
            if window:
                steps.append(
                    NextStep(f"{cause} (a stress test); at the real windows they may fit", changed(command, "--window", 0))
                )
            steps.append(
                NextStep(
                    f"{cause}; a lower trigger compacts before the window", changed(sweep, "--thresholds", *_lower(thresholds))
                )
            )
        min_kept = float(recommendation.get("min_kept", MIN_KEPT))
        low = [s for s, why in (recommendation.get("not_recommendable") or {}).items() if "facts" in why]
        if low and min_kept > 0.5:
            cause = (
                f"no recommendation: {len(low)} of {len(board)} settings keep under {100 * min_kept:g}% of the next step's facts"
            )
            steps.append(NextStep(f"{cause}; a lower bar", changed(sweep, "--min-preservation", f"{min_kept - 0.1:.2g}")))
        return steps
    compactions = recommendation.get("compactions")
    removed = max((row.get(REMOVED) or 0) for row in board)
    if removed <= 0 or compactions == 0:
        cause = f"nothing compacted: no trigger fired at {at} in any session"
    elif compactions is not None and compactions < MIN_COMPACTIONS:
        cause = f"the verdict rests on {compactions} compactions at {at} (fewer than {MIN_COMPACTIONS} are too few to go by)"
    else:
        return []
    if window:
        steps.append(NextStep(f"{cause}; a smaller simulated window compacts more", changed(command, "--window", window // 2)))
    elif not document.get("stress_verdict"):
        steps.append(
            NextStep(
                f"{cause}; a simulated window compacts where they do not (a stress test)",
                changed(command, "--window", DEFAULT_WINDOW),
            )
        )
    if thresholds and removed <= 0:
        steps.append(NextStep(f"{cause}; lower triggers fire earlier", changed(command, "--thresholds", *_lower(thresholds))))
    return steps


def _lower(thresholds: Sequence[float]) -> list[float]:
    """Triggers below the lowest swept (a run's settings have triggers of their own, none swept: below 1)."""
    lowest = min(thresholds, default=1.0)
    return [t for t in LOWER_THRESHOLDS if t < lowest] or [round(lowest / 2, 3)]


def changed(command: CommandLine, flag: str, *values: object) -> str:
    """`command` with `flag` set to `values`, into a folder of its own when the user named one."""
    suffix = f"{flag.lstrip('-')}-{'-'.join(map(str, values))}"
    return command.with_flag(flag, *values).into(suffix).text
