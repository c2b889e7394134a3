"""pi's own compaction functions run on sessions: the oracle the pi preset is tested against (issue 42).

    python -m tests.scripts.engine_oracle pi --engine-source GIT_DIR SESSION ...

From the snapshot (badlogic/pi-mono, MIT) these files are copied verbatim into a scratch folder:
`packages/coding-agent/src/core/compaction/compaction.ts`, `.../compaction/utils.ts` and
`.../core/messages.ts`. Their only runtime import, `@mariozechner/pi-ai` (`completeSimple`, the model
call of `generateSummary`), is stubbed with a function that throws: no model is called. The rest of
their imports are types, which esbuild drops. `pi_driver.mjs` (compactlab's code, beside this module)
is bundled with them by esbuild and run with node.

Needs node (v18+) and esbuild: `npm install --prefix /tmp/pi-node esbuild`, then either put
`/tmp/pi-node/node_modules/.bin` on PATH or set COMPACTLAB_ESBUILD to the esbuild binary.

A session (any format compactlab reads) becomes pi's `AgentMessage`s one for one, so an index means
the same message on both sides:
- a user message (not a tool result) -> `{role: "user", content: [text and image blocks]}`; a
  system or instruction message too (pi has none; the importer makes `bashExecution` and `custom`
  messages user text, so pi's own `bashExecution` estimate, command + output, is not what runs);
- an assistant message -> `{role: "assistant", content: [text | thinking | toolCall], usage,
  stopReason}`: a tool call's `arguments` parsed from its JSON text (pi's object, which
  `estimateTokens` counts with `JSON.stringify`'s spacing); `usage` from the recorded call (input,
  output, cacheRead, cacheWrite, totalTokens their sum); a reply without a call is "aborted";
- a tool result -> `{role: "toolResult", toolCallId, content: [one text block, the images]}` (the
  importer joined a result's text blocks with newlines: one character more per extra block);
- a summary written by a compaction -> `{role: "compactionSummary", summary}`.
pi's SessionManager entries are then one `message` entry per message, ids `m<index>`.

The checks of each oracle, in order:
- `{"kind": "estimates", "tokens": [...]}`: `estimateTokens` of every message;
- `{"kind": "threshold", "window", "compacts_above"}` per window (the real 200,000 of the bundled
  sessions' Claude models, and 64,000 simulated): the largest context `shouldCompact` lets through;
- `{"kind": "prompt", "at", "calls", "reply", "context_tokens", "compacts", ...cut}`: pi's own check
  points (agent-session.ts `_checkCompaction`, called at `agent_end` and before the next prompt, never
  between the calls of a tool loop): before each user message that follows a reply, and at the end.
  `at`: the context is `messages[:at]`; `calls`: recorded calls before it; `reply`: the run's last
  reply, whose usage `calculateContextTokens` counts (`estimateContextTokens` for an errored one);
  `compacts`: window -> `shouldCompact`;
- `{"kind": "call", "at", "calls", ...cut}`: before every recorded call (where compactlab's replay
  asks a preset), the cut alone;
- `cut`: `prepareCompaction` of the path `messages[:at]` with DEFAULT_COMPACTION_SETTINGS: `first`
  (the first kept message, `firstKeptEntryId`), `split` (isSplitTurn), `summarized`
  (messagesToSummarize), `prefix` (turnPrefixMessages), `kept_tokens` (estimateTokens summed over
  `messages[first:at]`), `tokens_before`.
The history is the recorded one, uncompacted (open loop): every check sees `messages[:at]`.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from compactlab.sessions.importers import load_file
from compactlab.sessions.messages import is_summary, summary_text
from compactlab.sessions.model import (
    ImagePart,
    Message,
    Session,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    parsed_arguments,
)
from tests.scripts.engine_oracle import OracleError, Snapshot, require, write_oracle

REPOSITORY = "badlogic/pi-mono"
LICENCE = "MIT (Copyright (c) 2025 Mario Zechner)"
CORE = "packages/coding-agent/src/core/"
FILES = (f"{CORE}compaction/compaction.ts", f"{CORE}compaction/utils.ts", f"{CORE}messages.ts")
WINDOWS = (200_000, 64_000)
DRIVER = Path(__file__).with_name("pi_driver.mjs")
# The one runtime import of the copied files: the model call, which the oracle never makes.
PI_AI_STUB = """export async function completeSimple() {
\tthrow new Error("compactlab's pi oracle calls no model");
}
"""


def run(snapshot: Snapshot, sessions: Sequence[Path], out: Path) -> list[Path]:
    node = require("node", "install Node.js 18 or later")
    esbuild = os.environ.get("COMPACTLAB_ESBUILD") or require(
        "esbuild", "npm install --prefix /tmp/pi-node esbuild; put /tmp/pi-node/node_modules/.bin on PATH"
    )
    loaded = [(path, _load(path)) for path in sessions]
    document = {"windows": list(WINDOWS), "sessions": [{"name": s.id, "messages": pi_messages(s)} for _, s in loaded]}
    with tempfile.TemporaryDirectory(prefix="compactlab-pi-") as scratch:
        root = Path(scratch)
        snapshot.copy(FILES, root)
        stub = root / "stubs" / "pi-ai.mjs"
        stub.parent.mkdir()
        stub.write_text(PI_AI_STUB, encoding="utf-8")
        driver = root / CORE.removesuffix("src/core/") / DRIVER.name
        driver.write_text(DRIVER.read_text(encoding="utf-8"), encoding="utf-8")
        bundle = root / "bundle.mjs"
        _run(
            [esbuild, str(driver), "--bundle", "--platform=node", "--format=esm", f"--outfile={bundle}",
             f"--alias:@mariozechner/pi-ai={stub}", "--log-level=warning"],
            "esbuild",
        )  # fmt: skip
        output = _run([node, str(bundle)], "node", stdin=json.dumps(document))
    results = json.loads(output)["sessions"]
    written = []
    for (path, _session), result in zip(loaded, results, strict=True):
        written.append(write_oracle(out, "pi", REPOSITORY, snapshot, LICENCE, path.name, result["checks"]))
    return written


def _load(path: Path) -> Session:
    try:
        return load_file(path)[0]
    except (OSError, ValueError) as exc:
        raise OracleError(f"{path}: not a session compactlab reads ({exc})") from exc


def _run(command: list[str], what: str, stdin: str | None = None) -> str:
    done = subprocess.run(command, input=stdin, capture_output=True, text=True)
    if done.returncode != 0:
        raise OracleError(f"{what} failed on pi's copied code: {done.stderr.strip()[-2000:]}")
    return done.stdout


def pi_messages(session: Session) -> list[dict]:
    """The session's messages as pi's AgentMessages, one for one (the mapping: the module's docstring)."""
    return [pi_message(m) for m in session.messages]


def pi_message(message: Message) -> dict:
    if is_summary(message):
        return {"role": "compactionSummary", "summary": summary_text(message), "tokensBefore": 0, "timestamp": 0}
    if message.role == "assistant":
        return _assistant(message)
    results = [p for p in message.parts if isinstance(p, ToolResultPart)]
    if results:
        [result] = results  # the importers give each tool result its own message
        content = [{"type": "text", "text": result.content}, *_images(message)]
        return {"role": "toolResult", "toolCallId": result.call_id, "toolName": "", "content": content,
                "isError": result.is_error, "timestamp": 0}  # fmt: skip
    content = [{"type": "text", "text": p.text} for p in message.parts if isinstance(p, (TextPart, ThinkingPart))]
    return {"role": "user", "content": [*content, *_images(message)], "timestamp": 0}


def _assistant(message: Message) -> dict:
    content: list[dict] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            content.append({"type": "text", "text": part.text})
        elif isinstance(part, ThinkingPart):
            content.append({"type": "thinking", "thinking": part.text})
        elif isinstance(part, ToolCallPart):
            content.append({"type": "toolCall", "id": part.id, "name": part.name, "arguments": parsed_arguments(part.arguments)})
    call = message.call
    usage = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0}
    if call is not None:
        usage = {"input": call.input_tokens, "output": call.output_tokens, "cacheRead": call.cache_read_tokens,
                 "cacheWrite": call.cache_write_tokens, "totalTokens": call.prompt_tokens + call.output_tokens}  # fmt: skip
    calls_tools = any(isinstance(p, ToolCallPart) for p in message.parts)
    stop = "aborted" if call is None else "toolUse" if calls_tools else "stop"
    return {"role": "assistant", "content": content, "usage": usage, "stopReason": stop,
            "provider": "", "model": call.model if call else "", "timestamp": 0}  # fmt: skip


def _images(message: Message) -> list[dict]:
    return [{"type": "image", "data": "", "mimeType": p.media_type} for p in message.parts if isinstance(p, ImagePart)]
