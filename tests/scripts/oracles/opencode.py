"""opencode's own prune and overflow check (isOverflow), run on sessions: the oracle the opencode preset is tested
against (issue 42).

    python -m tests.scripts.engine_oracle opencode --engine-source GIT_DIR SESSION ...

Needs node and esbuild (`npm install esbuild` into a scratch folder and put its `node_modules/.bin` on
PATH, or set ESBUILD to the binary). From the snapshot, `packages/opencode/src/util/token.ts` and
`session/overflow.ts` are copied whole and verbatim; from `session/compaction.ts`, SessionCompaction.prune's
scan (from `let total = 0` to the end of its `loop:`) and the PRUNE_* constants are copied verbatim
and wrapped in a plain function of `msgs` (the Effect service around it, which reads the session from
storage and writes the marks back, is not run). Imports are stubbed: ProviderTransform.maxOutputTokens
is opencode's `Math.min(model.limit.output, OUTPUT_TOKEN_MAX) || OUTPUT_TOKEN_MAX` (32,000); type
imports vanish in the build. No model is called.

The committed oracles (tests/data/oracles/opencode/) are NOT from an upstream commit: the repository
is over the fetch limit, so their snapshot was assembled locally from the search index's stored
versions of these files (their `repository` field says which); regenerate them from a real
snapshot when one can be fetched.

A compactlab Session becomes opencode's message/part model (MessageV2.WithParts) so:
- a user message → `{info: {role: "user"}, parts: [text]}`; instruction messages (AGENTS.md, Codex's
  environment context) are left out, opencode sends those in its system prompt;
- an assistant message → `{info: {role: "assistant", summary}}` with one `tool` part per tool call
  (`id` the call id, `tool` its name); compactlab's summary message is opencode's summary message;
- a tool result fills its call's part: `state.status` "completed" with `output`, or, flagged as an
  error, "error" (opencode's state for a tool that threw: it has no `output` and is never pruned);
  a call with no result stays "pending". A result whose call is not in the session is dropped.

Check points: before every assistant message (what the session holds when the next call is made),
and the session's end. Each check holds `messages` (how many compactlab messages the prefix has),
`erased` (how many tool outputs prune clears; 0 when `pruned` ≤ PRUNE_MINIMUM) and `erased_digest` (`digest`
of their call ids), `pruned` and `total` (prune's own token sums). Where the last assistant reply
before the point has usage (so at every reply with usage, once), also `reply` (its message index),
`count` (tokenCount of its usage: input, output with reasoning, cache read and write, as compactlab
records them) and what opencode's `usable` and `isOverflow` say after it (opencode checks after each
reply, with its usage) at three models, each `{window, usable, overflow}`: `real`, the window compactlab
gives the model (the session's recorded window first) with a 32,000-token output limit; `simulated`, a
64,000-token window scaled as the preset's harness scales its reserve (`limits`); `simulated_as_is`,
a 64,000-token model with opencode's own 32,000 + 20,000 reserve.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from compactlab.sessions.importers import load_file
from compactlab.sessions.messages import is_summary
from compactlab.sessions.model import Session, TextPart, ToolCallPart, ToolResultPart
from compactlab.tokens.context_windows import ContextWindows
from tests.scripts.engine_oracle import OracleError, Snapshot, require, write_oracle

REPOSITORY = "anomalyco/opencode (formerly sst/opencode)"
LICENCE = "MIT"
TOKEN = "packages/opencode/src/util/token.ts"
OVERFLOW = "packages/opencode/src/session/overflow.ts"
COMPACTION = "packages/opencode/src/session/compaction.ts"
OUTPUT_LIMIT = 32_000  # ProviderTransform.OUTPUT_TOKEN_MAX: compactlab's window table has no output limits
RESERVED = 20_000  # overflow.ts COMPACTION_BUFFER, min(20,000, the output limit): what the scaled window scales
SIMULATED = 64_000  # the simulated window the trigger is also recorded at
DRIVER = Path(__file__).with_name("opencode_driver.mjs")
TRANSFORM_STUB = """export namespace ProviderTransform {
  export const OUTPUT_TOKEN_MAX = 32_000
  export function maxOutputTokens(model: any, _max?: number) {
    return Math.min(model.limit.output, OUTPUT_TOKEN_MAX) || OUTPUT_TOKEN_MAX
  }
}
"""


def prune_module(compaction: str) -> str:
    """opencode's prune scan and constants, verbatim, as a module exporting `prune(msgs)`."""
    constants = re.findall(r"^\s*(?:export )?const PRUNE_\w+ = .*$", compaction, re.M)
    start = compaction.find("let total = 0")
    end = compaction.find('log.info("found"', start)
    if len(constants) != 3 or start < 0 or end < 0:
        raise OracleError(f"{COMPACTION}: no prune() scan and PRUNE_* constants found (has opencode changed it?)")
    scan = compaction[start:end]
    body = "\n".join(line.strip().removeprefix("export ") for line in constants)
    return (
        f'import {{ Token }} from "../util/token"\n{body}\n'
        f"export {{ PRUNE_MINIMUM, PRUNE_PROTECT }}\n"
        f"export function prune(msgs: any[]) {{\n{scan}\n"
        "return { toPrune: toPrune.map((part: any) => part.callID), pruned, total }\n}\n"
    )


def to_opencode(session: Session) -> tuple[list[dict], list[int]]:
    """The session as opencode's messages, and for each compactlab message index the number of
    opencode messages made from the ones before it."""
    msgs: list[dict] = []
    parts_by_call: dict[str, dict] = {}
    made_before: list[int] = []
    for message in session.messages:
        made_before.append(len(msgs))
        if message.role == "user" and not message.instruction:
            text = "\n".join(p.text for p in message.parts if isinstance(p, TextPart))
            msgs.append({"info": {"role": "user"}, "parts": [{"type": "text", "text": text}]})
        elif message.role == "assistant":
            parts: list[dict] = [{"type": "text", "text": message.text()}]
            for part in message.parts:
                if isinstance(part, ToolCallPart):
                    tool = {"type": "tool", "callID": part.id, "tool": part.name, "state": {"status": "pending"}}
                    parts_by_call[part.id] = tool
                    parts.append(tool)
            msgs.append({"info": {"role": "assistant", "summary": is_summary(message)}, "parts": parts})
        for part in message.parts:
            if isinstance(part, ToolResultPart) and part.call_id in parts_by_call:
                parts_by_call[part.call_id]["state"] = (
                    {"status": "error", "error": part.content, "time": {}}
                    if part.is_error
                    else {"status": "completed", "output": part.content, "time": {}}
                )
    made_before.append(len(msgs))
    return msgs, made_before


def limits(real: int, simulated: int | None = None, scaled: bool = False) -> dict:
    """The model opencode's usable() and isOverflow() are given: the window compactlab gives the
    model (`real`), or a simulated one as-is (opencode's own reserve for a model of that window) or
    scaled as the preset's harness scales its reserve (`cfg.compaction.reserved`, opencode's own
    setting, and the output limit set so that window − output − reserved = simulated − round(52,000 ×
    simulated ÷ real), the preset's scaled trigger)."""
    if simulated is None:
        return {"context": real, "output": OUTPUT_LIMIT, "cfg": {}}
    if not scaled:
        return {"context": simulated, "output": OUTPUT_LIMIT, "cfg": {}}
    output = round(OUTPUT_LIMIT * simulated / real)
    reserve = round((OUTPUT_LIMIT + RESERVED) * simulated / real)
    return {"context": simulated, "output": output, "cfg": {"compaction": {"reserved": reserve - min(output, OUTPUT_LIMIT)}}}


def check_points(session: Session, windows: ContextWindows) -> list[dict]:
    """Before every assistant message, and the end: the prefix, and the usage of the reply before
    the point (every assistant reply with usage is the last reply before exactly one point)."""
    messages = session.messages
    points = []
    for end in [i for i, m in enumerate(messages) if m.role == "assistant" and i > 0] + [len(messages)]:
        point: dict = {"messages": end}
        reply = next((i for i in range(end - 1, -1, -1) if messages[i].role == "assistant"), None)
        call = messages[reply].call if reply is not None else None
        if reply is not None and call is not None:
            real = windows.lookup(call.model, session.context_window).tokens
            point["reply"] = reply
            point["windows"] = {
                "real": limits(real),
                "simulated": limits(real, SIMULATED, scaled=True),
                "simulated_as_is": limits(real, SIMULATED),
            }
            point["tokens"] = {
                "input": call.input_tokens,
                "output": call.output_tokens,
                "reasoning": 0,
                "cache": {"read": call.cache_read_tokens, "write": call.cache_write_tokens},
            }
        points.append(point)
    return points


def digest(call_ids: Sequence[str]) -> str:
    """A short fingerprint of a set of call ids (the oracle stays small; the tests compare sets by it)."""
    return hashlib.sha1("\n".join(sorted(call_ids)).encode()).hexdigest()[:16]


def preset_erased(session: Session, upto: int) -> list[str]:
    """The call ids whose outputs the opencode preset's prune stage clears on the first `upto`
    messages, through compactlab's own API (the preset's estimator, its real window)."""
    from compactlab.contract import CompactionRequest, Context
    from compactlab.strategies.pipeline import Pipeline
    from compactlab.strategies.presets import opencode
    from compactlab.strategies.prune import PLACEHOLDER
    from compactlab.tokens.metering import Meter

    preset = opencode()
    assert isinstance(preset.strategy, Pipeline), preset.strategy
    stage = preset.strategy.stages[0]
    assert not isinstance(stage, str), stage
    count = Meter(session, preset.estimator).count
    messages = session.messages[:upto]
    request = CompactionRequest(reason="threshold", window=400_000, target_tokens=1, count_tokens=count, prompt_tokens=count)
    after = stage.compact(Context(messages=messages), request).context.messages
    return [
        new.call_id
        for old_m, new_m in zip(messages, after, strict=True)
        for old, new in zip(old_m.parts, new_m.parts, strict=True)
        if isinstance(new, ToolResultPart) and new.content == PLACEHOLDER and old != new
    ]


def agreement(oracle: dict, session: Session) -> tuple[int, int, int]:
    """(acting points, of them the same erased set, points): an acting point is one where the engine
    or the preset erases something."""
    acting = same = 0
    for check in oracle["checks"]:
        ours = preset_erased(session, check["messages"])
        if check["erased"] or ours:
            acting += 1
            same += len(ours) == check["erased"] and digest(ours) == check["erased_digest"]
    return acting, same, len(oracle["checks"])


def main(argv: list[str] | None = None) -> int:
    """python -m tests.scripts.oracles.opencode ORACLE_DIR SESSION ...: the preset against the oracles."""
    import argparse

    from tests.scripts.engine_oracle import read_oracle

    parser = argparse.ArgumentParser(
        prog="python -m tests.scripts.oracles.opencode",
        description="The opencode preset's prune against opencode's own, at every check point of the oracles.",
    )
    parser.add_argument("oracles", type=Path, help="the folder of opencode oracles (tests/data/oracles/opencode)")
    parser.add_argument("sessions", type=Path, nargs="+", help="the sessions the oracles were made from")
    args = parser.parse_args(argv)
    folder, paths = args.oracles, args.sessions
    missing = [str(p) for p in [folder, *paths] if not p.exists()]
    if missing:
        parser.error(f"no such file or folder: {', '.join(missing)}")
    totals = [0, 0, 0]
    for path in paths:
        stem = path.name.removesuffix(".gz").removesuffix(".jsonl")
        oracle = read_oracle(folder / f"{stem}.json")
        figures = agreement(oracle, load_file(path, lenient=True)[0])
        totals = [a + b for a, b in zip(totals, figures, strict=True)]
        print(f"{stem[:60]:60} acting {figures[0]:4} same {figures[1]:4} of {figures[2]:4} points")
    acting, same, points = totals
    print(f"prune: same outputs erased at {same} of {acting} acting points ({same / max(acting, 1):.1%}); {points} points")
    return 0


def repository(snapshot: Snapshot) -> str:
    """The oracle's `repository`: where the snapshot's files came from. A snapshot assembled from the
    search index's stored versions (its commits say so) is named as such, with its commits' subjects."""
    log = subprocess.run(
        ["git", f"--git-dir={snapshot.git_dir}", "log", "--format=%s", snapshot.commit], capture_output=True, text=True
    ).stdout.strip()
    if "search index" not in log:
        return REPOSITORY
    assembled = "; then ".join(reversed(log.splitlines()))
    return f"{REPOSITORY}, NOT an upstream commit: the repository is over the fetch limit, so the files were assembled into a local snapshot: {assembled}"


def _esbuild() -> str:
    found = os.environ.get("ESBUILD") or require(
        "esbuild", "npm install esbuild in a scratch folder and put its node_modules/.bin on PATH (or set ESBUILD)"
    )
    return found


def run(snapshot: Snapshot, sessions: Sequence[Path], out: Path) -> list[Path]:
    node = require("node", "install Node.js 20 or later")
    esbuild = _esbuild()
    windows = ContextWindows()
    with tempfile.TemporaryDirectory(prefix="opencode-oracle-") as scratch:
        root = Path(scratch)
        snapshot.copy([TOKEN, OVERFLOW, COMPACTION], root)
        session_dir = root / "packages/opencode/src/session"
        (session_dir / "prune.ts").write_text(prune_module((root / COMPACTION).read_text()), encoding="utf-8")
        (root / "stubs").mkdir()
        (root / "stubs/transform.ts").write_text(TRANSFORM_STUB, encoding="utf-8")
        (root / "entry.ts").write_text(
            'export * from "./packages/opencode/src/session/prune"\n'
            # all of overflow.ts: isOverflow and usable, and tokenCount where the version exports it
            'export * from "./packages/opencode/src/session/overflow"\n',
            encoding="utf-8",
        )
        bundle = root / "engine.mjs"
        built = subprocess.run(
            [esbuild, str(root / "entry.ts"), "--bundle", "--format=esm", "--platform=node", f"--outfile={bundle}",
             f"--alias:@/provider/transform={root / 'stubs/transform.ts'}"],
            capture_output=True, text=True,
        )  # fmt: skip
        if built.returncode != 0:
            raise OracleError(f"esbuild could not build opencode's files: {built.stderr.strip()}")
        inputs, made = [], {}
        loaded: list[tuple[Path, Session]] = []
        for path in sessions:
            for session in load_file(path, lenient=True):
                msgs, made_before = to_opencode(session)
                points = [
                    {**p, "messages": made_before[p["messages"]], "at": p["messages"]} for p in check_points(session, windows)
                ]
                name = f"{path.name}#{len(loaded)}"
                inputs.append({"name": name, "msgs": msgs, "points": points})
                made[name] = points
                loaded.append((path, session))
        (root / "in.json").write_text(json.dumps(inputs), encoding="utf-8")
        done = subprocess.run([node, str(DRIVER), str(bundle), str(root / "in.json"), str(root / "out.json")],
                              capture_output=True, text=True)  # fmt: skip
        if done.returncode != 0:
            raise OracleError(f"node failed running opencode's functions: {done.stderr.strip()[-2000:]}")
        results = json.loads((root / "out.json").read_text(encoding="utf-8"))
    written = []
    for (path, _session), result in zip(loaded, results, strict=True):
        checks = []
        for point, check in zip(made[result["name"]], result["checks"], strict=True):
            erased = check.pop("erased")
            check = {**check, "messages": point["at"], "erased": len(erased), "erased_digest": digest(erased)}
            if "reply" in point:
                check["reply"] = point["reply"]
            checks.append(check)
        stem = path.name.removesuffix(".gz").removesuffix(".jsonl")
        written.append(write_oracle(out, "opencode", repository(snapshot), snapshot, LICENCE, stem, checks))
    return written


if __name__ == "__main__":
    raise SystemExit(main())
