"""Measure what observation-masking, prune and truncate do on mini-swe-agent v1 trajectories.

    python -m tests.scripts.observation_figures [FOLDER] [--window 64000] [--out DIR]

FOLDER defaults to the shared collection's `mini-swe-agent-v1/`. Each sub-folder is replayed as
its own run, because its runs (gpt5-output, mini-output, ...) hold the same SWE-bench tasks under
the same file names, and a run keys its results by session id. Prints, per strategy, the
sessions replayed, the mean share of tokens removed, the compactions, the over-window calls, and
the peak and over-window calls of the session whose uncompacted prompt peaks highest.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

import pandas as pd

from compactlab.runs import runs
from compactlab.runs.run_config import RunConfig, setting_from

# prune with opencode's absolute thresholds (protect 40k, minimum 20k tokens of tool output) has
# nothing to clear before a 64k window overflows; prune-10k shows it at a quarter of them.
PRUNE_10K = {"name": "prune", "label": "prune-10k", "settings": {"protect_tokens": 10_000, "minimum_tokens": 5_000}}
STRATEGIES = ("observation-masking", "prune", PRUNE_10K, "truncate", "jetbrains-masking", "seed-002")
DEFAULT_FOLDER = Path(__file__).resolve().parents[2] / "shared" / "transcripts" / "mini-swe-agent-v1"


def measure(folder: Path, window: int, out: Path, strategies: tuple[str | dict, ...] = STRATEGIES) -> pd.DataFrame:
    """One row per session × strategy (the runs' sessions.csv rows, with the sub-folder)."""
    frames = []
    for sub in sorted(p for p in folder.iterdir() if p.is_dir()):
        config = replace(
            RunConfig(),
            datasets=(str(sub),),
            window=window,
            strategies=tuple(setting_from(entry, "--strategy") for entry in strategies),
        )
        result = runs.run(config, out / sub.name, overwrite=True, progress=False)
        frames.append(result.sessions.assign(folder=sub.name))
    return pd.concat(frames, ignore_index=True)


def report(rows: pd.DataFrame, window: int) -> str:
    lines = [f"{rows['session'].astype(str).add(rows['folder']).nunique()} sessions at a {window:,}-token window"]
    lines.append(f"{'strategy':<22}{'removed %':>10}{'compactions':>13}{'over-window calls':>19}")
    for setting, group in rows.groupby("setting", sort=False):
        lines.append(
            f"{setting:<22}{100 * group['removed_share'].mean():>10.2f}{group['compactions'].sum():>13}"
            f"{group['over_window_calls'].sum():>19}"
        )
    peak = rows.loc[rows["peak_full"].idxmax()]
    lines.append(
        f"\nhighest session: {peak['folder']}/{peak['session']} (uncompacted peak {peak['peak_full']:,}, "
        f"{peak['peak_full'] / window:.2f}x the window)"
    )
    for _, row in rows[(rows["folder"] == peak["folder"]) & (rows["session"] == peak["session"])].iterrows():
        lines.append(
            f"  {row['setting']:<20} peak {row['peak_context']:>8,}  over-window calls {row['over_window_calls']:>3}"
            f"  removed {100 * row['removed_share']:.1f}%"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", type=Path, default=DEFAULT_FOLDER)
    parser.add_argument("--window", type=int, default=64_000)
    parser.add_argument("--out", type=Path, default=Path("/tmp/observation-figures"))
    args = parser.parse_args()
    print(report(measure(args.folder, args.window, args.out), args.window))


if __name__ == "__main__":
    main()
