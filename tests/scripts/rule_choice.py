"""Choosing a rule by leaving a group out: the figure a rule earns on data it was not chosen on.

A rule chosen by looking at real data (which files Claude Code re-attaches, how a summary is sized)
fits the data it was chosen on by construction. Its honest figure is out of sample: for each group
(a session family, a session with its sub-agents; or a repository the sessions came from), choose
the rule on all the others, then measure the chosen rule on the one left out. `loso` does that for
a grid of candidate rules whose per-group errors are given (relative errors, or `Point`s that also
know the sizes and the family), and `Figures` states both the in-sample and the out-of-sample result.
"""

from __future__ import annotations

import statistics
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

R = TypeVar("R", bound=Hashable)


@dataclass(frozen=True)
class Point:
    """One real compaction's check: the replay's predicted size, the recorded one, and its family
    (`compactlab.results.fidelity_figures.family_of`)."""

    predicted: float
    recorded: float
    family: str = ""

    @property
    def error(self) -> float:
        return (self.predicted - self.recorded) / self.recorded


def _relative(value: float | Point) -> float:
    return value.error if isinstance(value, Point) else value


GOOD = 0.05  # a prediction within ±5% of the recorded size is a good one (the issues' goal)


@dataclass(frozen=True)
class Figures:
    """How close predictions are: the share within ±`good` (`GOOD` unless the errors are counted
    otherwise: calls apart, say), the median and 90th percentile of |error|."""

    count: int
    within: float
    median: float
    p90: float
    good: float = GOOD

    @staticmethod
    def of(errors: Sequence[float] | Sequence[Point], good: float = GOOD) -> Figures:
        if not errors:
            return Figures(0, float("nan"), float("nan"), float("nan"), good)
        sizes = sorted(abs(_relative(e)) for e in errors)
        p90 = sizes[min(len(sizes) - 1, round(0.9 * (len(sizes) - 1)))]
        return Figures(len(sizes), sum(e <= good for e in sizes) / len(sizes), statistics.median(sizes), p90, good)

    def line(self) -> str:
        return (
            f"{100 * self.within:.0f}% within ±{100 * self.good:.0f}% ({round(self.within * self.count)} of {self.count}), "
            f"median |error| {100 * self.median:.1f}%, p90 {100 * self.p90:.1f}%"
        )


def score(errors: Sequence[float] | Sequence[Point], good: float = GOOD) -> tuple[float, float]:
    """What the choice maximises: more predictions within ±`good` (5%), then a smaller median |error|."""
    figures = Figures.of(errors, good)
    return (figures.within, -figures.median) if errors else (0.0, 0.0)


def choose(grid: Mapping[R, Mapping[str, Sequence]], sessions: set[str], good: float = GOOD) -> R:
    """The rule of `grid` (rule -> session -> errors) that does best on `sessions` (`score`); on a
    tie the one listed first (the grid lists the shipped rule first)."""
    best: R | None = None
    best_score: tuple[float, float] | None = None
    for rule, by_session in grid.items():
        found = score([e for session, errors in by_session.items() if session in sessions for e in errors], good)
        if best_score is None or found > best_score:
            best, best_score = rule, found
    assert best is not None, "an empty grid"
    return best


@dataclass(frozen=True)
class Choice(Generic[R]):
    """The rule chosen on every session (what ships), its in-sample figures, and the out-of-sample
    figures of choosing that way: each session measured with the rule chosen on the others."""

    chosen: R
    in_sample: Figures
    out_of_sample: Figures
    chosen_without: dict[str, R]  # per group left out: the rule the others chose
    held_out: tuple = ()  # every group's values under the rule the others chose


def loso(grid: Mapping[R, Mapping[str, Sequence]]) -> Choice[R]:
    sessions = {session for by_session in grid.values() for session in by_session}
    chosen = choose(grid, sessions)
    held: list = []
    without: dict[str, R] = {}
    for session in sorted(sessions):
        rule = choose(grid, sessions - {session})
        without[session] = rule
        held.extend(grid[rule].get(session, ()))
    in_sample = Figures.of([e for errors in grid[chosen].values() for e in errors])
    return Choice(chosen, in_sample, Figures.of(held), without, tuple(held))


def family(session_id: str) -> str:
    """A session and its sub-agents are one family: they are left out together."""
    return session_id.split("/agent-", 1)[0]
