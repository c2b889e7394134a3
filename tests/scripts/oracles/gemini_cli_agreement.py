"""How far the gemini-cli preset agrees with Gemini CLI's own code (its committed oracles).

    python -m tests.scripts.oracles.gemini_cli_agreement [ORACLE.json ...]

For each oracle (default: tests/data/oracles/gemini-cli/*.json) the bundled session it names is
replayed through compactlab's API at every check: the trigger (the preset's own measure before each
call, `compactlab.replay.uncompacted`, against `Trigger.check`) at the real window and at the oracle's
simulated one; the compression stage (`GeminiCompression.compact`, a fixed summary as the oracle's)
on the history its masking stage left, for the first kept message, the truncated outputs and whether
it failed; the masking stage (`GeminiMasking.compact`, chained as Gemini's masking persists) for the
outputs masked. Prints one line per check kind: points, agreeing points, share.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from compactlab.contract import CompactionFailed, CompactionRequest, Context, SummaryRequest, SummaryResponse
from compactlab.replay.uncompacted import uncompacted
from compactlab.sessions.importers import load_file
from compactlab.sessions.model import Message, Session, ToolResultPart
from compactlab.strategies.gemini import GeminiCompression, GeminiMasking
from compactlab.strategies.presets import GEMINI_WINDOW, gemini_cli
from compactlab.tokens.metering import Meter
from tests.scripts.engine_oracle import read_oracle
from tests.scripts.oracles.gemini_cli import SIMULATED_WINDOW

ORACLES = Path(__file__).resolve().parents[3] / "tests/data/oracles/gemini-cli"
DATASETS = Path(__file__).resolve().parents[3] / "datasets"


@dataclass(frozen=True)
class FixedSummary:
    """The oracle's summarizer: no model, one fixed <state_snapshot>."""

    name: str = "fixed"

    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        return SummaryResponse("<state_snapshot>oracle</state_snapshot>")


def session_of(document: dict) -> Session:
    found = sorted(DATASETS.glob(f"*/sessions/{document['session']}*"))
    if not found:
        raise FileNotFoundError(f"oracle of {document['session']!r}: no bundled session by that name under {DATASETS}")
    return load_file(found[0])[0]


def _outputs(messages: tuple[Message, ...] | list[Message]) -> dict[str, str]:
    return {p.call_id: p.content for m in messages for p in m.parts if isinstance(p, ToolResultPart)}


def preset_checks(session: Session, checks: list[dict]) -> list[dict]:
    """The preset's decisions at each of the oracle's checks, in the oracle's terms."""
    preset = gemini_cli()
    meter = Meter(session, preset.estimator)
    measures = {w: uncompacted(meter, w, preset.harness.anchor_output).trigger_tokens for w in (GEMINI_WINDOW, SIMULATED_WINDOW)}
    masking, compression = GeminiMasking(), GeminiCompression(summarizer="llm")
    state: list[Message] = []
    out = []
    for number, check in enumerate(checks):
        end, call = check["end"], check["call"]
        messages = tuple(state + list(session.messages[len(state) : call]))
        context = Context(messages=messages, known_usage=(end, check["last_prompt"]))
        row: dict = {}
        for label, window in (("real", GEMINI_WINDOW), ("simulated", SIMULATED_WINDOW)):
            fires = preset.trigger.check(measures[window][number], window) is not None
            request = CompactionRequest("threshold", window, window // 2, meter.count, FixedSummary())
            row[label] = {"fires": fires, **_compressed(compression, context, request, end)}
        mask_request = CompactionRequest("threshold", SIMULATED_WINDOW, 0, meter.count)
        after = masking.compact(context, mask_request).context.messages
        before, later = _outputs(messages[:end]), _outputs(after[:end])
        row["masked"] = sorted(k for k in before if later.get(k) != before[k])
        state = list(after[:end])
        out.append(row)
    return out


def _compressed(strategy: GeminiCompression, context: Context, request: CompactionRequest, end: int) -> dict:
    try:
        result = strategy.compact(context, request)
    except CompactionFailed:
        return {"status": "COMPRESSION_FAILED_INFLATED_TOKEN_COUNT", "first_kept": None, "truncated": []}
    if result.context is context:
        return {"status": "NOOP", "first_kept": None, "truncated": []}
    history = [i for i in range(end) if context.messages[i].role != "system"]
    kept = result.context.kept_tail
    first_kept = history[len(history) - kept] if kept else None
    before = _outputs(context.messages[first_kept:end] if first_kept is not None else ())
    later = _outputs(result.context.messages)
    return {"status": "COMPRESSED", "first_kept": first_kept, "truncated": sorted(k for k in before if later.get(k) != before[k])}


def agreement(oracle: dict, mine: list[dict]) -> dict[str, tuple[int, int]]:
    """Check kind → (points, agreeing points)."""
    tally: dict[str, list[int]] = {}

    def add(kind: str, same: bool) -> None:
        points = tally.setdefault(kind, [0, 0])
        points[0] += 1
        points[1] += same

    for theirs, ours in zip(oracle["checks"], mine):
        for label in ("real", "simulated"):
            engine = theirs[label]
            add(f"trigger, {label} window", (engine["status"] != "NOOP") == ours[label]["fires"])
            if engine["status"] != "NOOP":  # where Gemini compresses: the same outcome, split and cuts
                add(f"status where it compresses, {label}", engine["status"] == ours[label]["status"])
                if engine["status"] == "COMPRESSED" == ours[label]["status"]:
                    add(f"first kept message, {label}", engine["first_kept"] == ours[label]["first_kept"])
                    add(f"truncated outputs, {label}", sorted(engine["truncated"]) == ours[label]["truncated"])
        add("masked outputs (every check)", sorted(theirs["masked"]) == ours["masked"])
        if theirs["masked"] or ours["masked"]:
            add("masked outputs (acting checks)", sorted(theirs["masked"]) == ours["masked"])
    return {kind: (n, same) for kind, (n, same) in tally.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.scripts.oracles.gemini_cli_agreement",
        description="The gemini-cli preset against Gemini CLI's own code, at every check point of the oracles.",
    )
    parser.add_argument("oracles", type=Path, nargs="*", help=f"oracle files (default: every one in {ORACLES})")
    args = parser.parse_args(argv)
    missing = [str(p) for p in args.oracles if not p.is_file()]
    if missing:
        parser.error(f"no such oracle: {', '.join(missing)}")
    paths = args.oracles or sorted(ORACLES.glob("*.json"))
    total: dict[str, tuple[int, int]] = {}
    for path in paths:
        oracle = read_oracle(path)
        figures = agreement(oracle, preset_checks(session_of(oracle), oracle["checks"]))
        for kind, (n, same) in figures.items():
            print(f"{path.stem[:40]:40}  {kind:38} {same:5}/{n:<5} {same / n:7.1%}")
            old = total.get(kind, (0, 0))
            total[kind] = (old[0] + n, old[1] + same)
    for kind, (n, same) in total.items():
        print(f"{'all':40}  {kind:38} {same:5}/{n:<5} {same / n:7.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
