"""What one `compactlab baseline` run of a suite asks a model for, and what it costs (issue 28 §3).

    python -m tests.scripts.gate_baseline_cost [--suite SUITE] [--model gpt-4.1-mini]

With no suite, the one `compactlab init` writes (its bundled starter dataset). The suite is replayed
with a summarizer that counts instead of calling: each request's system prompt and prompt are
counted with o200k_base (what the summary call sends), and it answers with the extractive summary of
the same messages, so the replay goes on and later requests stay about as long as with a model
(a model's summaries differ in length: later prompts differ by that much). The output is bounded
by each request's budget (`max_summary_tokens`); the extractive answers' length is shown as a
typical one. Priced with the model's price (`compactlab.llm.prices`).
"""

from __future__ import annotations

import argparse
import tempfile
import threading
from dataclasses import replace
from pathlib import Path

from compactlab.cli.init_config import SUITE_NAME, write_init
from compactlab.contract import SummaryRequest, SummaryResponse
from compactlab.gate.suite import load_suite
from compactlab.llm.prices import price_for
from compactlab.runs import runs
from compactlab.strategies.extractive_summarizer import ExtractiveSummarizer
from compactlab.tokens.tokenizers import get_encoding


class CountingSummarizer:
    """Counts what each summary request would send and its output budget; answers extractively."""

    reads_prompt = True

    def __init__(self) -> None:
        self.calls = self.input_tokens = self.budget = self.extractive_tokens = 0
        self._encoding = get_encoding("o200k_base")
        self._lock = threading.Lock()

    def _count(self, text: str) -> int:
        return len(self._encoding.encode(text, disallowed_special=()))

    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        answer = ExtractiveSummarizer().summarize(request)
        with self._lock:
            self.calls += 1
            self.input_tokens += self._count(request.system) + self._count(request.prompt)
            self.budget += request.max_output_tokens
            self.extractive_tokens += self._count(answer.text)
        return SummaryResponse(text=answer.text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", type=Path, help="the suite (default: the one `compactlab init` writes)")
    parser.add_argument("--model", default="gpt-4.1-mini", help="the model whose price is applied")
    args = parser.parse_args()
    price = price_for(args.model)
    if price is None:
        parser.error(f"no price for {args.model!r} in compactlab.llm.prices")
    with tempfile.TemporaryDirectory(prefix="compactlab-baseline-cost-") as folder:
        path = args.suite
        if path is None:
            write_init(Path(folder) / "scaffold")
            path = Path(folder) / "scaffold" / SUITE_NAME
        suite = load_suite(path)
        counting = CountingSummarizer()
        result = runs.run(replace(suite.config, summarizer={}), Path(folder) / "run", summarizer=counting)
    sessions = len(result.read.sessions)
    low = counting.input_tokens * price.input / 1e6
    typical = low + counting.extractive_tokens * price.output / 1e6
    high = low + counting.budget * price.output / 1e6
    print(f"{path.name}: {sessions} sessions, {counting.calls} summary requests")
    print(
        f"input: {counting.input_tokens:,} tokens; output: at most {counting.budget:,} tokens (budget), "
        f"{counting.extractive_tokens:,} at the extractive summaries' length"
    )
    print(
        f"cost at {args.model} (${price.input}/M in, ${price.output}/M out): "
        f"${typical:.2f} with summaries as long as the extractive ones, at most ${high:.2f}"
    )


if __name__ == "__main__":
    main()
