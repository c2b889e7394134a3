"""How many sessions of the bundled datasets (and the shared sessions, when present) the built-in
price table prices completely, and which models it lacks.

    python -m tests.scripts.measure_cost_coverage [FOLDER ...]

With no folder: every bundled dataset and, when the repository sits beside it, every folder of the
shared collection (`../shared/transcripts`).
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

from compactlab.llm.prices import price_for
from compactlab.sessions.loading import load_inputs

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "transcripts"


def main(inputs: list[str]) -> None:
    loaded = load_inputs(inputs or None, lenient=True)
    with_calls = [t for t in loaded.sessions if t.calls]
    unpriced: Counter[str] = Counter()
    priced = 0
    for session in with_calls:
        missing = {c.model or "(no model)" for c in session.calls if not c.model or price_for(c.model) is None}
        priced += not missing
        unpriced.update(missing)
    print(f"{priced} of {len(with_calls)} sessions priced; unpriced models (sessions): {dict(unpriced.most_common())}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m tests.scripts.measure_cost_coverage", description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="*", help="session folders, files or dataset names (default: see above)")
    folders = parser.parse_args().folders
    main(folders or ([] if not SHARED.exists() else [str(p) for p in sorted(SHARED.iterdir()) if p.is_dir()]))
