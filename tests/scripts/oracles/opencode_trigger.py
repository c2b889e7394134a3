"""The opencode preset's trigger against opencode's own isOverflow, at every reply the oracles record
(issue 42).

    python -m tests.scripts.oracles.opencode_trigger [ORACLE_DIR]

opencode asks isOverflow after each assistant reply, with that reply's usage (processor.ts, at the
step's finish; prompt.ts asks the same of the last finished reply before the next step), and
compacts before the next call when it says so. The preset's trigger is asked where the replay asks
it: before the next call after the reply (at the session's end, what it would be shown before one),
with the count the replay's uncompacted walk gives it (`compactlab.replay.uncompacted`), at the
window and with the trigger `window_and_trigger` gives the preset for the reply's model: the window
compactlab gives the model ("real"), and a simulated 64,000-token one, where the preset's harness
scales its reserve ("simulated"; the oracle's scaled model: `opencode.limits`). Replies after the
session's own first recorded compaction are left out: their usage is of the compacted prompt, not of
the history the replay shows. opencode's own reserve
at a 64,000-token model ("simulated_as_is") is recorded beside it, to measure that choice.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from compactlab.replay.prompt_size import hybrid_tokens, own_estimate
from compactlab.replay.setting import window_and_trigger
from compactlab.replay.uncompacted import uncompacted
from compactlab.sessions.importers import load_file
from compactlab.sessions.model import Session
from compactlab.strategies.presets import Preset, opencode
from compactlab.tokens.context_windows import ContextWindows
from compactlab.tokens.metering import Meter
from tests.scripts.engine_oracle import read_oracle
from tests.scripts.oracles.opencode import SIMULATED

ROOT = Path(__file__).resolve().parents[3]  # the repository (tests/ is not installed)
DATASETS = ROOT / "datasets"
ORACLES = ROOT / "tests" / "data" / "oracles" / "opencode"
LABELS = ("real", "simulated", "simulated_as_is")


@dataclass(frozen=True)
class Decision:
    """At one reply: what opencode decided and what the preset's trigger decides, at one window."""

    reply: int  # the reply's message index
    window: int
    count: int  # opencode's tokenCount of the reply's usage
    seen: int  # what the preset's trigger is shown
    opencode: bool
    preset: bool

    @property
    def same(self) -> bool:
        return self.opencode == self.preset


def session_of(oracle: dict) -> Session:
    """The bundled session an oracle was made from."""
    found = sorted(DATASETS.glob(f"*/sessions/{oracle['session']}.jsonl*"))
    if len(found) != 1:
        raise FileNotFoundError(f"oracle {oracle['session']!r}: expected one bundled session, found {found}")
    return load_file(found[0], lenient=True)[0]


def seen_after(preset: Preset, session: Session, window: int, reply: int) -> int:
    """What the replay shows the preset's trigger before the first call after message `reply`."""
    meter = Meter(session, preset.estimator)
    walk = uncompacted(meter, window, preset.harness.anchor_output)
    messages = session.messages
    upto = next((i for i in range(reply + 1, len(messages)) if messages[i].call is not None), None)
    if upto is not None:
        return walk.trigger_tokens[walk.calls_before(upto)]
    end = len(messages)  # no call after it: the count the trigger would see before one
    known = walk.known_usage[end]
    if known is None or not meter.uses_usage:
        return own_estimate(walk.history_tokens[end], meter.local.prompt_overhead, meter.offset)
    covered = walk.history_tokens[known[0]] if meter.counts_newer else walk.history_tokens[end]
    return hybrid_tokens(known[1], walk.history_tokens[end], covered)


def decisions(oracle: dict, session: Session, label: str, preset: Preset | None = None) -> list[Decision]:
    """At every reply the oracle records, opencode's decision at `label`'s window and the preset's."""
    preset = preset or opencode()
    # The preset's scaled trigger is also what `simulated_as_is` is held against: that figure
    # measures the choice to scale (opencode keeps its reserve at any window).
    windows = ContextWindows(overrides={"": SIMULATED}) if label != "real" else ContextWindows()
    found = []
    recorded = min((c.at_message for c in session.compactions), default=len(session.messages))
    for check in oracle["checks"]:
        # After the session's own first compaction its usage describes the compacted prompt, while
        # the replay shows the preset the whole history: the two decide on different contexts.
        if "reply" not in check or check["reply"] >= recorded:
            continue
        model = session.messages[check["reply"]].call.model
        window, trigger = window_and_trigger(preset, None, windows, model, session.context_window, session.agent_version)
        if window != check[label]["window"]:
            raise ValueError(
                f"{oracle['session']}: the oracle's {label} window is {check[label]['window']}, the preset's {window}"
            )
        seen = seen_after(preset, session, window, check["reply"])
        fires = trigger.check(seen, window) is not None
        found.append(Decision(check["reply"], window, check["count"], seen, check[label]["overflow"], fires))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.scripts.oracles.opencode_trigger", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("oracles", type=Path, nargs="?", default=ORACLES, help="the folder of opencode oracles")
    args = parser.parse_args(argv)
    paths = sorted(args.oracles.glob("*.json"))
    if not paths:
        parser.error(f"{args.oracles}: no oracles")
    totals = {label: [0, 0] for label in LABELS}
    for path in paths:
        oracle = read_oracle(path)
        session = session_of(oracle)
        row = []
        for label in LABELS:
            found = decisions(oracle, session, label)
            same = sum(d.same for d in found)
            totals[label][0] += same
            totals[label][1] += len(found)
            early = sum(d.preset and not d.opencode for d in found)
            row.append(f"{label} {same:4}/{len(found):4} (preset early {early}, late {len(found) - same - early})")
        print(f"{oracle['session'][:40]:40} " + "  ".join(row))
    for label, (same, points) in totals.items():
        print(f"trigger, {label} window: the same decision at {same} of {points} replies ({same / max(points, 1):.1%})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
