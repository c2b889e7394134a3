"""Draw, refresh and score the labelled sample of next-step needed items (tests.scripts.needed_sample).

    python -m tests.scripts.needed_items_sample draw [--seed 27] [--items 50] [--exclude OLD] [--source NAME] [--sessions DIR] [--out FILE]
    python -m tests.scripts.needed_items_sample refresh [FILE]
    python -m tests.scripts.needed_items_sample score [FILE] [--held-out]

`draw` writes a fresh sample with null labels, for relabelling by docs/needed-items-labelling.md
(it refuses to overwrite a file); `--exclude` names samples whose steps it leaves out (held out); `--source` draws
from the sources named only (a new shared folder: each source's draw is seeded on its own, so its steps are the ones
a draw of every source would pick). `refresh` adds to a sample what the current extractor now finds in
its steps (new needed items get a null label: read them). `score` prints precision per source on
what the extractor finds now with its 95% Wilson interval, and recall on the steps read for it
with its counts. `--held-out` scores only the steps of sessions no extractor fix was chosen on
(needed_sample.TUNED_ON). FILE defaults to the committed
sample; the shared sessions are looked for where tests/conftest.py looks (--sessions to change: any folder
of sessions, one subfolder per source, such as the rebuilt development set).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tests.scripts.needed_sample import (
    CAP,
    TUNED_ON,
    draw,
    needed_now,
    read_sample,
    refresh,
    scores,
    session_files,
    source_folders,
    unlabelled,
    write_sample,
)

REPO = Path(__file__).resolve().parents[2]  # tests/scripts/ → the repository
SAMPLE = REPO / "tests" / "data" / "needed_items_sample.jsonl"
SHARED = next(
    (p for p in (REPO.parent / "shared" / "transcripts", REPO.parents[1] / "shared" / "transcripts") if p.is_dir()),
    REPO.parent / "shared" / "transcripts",
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=("draw", "refresh", "score"))
    parser.add_argument("file", nargs="?", type=Path, default=SAMPLE)
    parser.add_argument("--out", type=Path, help="draw: where to write (default: FILE)")
    parser.add_argument("--seed", type=int, default=27)
    parser.add_argument(
        "--items", type=int, default=50, help=f"draw: counted needed items per source (at most {CAP} a step), at least"
    )
    parser.add_argument("--exclude", type=Path, action="append", default=[], help="draw: leave out the steps of this sample")
    parser.add_argument(
        "--source",
        action="append",
        help="draw: only from this source, a folder of SESSIONS (repeat for more; default: every source: "
        "the shared sessions' SOURCES, or each folder of another SESSIONS)",
    )
    parser.add_argument("--held-out", action="store_true", help="score: leave out the sessions extractor fixes were chosen on")
    parser.add_argument(
        "--sessions",
        "--shared",
        dest="shared",
        type=Path,
        default=SHARED,
        help="the folder of sessions the sample's paths are under, one folder per source (default: the shared sessions)",
    )
    args = parser.parse_args(argv)
    if args.action == "draw":
        out = args.out or args.file
        if out.exists():
            parser.error(f"{out} exists; give --out for a fresh sample")
        held_out = frozenset((s.session, s.step) for sample in args.exclude for s in read_sample(sample))
        if not args.shared.is_dir():
            parser.error(f"{args.shared}: no such folder of sessions")
        sources = tuple(args.source or source_folders(args.shared))
        for name in sources:
            try:
                if not session_files(args.shared, name):
                    parser.error(f"{args.shared / name}: no session files (*.jsonl, *.json) in it")
            except FileNotFoundError as exc:
                parser.error(str(exc))
        steps = draw(args.shared, args.seed, args.items, sources, held_out)
        write_sample(steps, out)
        print(f"{out}: {len(steps)} steps, {sum(len(s.items) for s in steps)} needed items to label")
        return 0
    steps = read_sample(args.file)
    if args.action == "refresh":
        steps = refresh(steps, args.shared)
        write_sample(steps, args.file)
        print(f"{args.file}: {len(unlabelled(steps, needed_now(steps, args.shared)))} needed items to label")
        return 0
    if args.held_out:
        steps = [s for s in steps if s.session not in TUNED_ON]
        print(f"held out: the steps of {len(TUNED_ON)} sessions that extractor fixes were chosen on are left out")
    needed = needed_now(steps, args.shared)
    open_labels = unlabelled(steps, needed)
    for step, item in open_labels:
        print(
            f"no label (run refresh, then label it): {step.session} step {step.step}: {item.kind} {item.text!r}",
            file=sys.stderr,
        )
    print(
        f"{'source':22} {'steps':>5} {'items':>5} {'meaningful':>10} {'noise':>5} {'produced':>8} {'precision':>9} {'95% interval':>13} {'recall':>16}"
    )
    for score in scores(steps, needed).values():
        precision = f"{score.precision:.1%}" if score.precision is not None else "-"
        interval = f"{score.precision_interval[0]:.0%}–{score.precision_interval[1]:.0%}" if score.precision_interval else "-"
        recall = (
            f"{score.recall:.1%} ({score.recall_found}/{score.recall_found + score.recall_missed})"
            if score.recall is not None
            else "-"
        )
        print(
            f"{score.source:22} {score.steps:>5} {score.labelled:>5} {score.meaningful:>10} {score.noise:>5} {score.produced:>8} {precision:>9} {interval:>13} {recall:>16}"
        )
    return 1 if open_labels else 0


if __name__ == "__main__":
    sys.exit(main())
