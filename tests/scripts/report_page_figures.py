"""A report's weight and first screen, measured in Chromium (issue 43's closing figures).

    python -m tests.scripts.report_page_figures REPORT.html...

For each report: its size in bytes, the page's height at 1400 px wide, where the Pareto plot's top and
bottom edges sit, and whether the verdict, its window, what the cost covers and the whole plot are
inside the first 1400 × 900 screen. It lays the page out as tests/report/test_first_screen.py does
(the same probe), so the figures are the ones the test checks. Needs Debian's `chromium` package.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from tests.report.test_first_screen import VIEWPORT, first_screen, inside


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pages", nargs="+", type=Path, metavar="REPORT.html", help="reports to measure")
    for page in parser.parse_args(argv).pages:
        with tempfile.TemporaryDirectory() as folder:
            found = first_screen(page, Path(folder))
        plot = found["plot"]
        shown = {name: inside(found[name], *VIEWPORT) for name in ("verdict", "window", "cost", "plot")}
        where = f"plot top {plot[1]:.0f} px, bottom {plot[3]:.0f} px" if plot else "no plot"
        print(
            f"{page}: {page.stat().st_size:,} bytes, {found['height']:,} px tall at {VIEWPORT[0]} wide; {where}; "
            f"on the first screen: {', '.join(n for n, ok in shown.items() if ok) or 'none'}"
            + (f"; not: {', '.join(n for n, ok in shown.items() if not ok)}" if not all(shown.values()) else "")
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
