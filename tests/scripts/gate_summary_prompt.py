"""Measure the gate's verdict on a near-empty summary prompt (issue 15 §4).

    python -m tests.scripts.gate_summary_prompt [OUT_DIR] [--metrics preservation_k5 ...]

The scenario of tests/gate/test_worse_summary_prompt.py: ten real mini-swe-agent sessions, `summarize` on
an LLM summarizer served by the local wire-format server (its answer follows the prompt), a baseline
with the original prompt, then `compactlab check` with `{{ conversation }} Summarize briefly.` and
with the original again. Prints both checks' exit codes and writes their markdown to OUT_DIR.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from compactlab.cli.main import main
from compactlab.strategies.prompting import PROMPTS_DIR
from tests.fake_behaviours import summarizing
from tests.fake_providers import serve
from tests.gate.test_worse_summary_prompt import KEY_ENV, METRICS, NEAR_EMPTY, write_suite


def measure(out: Path, metrics: dict[str, float]) -> dict[str, int]:
    os.environ.setdefault(KEY_ENV, "sk-test")
    original = (PROMPTS_DIR / "summary.j2").read_text(encoding="utf-8")
    codes = {}
    with tempfile.TemporaryDirectory() as folder, serve() as server:
        server.otherwise = summarizing()
        suite = write_suite(Path(folder), server, metrics)
        template, baseline = Path(folder) / "prompts" / "summary.j2", Path(folder) / "baseline.json"
        template.write_text(original, encoding="utf-8")
        assert main(["baseline", "--suite", str(suite), "--baseline", str(baseline)]) == 0
        for name, text in (("near-empty", NEAR_EMPTY), ("original", original)):
            template.write_text(text, encoding="utf-8")
            codes[name] = main(
                ["check", "--suite", str(suite), "--baseline", str(baseline), "--markdown-out", str(out / f"{name}.md")]
            )
    return codes


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, nargs="?", default=Path("gate-summary-prompt"))
    parser.add_argument("--metrics", nargs="+", default=list(METRICS), help="guarded metrics (tolerances as in the test)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    chosen = {name: METRICS.get(name, 0.02) for name in args.metrics}
    for name, code in measure(args.out, chosen).items():
        print(f"{name} prompt: compactlab check exit {code} (markdown: {args.out / (name + '.md')})")
