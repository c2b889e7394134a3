"""Gemini CLI's oracle: its own compression and masking code run on sessions (issue 42).

    python -m tests.scripts.engine_oracle gemini-cli --engine-source GIT_DIR SESSION ...

From the snapshot, copied verbatim into a scratch folder: packages/core/src/context/
chatCompressionService.ts and toolOutputMaskingService.ts, utils/tokenCalculation.ts, config/models.ts,
tools/definitions/base-declarations.ts, core/tokenLimits.ts (at the real window; a simulated window
replaces it by a stub returning that window), and from utils/fileUtils.ts, core/turn.ts and
hooks/types.ts the declarations the two services import (sanitizeFilenamePart, formatTruncatedToolOutput,
saveTruncatedToolOutput; CompressionStatus; PreCompressTrigger), each cut out whole. Stubbed: the
telemetry, the debug logger, the prompts (no model is called: the summary is a fixed <state_snapshot>),
the environment context (none), tool-names.ts (it re-exports base-declarations.ts). `gemini_cli_driver.ts`
(ours) runs them; esbuild bundles it (`npm install esbuild` into ESBUILD_DIR, default /tmp/gemini-node).

Each session (any format compactlab reads) is mapped to Gemini's Content[] by
`compactlab.strategies.gemini.contents`; a check is made before each recorded model call, on the
history before the request being sent (`pending_start`), with the previous call's prompt tokens
(input + cache read + cache write) as Gemini's lastPromptTokenCount (0 before the first call).
A check (one per call, in order) holds:
- `call`: the index of the recorded reply (the message the call wrote); `end`: the history's length
  in messages (the request being sent starts there); `last_prompt`: the count compress() compared;
- `real` / `simulated`: at the real window (tokenLimit: 1,048,576 for every model) and at
  `SIMULATED_WINDOW`: `status` (compress()'s CompressionStatus name; NOOP when under 0.5 of the window),
  `first_kept` (the message index of the first kept content when it compressed, else null),
  `truncated` (call ids of the kept tail's tool outputs truncateHistoryToBudget cut);
- `masked`: the call ids ToolOutputMaskingService.mask masked at this check (masking persists:
  each check starts from the history the previous one left, as a Gemini session does).
Compression is open loop: recorded, not applied (a compressed history needs the model's summary).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from compactlab.sessions.importers import load_file
from compactlab.sessions.model import Session
from compactlab.strategies.gemini import contents, pending_start
from tests.scripts.engine_oracle import OracleError, Snapshot, require, write_oracle

REPOSITORY = "google-gemini/gemini-cli"
LICENCE = "Apache-2.0"
SIMULATED_WINDOW = 65_536
SRC = "packages/core/src/"
VERBATIM = (
    f"{SRC}context/chatCompressionService.ts",
    f"{SRC}context/toolOutputMaskingService.ts",
    f"{SRC}utils/tokenCalculation.ts",
    f"{SRC}config/models.ts",
    f"{SRC}tools/definitions/base-declarations.ts",
)
# Declarations cut out whole (the rest of their files imports half the CLI).
CUT = {
    f"{SRC}utils/fileUtils.ts": (
        "sanitizeFilenamePart",
        "formatTruncatedToolOutput",
        "TOOL_OUTPUTS_DIR",
        "saveTruncatedToolOutput",
    ),
    f"{SRC}core/turn.ts": ("CompressionStatus",),
    f"{SRC}hooks/types.ts": ("PreCompressTrigger",),
}
CUT_PRELUDE = {f"{SRC}utils/fileUtils.ts": "import path from 'node:path';\nimport * as fsPromises from 'node:fs/promises';\n"}
STUBS = {
    f"{SRC}core/prompts.ts": "export const getCompressionPrompt = (_c: unknown) => '';\n",
    f"{SRC}utils/partUtils.ts": "export const getResponseText = (r: any) => r?.text ?? null;\n",
    f"{SRC}telemetry/loggers.ts": "export const logChatCompression = (..._a: unknown[]) => {};\n"
    "export const logToolOutputMasking = (..._a: unknown[]) => {};\n",
    f"{SRC}telemetry/types.ts": "export const makeChatCompressionEvent = (e: unknown) => e;\n"
    "export const LlmRole = { UTILITY_COMPRESSOR: 'utility_compressor' };\n"
    "export class ToolOutputMaskingEvent { constructor(public e: unknown) {} }\n",
    f"{SRC}utils/debugLogger.ts": "export const debugLogger = { debug: () => {}, warn: () => {}, log: () => {} };\n",
    f"{SRC}utils/environmentContext.ts": "export const getInitialChatHistory = async (_c: unknown, extra: unknown[]) => extra;\n",
    f"{SRC}tools/tool-names.ts": "export * from './definitions/base-declarations.js';\n",
}
DRIVER = Path(__file__).with_name("gemini_cli_driver.ts")


def cut_declaration(source: str, name: str, path: str) -> str:
    """The exported declaration `name` of `source`, whole: from `export ... name` to its closing line."""
    block = rf"^export (?:async )?(?:function|enum|class) {name}\b.*?^\}}\n"
    found = re.search(block, source, re.M | re.S) or re.search(rf"^export const {name}\b[^;]*;\n", source, re.M)
    if found is None:
        raise OracleError(f"{path}: no exported {name} at this commit (the oracle needs it)")
    return found.group(0)


def build(snapshot: Snapshot, into: Path, window: int | None) -> Path:
    """The engine's files and our driver bundled into one script (`window`: a stubbed tokenLimit)."""
    snapshot.copy(VERBATIM, into)
    for path, names in CUT.items():
        source = snapshot.read(path)
        (into / path).parent.mkdir(parents=True, exist_ok=True)
        body = "\n".join(cut_declaration(source, name, path) for name in names)
        (into / path).write_text(CUT_PRELUDE.get(path, "") + body, encoding="utf-8")
    stubs = dict(STUBS)
    if window is None:
        snapshot.copy((f"{SRC}core/tokenLimits.ts",), into)
    else:
        stubs[f"{SRC}core/tokenLimits.ts"] = f"export const tokenLimit = (_m: string) => {window};\n"
    for path, text in stubs.items():
        (into / path).parent.mkdir(parents=True, exist_ok=True)
        (into / path).write_text(text, encoding="utf-8")
    (into / DRIVER.name).write_text(DRIVER.read_text(encoding="utf-8"), encoding="utf-8")
    esbuild = Path(os.environ.get("ESBUILD_DIR", "/tmp/gemini-node")) / "node_modules/.bin/esbuild"
    if not esbuild.exists():
        raise OracleError(f"{esbuild}: esbuild is needed (npm install --prefix {esbuild.parents[2]} esbuild)")
    bundle = into / "oracle.cjs"
    done = subprocess.run(
        [str(esbuild), str(into / DRIVER.name), "--bundle", "--platform=node", "--format=cjs", f"--outfile={bundle}"],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise OracleError(f"esbuild could not bundle the engine's code: {done.stderr.strip()[-2000:]}")
    return bundle


def check_points(session: Session) -> list[dict]:
    """One check before each recorded call: the reply's index, the history's end, the last prompt."""
    points = []
    last_prompt = 0
    for index, message in enumerate(session.messages):
        if message.call is None:
            continue
        end = pending_start(session.messages[:index])
        points.append({"call": index, "end": end, "last_prompt": last_prompt})
        call = message.call
        last_prompt = call.input_tokens + call.cache_read_tokens + call.cache_write_tokens
    return points


def run_engine(bundle: Path, session: Session, points: list[dict]) -> list[dict]:
    node = require("node", "install Node.js 20 or later")
    history, where = contents(session.messages)
    position = {m: i for i, m in enumerate(where)}

    def content_end(end: int) -> int:
        return next((position[m] for m in range(end, len(session.messages)) if m in position), len(where))

    with tempfile.TemporaryDirectory() as scratch:
        given, got = Path(scratch) / "in.json", Path(scratch) / "out.json"
        checks = [{"end": content_end(p["end"]), "lastPrompt": p["last_prompt"]} for p in points]
        given.write_text(json.dumps({"contents": history, "checks": checks}, ensure_ascii=False), encoding="utf-8")
        done = subprocess.run([node, str(bundle), str(given), str(got)], capture_output=True, text=True)
        if done.returncode != 0:
            raise OracleError(f"{session.source_path}: the engine's code failed: {done.stderr.strip()[-2000:]}")
        answers = json.loads(got.read_text(encoding="utf-8"))
    for answer, check in zip(answers, checks):
        split = answer["split"]  # a content index; at the history's end: everything compressed, nothing kept
        answer["first_kept"] = None if split is None or split < 0 or split >= check["end"] else where[split]
    return answers


def decisions(answer: dict) -> dict:
    return {"status": answer["status"], "first_kept": answer["first_kept"], "truncated": answer["truncated"]}


def run(snapshot: Snapshot, sessions: Sequence[Path], out: Path) -> list[Path]:
    written = []
    with tempfile.TemporaryDirectory() as scratch:
        real = build(snapshot, Path(scratch) / "real", None)
        simulated = build(snapshot, Path(scratch) / "simulated", SIMULATED_WINDOW)
        for path in sessions:
            loaded = load_file(path)
            if not loaded:
                raise OracleError(f"{path}: no session in this file")
            session = loaded[0]
            points = check_points(session)
            at_real, at_simulated = run_engine(real, session, points), run_engine(simulated, session, points)
            checks = [
                {**p, "real": decisions(r), "simulated": decisions(s), "masked": r["masked"]}
                for p, r, s in zip(points, at_real, at_simulated)
            ]
            name = f"{path.name.split('.')[0][:60]}"
            written.append(write_oracle(out, "gemini-cli", REPOSITORY, snapshot, LICENCE, name, checks))
    return written
