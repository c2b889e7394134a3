"""The pi preset beside pi's own code: the issue 42 rows, measured from the committed oracles.

    python -m tests.scripts.oracles.pi_figures [--oracles DIR] [--json]

Each oracle (`tests.scripts.oracles.pi`, one per bundled pi session) records what pi's functions
decided; this runs the pi preset through compactlab's API on the same session and counts where the
two agree:
- estimate: the preset's count of each message (its estimator, `Meter.count`) against `estimateTokens`;
- trigger: at pi's check points, pi's `shouldCompact` against the preset's trigger on what the replay
  shows it there (the run's last call, prompt + output, and the estimate of the messages since, up to
  the next call), at the real window and at a simulated 64,000 (the preset's harness applied);
- first firing: the call pi first compacts before (its first check point that compacts) against the
  call of the preset's first compaction in compactlab's replay, calls apart, at the real window and at
  64,000. Only up to the session's first production compaction: past it the oracle reads pi's recorded
  usage, which measures the production agent's compacted prompt, and the replay the whole history,
  so the two firings are no longer the same quantity (None; the closed loop compares them there);
- cut: the first kept message of `Preset.compact` on `messages[:at]` against `prepareCompaction`'s,
  at pi's check points and before every recorded call; kept: the kept tail counted by pi's
  `estimateTokens`, compactlab's (its kept messages by the oracle's estimates) minus pi's;
- closed loop: the calls the preset compacts before in its own replay at 64,000 against the calls pi
  would compact before fed the same replayed prompts: at each of pi's check points, the replay's last
  call's prompt + output against pi's recorded threshold (`compacts_above`, found by asking pi's
  `shouldCompact`, a comparison of that one number); and pi's overflow path (agent-session.ts
  `_checkCompaction` case 1: the provider refuses a prompt over the window, the error ends the run,
  pi compacts and retries that call) at any call whose replayed prompt is over the window, as it
  stood before any compaction there (a compaction row's `tokens_before`, else the call's row).
"""

from __future__ import annotations

import argparse
import json
import statistics
from dataclasses import dataclass
from pathlib import Path

from compactlab.contract import CompactionRequest, Context
from compactlab.replay.replay import replay
from compactlab.replay.setting import Setting, estimator_of, window_and_trigger
from compactlab.sessions.importers import load_file
from compactlab.sessions.model import Session
from compactlab.strategies.presets import Preset
from compactlab.strategies.registry import get_strategy
from compactlab.tokens.context_windows import ContextWindows
from compactlab.tokens.metering import Meter
from tests.scripts.engine_oracle import read_oracle

ROOT = Path(__file__).resolve().parents[3]
ORACLES = ROOT / "tests" / "data" / "oracles" / "pi"
SESSIONS = ROOT / "datasets" / "pi-sessions" / "sessions"
SIMULATED = 64_000
REAL = 200_000  # the bundled pi sessions' Claude models' window (the oracle's real one)


@dataclass(frozen=True)
class Oracle:
    session: Session
    checks: list[dict]

    def of(self, kind: str) -> list[dict]:
        return [c for c in self.checks if c["kind"] == kind]

    @property
    def estimates(self) -> list[int]:
        return self.of("estimates")[0]["tokens"]

    def compacts_above(self, window: int) -> int:
        return next(c["compacts_above"] for c in self.of("threshold") if c["window"] == window)


def load(path: Path) -> Oracle:
    document = read_oracle(path)
    session_path = SESSIONS / (document["session"])
    return Oracle(load_file(session_path)[0], document["checks"])


def oracles(folder: Path = ORACLES) -> list[Oracle]:
    return [load(p) for p in sorted(folder.glob("*.json"))]


def preset_cut(preset: Preset, session: Session, at: int) -> int:
    """The first message the preset keeps verbatim when it compacts `messages[:at]` (`at`: it keeps nothing
    of them; 0: it keeps them all, as when it does not compact)."""
    meter = Meter(session, estimator_of(preset))
    request = CompactionRequest(
        reason="threshold", window=200_000, target_tokens=100_000, count_tokens=meter.count, pin_task=preset.harness.pin_task
    )
    result = preset.compact(Context(messages=session.messages[:at]), request)
    return 0 if result.messages_removed == 0 else at - result.context.kept_tail


def seen_at(preset: Preset, oracle: Oracle, check: dict) -> int:
    """What the replay shows the preset's trigger before the first call after pi's check point."""
    messages = oracle.session.messages
    meter = Meter(oracle.session, estimator_of(preset))
    reply = messages[check["reply"]]
    upto = next((i for i in range(check["at"], len(messages)) if messages[i].call is not None), check["at"])
    assert reply.call is not None
    since = sum(meter.message_tokens(m) for m in messages[check["reply"] + 1 : upto])
    return round(reply.call.prompt_tokens + reply.call.output_tokens + since)


def trigger_of(preset: Preset, session: Session, window: int | None):
    windows = ContextWindows(overrides={"": window}) if window else ContextWindows()
    return window_and_trigger(preset, None, windows, session.models[0], session.context_window, session.agent_version)


def figures(preset: Preset, found: list[Oracle]) -> dict:
    estimate = [0, 0]
    cuts = {"prompt": [0, 0], "call": [0, 0]}
    kept_diff: list[int] = []
    trigger = {"real": [0, 0], "simulated": [0, 0]}
    first: dict[str, list[int | None]] = {"real": [], "simulated": []}
    closed = {"real": [0, 0], "simulated": [0, 0]}
    for oracle in found:
        messages = oracle.session.messages
        meter = Meter(oracle.session, estimator_of(preset))
        estimate[0] += sum(meter.count([m]) == t for m, t in zip(messages, oracle.estimates, strict=True))
        estimate[1] += len(messages)
        for kind in ("prompt", "call"):
            for check in oracle.of(kind):
                if check.get("first") is None:
                    continue
                mine = preset_cut(preset, oracle.session, check["at"])
                theirs = check["first"] if check["summarized"] or check["prefix"] else 0
                cuts[kind][0] += mine == theirs
                cuts[kind][1] += 1
                if kind == "prompt":
                    kept = sum(oracle.estimates[mine or 0 : check["at"]])
                    kept_diff.append(kept - check["kept_tokens"])
        for label, window in (("real", None), ("simulated", SIMULATED)):
            size, trig = trigger_of(preset, oracle.session, window)
            for check in oracle.of("prompt"):
                pi_says = check["compacts"][str(size)] if str(size) in check["compacts"] else None
                if pi_says is None:
                    continue
                trigger[label][0] += pi_says == (trig.check(seen_at(preset, oracle, check), size) is not None)
                trigger[label][1] += 1
        for label, window in (("real", REAL), ("simulated", SIMULATED)):
            first[label].append(first_apart(preset, oracle, window))
            agree, total = closed_loop(preset, oracle, window)
            closed[label][0] += agree
            closed[label][1] += total
    return {
        "estimate": estimate,
        "cut_prompt": cuts["prompt"],
        "cut_call": cuts["call"],
        "kept_diff": _spread(kept_diff),
        "trigger_real": trigger["real"],
        "trigger_simulated": trigger["simulated"],
        "first_firing_real": first["real"],
        "first_firing_simulated": first["simulated"],
        "closed_loop_real": closed["real"],
        "closed_loop_simulated": closed["simulated"],
    }


def replayed_at(preset: Preset, session: Session, window: int):
    return replay(session, Setting("pi-oracle", preset.name), ContextWindows(overrides={"": window}), strategy=preset)


def first_apart(preset: Preset, oracle: Oracle, window: int = SIMULATED) -> int | None:
    """The preset's first compaction's call minus pi's (None when either does not compact before the
    session's first production compaction, where the oracle's usage stops describing the history)."""
    messages = oracle.session.messages
    marker = min((m.at_message for m in oracle.session.compactions), default=len(messages))
    # The first call after the production compaction is still asked on the usage recorded before it.
    last = sum(m.call is not None for m in messages[:marker])
    pi_call = next((c["calls"] for c in oracle.of("prompt") if c["compacts"][str(window)] and c["calls"] <= last), None)
    rows = [r for r in replayed_at(preset, oracle.session, window).compactions if r.call <= last]
    mine = rows[0].call if rows else None
    return None if pi_call is None or mine is None else mine - pi_call


def closed_loop(preset: Preset, oracle: Oracle, window: int = SIMULATED) -> tuple[int, int]:
    """(calls both compact before, calls either does) on the preset's own replay at `window`."""
    mine, theirs = closed_loop_calls(preset, oracle, window)
    return len(mine & theirs), len(mine | theirs)


def closed_loop_calls(preset: Preset, oracle: Oracle, window: int = SIMULATED) -> tuple[set[int], set[int]]:
    """The calls the preset compacts before in its own replay at `window`, and those pi would."""
    replayed = replayed_at(preset, oracle.session, window)
    mine = {row.call for row in replayed.compactions}
    sizes = replayed.calls["context_tokens"]
    outputs = [m.call.output_tokens for m in oracle.session.messages if m.call is not None]
    above = oracle.compacts_above(window)
    theirs = set()
    for check in oracle.of("prompt"):
        number = check["calls"]  # pi compacts before this call when the last call it made was over
        if 0 < number < len(sizes) and sizes[number - 1] + outputs[number - 1] > above:
            theirs.add(number)
    sent = list(sizes)  # each call's prompt before any compaction there: what the provider would get
    for row in reversed(replayed.compactions):  # the first compaction of a call says it
        sent[row.call] = row.event.tokens_before
    theirs |= {number for number, tokens in enumerate(sent) if number not in theirs and tokens > window}
    return mine, theirs


def _spread(values: list[int]) -> dict:
    if not values:
        return {}
    ordered = sorted(values)
    return {
        "median": statistics.median(ordered),
        "p90": ordered[int(0.9 * (len(ordered) - 1))],
        "max": ordered[-1],
        "min": ordered[0],
        "n": len(ordered),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.scripts.oracles.pi_figures", description=__doc__.split("\n\n")[0])
    parser.add_argument("--oracles", type=Path, default=ORACLES)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    preset = get_strategy("pi")
    assert isinstance(preset, Preset)
    found = figures(preset, oracles(args.oracles))
    if args.json:
        print(json.dumps(found))
        return 0
    for name, value in found.items():
        if not name.startswith("first_firing") and isinstance(value, list) and len(value) == 2:
            print(f"{name:26} {value[0]:5} / {value[1]:5}  {100 * value[0] / max(value[1], 1):.1f}%")
        else:
            print(f"{name:26} {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
