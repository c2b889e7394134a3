"""Seeded damage to real session files of every format: the inputs `tests/scripts/input_fuzz.py` reads.

`sample_files` gives the samples (small real files of every format compactlab reads, and a canonical
export of the first); `damaged_variants` makes, from one of them, a seeded number of variants per
kind of damage (`KINDS`): cut off, a byte changed, a line deleted or duplicated, a value of another
type (a token count or cost half of the time), deep nesting, and changes that keep the file valid
(a multi-member gzip, CRLF line ends, gzipped, re-indented JSON). Issue 45 added records damaged as
a writer would damage them (`RECORD_KINDS`): a compaction or a message written twice, a tool result
moved before its call, two records swapped, a usage count made null, huge, infinite or negative, and
a UTF-8 byte-order mark (which keeps the file valid); `interleaved` mixes two Claude Code sessions
line by line, `LINK_KIND` is a link out of the dataset folder (both made in tests/scripts/input_fuzz.py).
"""

from __future__ import annotations

import gzip
import json
import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]

# (format, file): small real files of every format read by compactlab. The canonical sample is
# made from the first one by exporting it.
SAMPLES = (
    (
        "claude-code",
        "datasets/claude-code-log/sessions/-src-experiments-claude_p__2b4ed4c0-b905-41de-9238-273db3ec737a.jsonl.gz",
    ),
    ("claude-code", "datasets/m-claude/sessions/91b751c5-d980-47ef-bfae-1daff58e4470.jsonl.gz"),
    ("mini-swe-agent", "tests/fixtures/mini_swe_agent/v1_modelled_django__django-11099.traj.json"),
    ("condenser-log", "datasets/condenser-pairs-gpt5mini/sessions/astropy__astropy-14096_20251014_175213.jsonl.gz"),
    ("codex-rollout", "tests/fixtures/codex/streaming-order-compaction.jsonl"),
    ("codex-rollout", "tests/fixtures/codex/legacy-2025-05.jsonl"),
    ("openai-chat", "tests/fixtures/json_chat/real_openai_gpt4o_mini_image_tool.json"),
    ("anthropic-messages", "tests/fixtures/json_chat/real_anthropic_tool_with_thinking.json"),
    ("pi-session", "datasets/pi-sessions/sessions/compact.jsonl.gz"),
    ("swe-agent", "tests/fixtures/swe_agent/6e44b9__sweagenttestrepo-1c2844.traj"),
    ("gemini-cli", "tests/fixtures/gemini_cli/session-2026-12-02T13-09-b7c1e0f2.jsonl"),
    ("cline-session", "tests/fixtures/cline/session.messages.json"),
    ("opencode", "tests/fixtures/opencode/opencode-1.18.33.db.gz"),
    ("dataclaw", "tests/fixtures/dataclaw/conversations.jsonl.gz"),
)
# Samples exported as canonical files: the first (a plain session) and one with a real compaction.
CANONICAL_OF = (0, 4)
# Values that a damaged or hostile file may hold where another type belongs.
HOSTILE = ("5", True, False, 1.5, -1, 1e30, math.nan, math.inf, -math.inf, [], {}, ["user"], 2**63, '=HYPERLINK("x")')
COUNT_HINTS = ("tokens", "cost", "byte_size", "at_message", "preTokens", "summary")
RECORD_KINDS = (
    "duplicate_compaction",
    "duplicate_message",
    "result_before_call",
    "reorder",
    "usage_null",
    "usage_huge",
    "usage_infinite",
    "usage_negative",
    "bom",
)
KINDS = ("truncate", "flip", "delete_line", "duplicate_line", "retype", "nest", "valid", *RECORD_KINDS)
INTERLEAVE_KIND = "interleaved"
LINK_KIND = "link_out"
# What each usage kind writes over one token count of a recorded call: null, a count no context holds
# (2^53, where floats stop holding every integer; 10^9, a thousand times the largest real prompt), infinity.
USAGE_VALUES = {
    "usage_null": ("null",),
    "usage_huge": (str(2**53), str(10**9)),
    "usage_infinite": ("Infinity",),
    "usage_negative": ("-1", "-1000"),
}


@dataclass(frozen=True)
class Damaged:
    name: str  # file name, its suffix tells gzip / JSON / JSONL
    data: bytes
    kind: str
    what: str


def sample_files(workdir: Path) -> list[tuple[str, str, bytes]]:
    """(format, file name, uncompressed bytes) of every sample, the canonical one included."""
    from compactlab.sessions.importers import load_file
    from compactlab.sessions.importers.canonical import write_canonical

    out = []
    for fmt, relative in SAMPLES:
        path = REPO / relative
        data = path.read_bytes()
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        out.append((fmt, path.name.removesuffix(".gz"), data))
    for number in CANONICAL_OF:
        name = "canonical-sample.jsonl" if number == 0 else f"canonical-sample-{number}.jsonl"
        canonical = write_canonical(load_file(REPO / SAMPLES[number][1]), workdir / name)
        out.append(("canonical", canonical.name, canonical.read_bytes()))
    return out


def damaged_variants(name: str, data: bytes, per_kind: int, seed: int) -> list[Damaged]:
    rng = random.Random(f"{seed}:{name}")
    out: list[Damaged] = []
    for kind in KINDS:
        for n in range(per_kind):
            made = _mutate(kind, name, data, rng, n)
            if made is not None:
                out.append(made)
    return out


def _mutate(kind: str, name: str, data: bytes, rng: random.Random, n: int) -> Damaged | None:
    lines = data.split(b"\n")
    filled = [i for i, line in enumerate(lines) if line.strip()]
    if kind == "truncate":
        cuts = [i for i in range(1, len(data) - 1) if data[i - 1 : i + 1].strip(b"\n") == data[i - 1 : i + 1]]
        cut = rng.choice(cuts)
        return Damaged(name, data[:cut], kind, f"cut at byte {cut}")
    if kind == "flip":
        at = rng.randrange(len(data))
        flipped = bytearray(data)
        flipped[at] ^= rng.randrange(1, 256)
        return Damaged(name, bytes(flipped), kind, f"byte {at} changed")
    if kind == "delete_line":
        i = rng.choice(filled)
        return Damaged(name, b"\n".join(lines[:i] + lines[i + 1 :]), kind, f"line {i + 1} deleted")
    if kind == "duplicate_line":
        i = rng.choice(filled)
        return Damaged(name, b"\n".join(lines[: i + 1] + lines[i:]), kind, f"line {i + 1} duplicated")
    if kind == "retype":
        return _retype(name, data, lines, filled, rng)
    if kind == "nest":
        depth = rng.choice((1_000, 100_000))
        return _replace_value(name, data, lines, filled, rng, "[" * depth + "]" * depth, "nest", f"{depth} nested arrays")
    if kind == "valid":
        return _still_valid(name, data, n)
    if kind == "bom" and data.startswith(b"SQLite format 3\0"):
        return None  # a byte-order mark belongs to text: before a database's header it is damage, not a valid file
    if kind in RECORD_KINDS:
        return _record_damage(kind, name, data, rng, n)
    raise ValueError(kind)


def _is_document(name: str) -> bool:
    return name.endswith((".json", ".traj"))


def _retype(name: str, data: bytes, lines: list[bytes], filled: list[int], rng: random.Random) -> Damaged | None:
    value = rng.choice(HOSTILE)
    # A text made another text is no change of type: "5" is a valid model name, not damage to notice.
    retyped = (lambda old: not isinstance(old, str)) if isinstance(value, str) else None
    return _replace_value(
        name, data, lines, filled, rng, json.dumps(value), "retype", f"a value made {json.dumps(value)[:30]}", retyped
    )


def _replace_value(
    name: str,
    data: bytes,
    lines: list[bytes],
    filled: list[int],
    rng: random.Random,
    text: str,
    kind: str,
    what: str,
    replaceable: Callable[[object], bool] | None = None,
) -> Damaged | None:
    """Replace one value (a token count or cost when there is one, half of the time; one that
    `replaceable` accepts, when given) by `text`."""
    marker = "\x00REPLACED\x00"
    if _is_document(name):
        doc, where = json.loads(data), "the document"
        edited = _edit(doc, rng, marker, replaceable)
        if edited is None:
            return None
        out = json.dumps(edited, indent=1).replace(json.dumps(marker), text).encode()
        return Damaged(name, out, kind, f"{what} at {edited_at(edited, marker)} of {where}")
    for _ in range(20):
        i = rng.choice(filled)
        try:
            record = json.loads(lines[i])
        except ValueError:
            continue
        edited = _edit(record, rng, marker, replaceable)
        if edited is None:
            continue
        at = edited_at(edited, marker)
        line = json.dumps(edited).replace(json.dumps(marker), text).encode()
        return Damaged(name, b"\n".join(lines[:i] + [line] + lines[i + 1 :]), kind, f"{what} at line {i + 1} {at}")
    return None


def _edit(value: object, rng: random.Random, marker: str, replaceable: Callable[[object], bool] | None = None) -> object | None:
    paths = [path for path in _paths(value, ()) if replaceable is None or replaceable(_at(value, path))]
    if not paths:
        return None
    counts = [p for p in paths if p and isinstance(p[-1], str) and any(h in p[-1] for h in COUNT_HINTS)]
    path = rng.choice(counts if counts and rng.random() < 0.5 else paths)
    if not path:
        return marker
    copy = json.loads(json.dumps(value))
    holder = copy
    for key in path[:-1]:
        holder = holder[key]
    holder[path[-1]] = marker
    return copy


def _at(value: Any, path: tuple) -> object:
    for key in path:
        value = value[key]
    return value


def _paths(value: object, prefix: tuple):
    if prefix:
        yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*prefix, index))


def edited_at(value: object, marker: str, prefix: str = "") -> str:
    if value == marker:
        return prefix or "(root)"
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        found = edited_at(item, marker, f"{prefix}.{key}" if isinstance(key, str) else f"{prefix}[{key}]")
        if found:
            return found
    return ""


def _still_valid(name: str, data: bytes, n: int) -> Damaged | None:
    """Changes that keep the file what it was (the result must not change)."""
    variants = [
        (name + ".gz", _two_members(data), "gzip in two members (what `cat a.gz b.gz` makes)"),
        (name, data.replace(b"\n", b"\r\n"), "CRLF line ends"),
        (name + ".gz", gzip.compress(data, mtime=0), "gzipped"),
    ]
    if _is_document(name):
        variants.append((name, json.dumps(json.loads(data), indent=4).encode(), "re-indented"))
    if n >= len(variants):
        return None
    file_name, out, what = variants[n]
    return Damaged(file_name, out, "valid", what)


def _two_members(data: bytes) -> bytes:
    half = data.rfind(b"\n", 0, len(data) // 2) + 1 or len(data) // 2
    return gzip.compress(data[:half], mtime=0) + gzip.compress(data[half:], mtime=0)


# --- records damaged as a writer damages them (issue 45) ---------------------------------------------


def _record_damage(kind: str, name: str, data: bytes, rng: random.Random, n: int) -> Damaged | None:
    if kind == "bom":
        variants = [(name, b"\xef\xbb\xbf" + data), (name + ".gz", gzip.compress(b"\xef\xbb\xbf" + data, mtime=0))]
        return Damaged(variants[n][0], variants[n][1], kind, "a UTF-8 byte-order mark before the first byte") if n < 2 else None
    if kind.startswith("usage_"):
        return _usage(kind, name, data, rng)
    if _is_document(name):
        return None  # the record kinds below need records in lines
    lines = data.split(b"\n")
    parsed = [_parsed(line) for line in lines]
    if kind == "duplicate_compaction":
        found = [i for i, r in enumerate(parsed) if _is_compaction(r)]
        if not found or n >= len(found):
            return None
        i = found[n]
        return Damaged(name, b"\n".join(lines[: i + 1] + lines[i:]), kind, f"the compaction of line {i + 1} written twice")
    if kind == "duplicate_message":
        found = [i for i, r in enumerate(parsed) if _is_message(r)]
        if not found:
            return None
        i = rng.choice(found)
        return Damaged(name, b"\n".join(lines[: i + 1] + lines[i:]), kind, f"the message of line {i + 1} written twice")
    if kind == "result_before_call":
        pairs = _call_result_pairs(parsed)
        if not pairs:
            return None
        call, result = rng.choice(pairs)
        moved = lines[:call] + [lines[result]] + lines[call:result] + lines[result + 1 :]
        return Damaged(
            name, b"\n".join(moved), kind, f"the tool result of line {result + 1} moved before its call (line {call + 1})"
        )
    if kind == "reorder":
        filled = [i for i, r in enumerate(parsed) if r is not None]
        neighbours = [(a, b) for a, b in zip(filled, filled[1:]) if lines[a] != lines[b] and a > 0]  # the header stays first
        if not neighbours:
            return None
        a, b = rng.choice(neighbours)
        swapped = list(lines)
        swapped[a], swapped[b] = lines[b], lines[a]
        return Damaged(name, b"\n".join(swapped), kind, f"lines {a + 1} and {b + 1} swapped")
    raise ValueError(kind)


def _parsed(line: bytes) -> dict | None:
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _is_compaction(record: dict | None) -> bool:
    """A compaction record: Codex `compacted`, pi `compaction`, canonical `compaction`, Claude Code's boundary."""
    if record is None:
        return False
    return record.get("type") in ("compacted", "compaction") or record.get("subtype") == "compact_boundary"


def _is_message(record: dict | None) -> bool:
    if record is None:
        return False
    payload = record.get("payload")
    return (
        record.get("type") in ("user", "assistant", "message")
        or (record.get("type") == "response_item" and isinstance(payload, dict) and payload.get("type") == "message")
        or ("messages" in record and "step_count" in record)  # a condenser-log step
    )


CALL_ID_KEYS = ("tool_use_id", "call_id", "toolCallId", "id")


def _call_result_pairs(parsed: list[dict | None]) -> list[tuple[int, int]]:
    """(line of a tool call, line of its result), found by the call's id: the first line that names
    an id holds the call, the next later one its result."""
    first: dict[str, int] = {}
    pairs = []
    for i, record in enumerate(parsed):
        if record is None:
            continue
        named = {v for path, v in _leaves(record) if path and path[-1] in CALL_ID_KEYS and isinstance(v, str)}
        for ident in named:
            if ident in first and first[ident] != i and first[ident] > 0:
                pairs.append((first[ident], i))
                first[ident] = -1  # one pair per id
            elif ident not in first:
                first[ident] = i
    return [(a, b) for a, b in pairs if a >= 0]


def _leaves(value: object):
    """(path, value) of every value that holds no other (the paths of `_paths` that end in one)."""
    for path in _paths(value, ()):
        leaf = _at(value, path)
        if not isinstance(leaf, (dict, list)):
            yield path, leaf


def _usage_paths(value: object) -> list[tuple]:
    """Paths to the token counts of recorded calls: integers under a `usage` or `call` object."""
    return [
        path
        for path, leaf in _leaves(value)
        if type(leaf) is int
        and path
        and isinstance(path[-1], str)
        and any(isinstance(k, str) and ("usage" in k.lower() or k == "call") for k in path[:-1])
        and ("token" in path[-1].lower() or path[-1] in ("input", "output", "cacheRead", "cacheWrite"))
    ]


def _usage(kind: str, name: str, data: bytes, rng: random.Random) -> Damaged | None:
    text = rng.choice(USAGE_VALUES[kind])
    marker = "\x00REPLACED\x00"

    def put(value: object, path: tuple) -> str:
        copy = json.loads(json.dumps(value))
        holder = copy
        for key in path[:-1]:
            holder = holder[key]
        holder[path[-1]] = marker
        return json.dumps(copy).replace(json.dumps(marker), text)

    if _is_document(name):
        doc = json.loads(data)
        paths = _usage_paths(doc)
        if not paths:
            return None
        path = rng.choice(paths)
        return Damaged(name, put(doc, path).encode(), kind, f"{'.'.join(map(str, path))} made {text}")
    lines = data.split(b"\n")
    found = [(i, path) for i, line in enumerate(lines) if (r := _parsed(line)) is not None for path in _usage_paths(r)]
    if not found:
        return None
    i, path = rng.choice(found)
    line = put(json.loads(lines[i]), path).encode()
    return Damaged(
        name, b"\n".join(lines[:i] + [line] + lines[i + 1 :]), kind, f"line {i + 1} {'.'.join(map(str, path))} made {text}"
    )


def interleaved(first: bytes, second: bytes) -> bytes:
    """Two JSONL files mixed line by line (what two writers appending to one file make)."""
    a = [line for line in first.split(b"\n") if line.strip()]
    b = [line for line in second.split(b"\n") if line.strip()]
    mixed: list[bytes] = []
    for i in range(max(len(a), len(b))):
        mixed += a[i : i + 1] + b[i : i + 1]
    return b"\n".join(mixed) + b"\n"
