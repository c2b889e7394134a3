"""What a strategy does when its first attempt removes nothing: the loop guard's figures of issue 27.

    python -m tests.scripts.guard_retry [--strategy prune] [--window 64000] [--pieces estimator] [DATASET|PATH ...]

With no input, the bundled Claude Code datasets (claude-code-log, m-claude). Each session is
replayed with the strategy at the window (every model); this prints, per dataset and in all, the
compactions that changed the context, how many of them were emergencies (the call was over the
window) and how many left the context at or above 0.8 of the window (the default trigger: the kept
part alone is too large, so the next calls are due again or overflow), the attempts that removed
nothing or under 5% (the loop guard then holds), the calls after a first compaction and those of
them sent at 0.8 to 1.0 of the window, the calls whose prompt was over the window, and the tokens
removed as a share of what the calls would have sent uncompacted. Damaged records are skipped
(lenient loading) and counted. `--pieces estimator` has the strategy budget its kept tail with the
bare estimator, as before issue 27 §3 (`compactlab.contract.Harness.pieces`), for the before figure.
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from dataclasses import dataclass, replace

from compactlab.contract import CompactionRequest, CompactionResult, Context, Harness, PieceRule, Strategy
from compactlab.replay.replay import replay
from compactlab.replay.setting import Setting, harness_of
from compactlab.sessions.loading import load_inputs
from compactlab.sessions.model import Session
from compactlab.strategies.registry import get_strategy
from compactlab.tokens.context_windows import ContextWindows

CLAUDE_CODE = ["claude-code-log", "m-claude"]
FIGURES = (
    "sessions",
    "calls",
    "compactions",
    "emergencies",
    "left_high",
    "stalls",
    "after_compaction",
    "near_full",
    "over_window",
    "full_tokens",
    "context_tokens",
)
TRIGGER_SHARE = 0.8  # the default trigger: a compaction leaving the context at or above it leaves it due again


@dataclass(frozen=True)
class WithHarness:
    """A strategy replayed under another harness (the before figure of `--pieces estimator`)."""

    strategy: Strategy
    harness: Harness

    @property
    def name(self) -> str:
        return self.strategy.name

    def compact(self, context: Context, request: CompactionRequest) -> CompactionResult:
        return self.strategy.compact(context, request)


def session_figures(session: Session, strategy: str, window: int, pieces: PieceRule | None = None) -> dict[str, int]:
    chosen: Strategy | None = None
    if pieces is not None:
        plain = get_strategy(strategy)
        chosen = WithHarness(plain, replace(harness_of(plain), pieces=pieces))
    replayed = replay(session, Setting(strategy, strategy), ContextWindows({"": window}), strategy=chosen)
    if replayed is None:
        return dict.fromkeys(FIGURES, 0)
    calls = replayed.calls
    done = [row for row in replayed.compactions if row.event.failed is None]
    return {
        "sessions": 1,
        "calls": len(calls["full_tokens"]),
        "compactions": sum(1 for row in done),
        # Emergency compactions (the call was over the window), and compactions that left the context
        # at or above the trigger (their kept part alone is too large for the window).
        "emergencies": sum(1 for row in done if row.event.reason in ("overflow", "silent_overflow")),
        "left_high": sum(1 for row in done if row.event.tokens_after >= TRIGGER_SHARE * window),
        "stalls": sum(1 for row in replayed.compactions if row.event.stalled) + sum(calls["noop_before"]),
        # Calls after a first compaction, and those of them sent at 0.8 to 1.0 of the window: a
        # compacted context that sits there has kept too much for the next messages.
        "after_compaction": sum(1 for n in calls["compactions_so_far"] if n),
        "near_full": sum(
            1
            for n, size in zip(calls["compactions_so_far"], calls["context_tokens"], strict=True)
            if n and TRIGGER_SHARE * window <= size <= window
        ),
        "over_window": sum(bool(v) for v in calls["over_window"]),
        "full_tokens": int(sum(calls["full_tokens"])),
        "context_tokens": int(sum(calls["context_tokens"])),
    }


def line(label: str, figures: dict[str, int]) -> str:
    removed = 1 - figures["context_tokens"] / figures["full_tokens"] if figures["full_tokens"] else 0.0
    return (
        f"{label:<20}{figures['sessions']:>9}{figures['calls']:>7}{figures['compactions']:>13}{figures['emergencies']:>13}"
        f"{figures['left_high']:>11}{figures['stalls']:>8}{figures['after_compaction']:>7}{figures['near_full']:>9}"
        f"{figures['over_window']:>13}{100 * removed:>10.1f}%"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.scripts.guard_retry", description=__doc__.split("\n\n")[0])
    parser.add_argument("inputs", nargs="*", help="dataset names or paths (default: the bundled Claude Code datasets)")
    parser.add_argument("--strategy", default="prune")
    parser.add_argument("--window", type=int, default=64_000)
    parser.add_argument(
        "--pieces",
        choices=("measured", "estimator"),
        help="what the strategy budgets its kept tail in (default: its own harness's)",
    )
    args = parser.parse_args(argv)
    by_dataset: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(FIGURES, 0))
    for name in args.inputs or CLAUDE_CODE:
        loaded = load_inputs([name], lenient=True)
        damaged = sum(1 for t in loaded.sessions if t.skipped)
        print(
            f"{name}: {len(loaded.sessions)} sessions ({damaged} with damaged records skipped, {len(loaded.failed)} unreadable)"
        )
        for session in loaded.sessions:
            found = session_figures(session, args.strategy, args.window, args.pieces)
            for group in (name, "all"):
                for figure in FIGURES:
                    by_dataset[group][figure] += found[figure]
    print(f"{args.strategy} at {args.window:,} tokens (every model)" + (f", pieces {args.pieces}" if args.pieces else ""))
    print(
        f"{'dataset':<20}{'sessions':>9}{'calls':>7}{'compactions':>13}{'emergencies':>13}{'left >=0.8':>11}{'no-ops':>8}"
        f"{'after':>7}{'0.8-1.0':>9}"
        f"{'over window':>13}{'removed':>11}"
    )
    for group, figures in sorted(by_dataset.items(), key=lambda kv: kv[0] == "all"):
        print(line(group, figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
