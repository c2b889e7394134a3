"""The command to try next, built from the user's own arguments.

A dead end (no recommendation, nothing compacted, a verdict on too few compactions, the sweep's pick
at the edge of its grid) names the command to try next. It is the user's command with one thing
changed: the datasets, the window, the configuration file and everything else that shapes the
results are kept, so pasting it replays the same sessions the same way but for that change.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

# The flags that shape a run's results (what a next command must keep), in the order they are printed;
# each is written with all its values after it.
KEPT_FLAGS = (
    "--config",
    "--dataset",
    "--window",
    "--context-window",
    "--estimator",
    "--lenient",
    "--limit",
    "--strategy",
    "--thresholds",
    "--keep",
    "--min-preservation",
)
# Flags the command does not take, dropped when a next command changes to it.
ONLY = {"run": ("--thresholds", "--keep", "--min-preservation"), "sweep": ()}


@dataclass(frozen=True)
class CommandLine:
    """`compactlab COMMAND` with its flags (flag -> its values; a switch has none), and its --out."""

    command: str  # "run" or "sweep"
    flags: tuple[tuple[str, tuple[str, ...]], ...] = ()
    out: str | None = None  # None: the command's default folder

    @classmethod
    def of(cls, command: str, flags: dict[str, Sequence[object] | bool | None], out: object = None) -> CommandLine:
        """From flag -> values (True: a switch that is on; None, False or empty: not given)."""
        kept = []
        for flag in KEPT_FLAGS:
            value = flags.get(flag)
            if value is None or value is False or (not isinstance(value, bool) and len(value) == 0):
                continue
            kept.append((flag, () if value is True else tuple(map(str, value))))
        return cls(command, tuple(kept), None if out is None else str(out))

    def with_flag(self, flag: str, *values: object) -> CommandLine:
        """This command with `flag` set to `values` (replacing what the user gave)."""
        others = tuple((f, v) for f, v in self.flags if f != flag)
        return replace(self, flags=(*others, (flag, tuple(map(str, values)))))

    def without(self, *flags: str) -> CommandLine:
        return replace(self, flags=tuple((f, v) for f, v in self.flags if f not in flags))

    def as_command(self, command: str) -> CommandLine:
        """The same datasets and window under another command (`run` -> `sweep`): the other command's own
        flags and the strategies are dropped (a run's list of strategies is not a sweep's grid)."""
        if command == self.command:
            return self
        return replace(self.without("--strategy", *ONLY[command]), command=command)

    def into(self, suffix: str) -> CommandLine:
        """Written into a new folder beside the user's --out (an explicit --out is never overwritten); the
        default folder is replaced by each new run, as it always is."""
        return self if self.out is None else replace(self, out=f"{self.out.rstrip('/')}-{suffix}")

    @property
    def text(self) -> str:
        words = ["compactlab", self.command]
        for flag, values in sorted(self.flags, key=lambda fv: KEPT_FLAGS.index(fv[0]) if fv[0] in KEPT_FLAGS else 99):
            if flag == "--context-window":
                for value in values:  # a repeatable flag: once per value
                    words += [flag, value]
            else:
                words += [flag, *values]
        if self.out is not None:
            words += ["--out", self.out]
        return shlex.join(words)


def from_config(command: str, datasets: Sequence[str | Path], window: int | None, out: object = None) -> CommandLine:
    """The command a library caller's run amounts to (its datasets and window), for its next steps."""
    return CommandLine.of(command, {"--dataset": list(map(str, datasets)), "--window": None if window is None else [window]}, out)
