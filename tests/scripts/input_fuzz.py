"""Seeded damage to real transcript files, and what compactlab does with each damaged file.

Shared by `tests/transcripts/test_input_fuzz.py` (a small, fixed share in CI) and by running this module as a
script, which measures the reliability table of issue 16 for inputs:

    .venv/bin/python -m tests.scripts.input_fuzz [--per-kind N] [--seed S]

prints inputs tried, command runs, clean errors, tracebacks (distinct and total) and runs with
silently wrong values. It uses only `load_file`, `load_inputs`, `write_canonical` and the CLI's
`main`, so it measures an older checkout just as well (copy it there and run it from that folder).

Each damaged input is read four ways: strictly and leniently through the library, and through
`compactlab inspect` and `compactlab inspect --lenient`. A run ends in a clean error (a
`TranscriptError`, or the CLI's `compactlab: error:` line and exit status 2), a result, or a
traceback (any other exception, or an error that calls itself an internal error). A result is
*silently wrong* when nothing was reported (no error, no skipped record) but it breaks an
invariant (token counts are integers in [0, 2^53), costs finite and non-negative, ids unique), or
when the damage is one that must be noticed (a changed type of a value, a duplicated line, a
cut-off file, deep nesting) and the LLM calls, the message counts or the ids differ from the
undamaged file's; or when the change keeps the file valid (a multi-member gzip, CRLF line ends,
re-indented JSON) and the result is not the undamaged file's.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import io
import json
import math
import random
import shutil
import sys
import tempfile
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
LIMIT = 2**53

# (format, file): small real files of every format read by compactlab. The canonical sample is
# made from the first one by exporting it.
SAMPLES = (
    (
        "claude-code",
        "datasets/claude-code-log/transcripts/-src-experiments-claude_p__2b4ed4c0-b905-41de-9238-273db3ec737a.jsonl.gz",
    ),
    ("claude-code", "datasets/m-claude/transcripts/91b751c5-d980-47ef-bfae-1daff58e4470.jsonl.gz"),
    ("mini-swe-agent", "tests/fixtures/mini_swe_agent/v1_modelled_django__django-11099.traj.json"),
    ("condenser-log", "datasets/condenser-pairs-gpt5mini/transcripts/astropy__astropy-14096_20251014_175213.jsonl.gz"),
    ("codex-rollout", "tests/fixtures/codex/streaming-order-compaction.jsonl"),
    ("codex-rollout", "tests/fixtures/codex/legacy-2025-05.jsonl"),
    ("openai-chat", "tests/fixtures/json_chat/real_openai_gpt4o_mini_image_tool.json"),
    ("anthropic-messages", "tests/fixtures/json_chat/real_anthropic_tool_with_thinking.json"),
)
# Values that a damaged or hostile file may hold where another type belongs.
HOSTILE = ("5", True, False, 1.5, -1, 1e30, math.nan, math.inf, -math.inf, [], {}, ["user"], 2**63, '=HYPERLINK("x")')
COUNT_HINTS = ("tokens", "cost", "byte_size", "at_message", "preTokens", "summary")
KINDS = ("truncate", "flip", "delete_line", "duplicate_line", "retype", "nest", "valid")
# Kinds whose damage compactlab must notice (an error or a counted skip) when it changes the result.
MUST_NOTICE = ("truncate", "duplicate_line", "retype", "nest")


@dataclass(frozen=True)
class Damaged:
    name: str  # file name, its suffix tells gzip / JSON / JSONL
    data: bytes
    kind: str
    what: str


@dataclass
class Tally:
    inputs: int = 0
    runs: int = 0
    clean_errors: int = 0
    counted_skips: int = 0
    tracebacks: Counter = field(default_factory=Counter)  # "Type: where" -> runs
    silent: Counter = field(default_factory=Counter)  # input description -> runs
    silent_inputs: set = field(default_factory=set)

    def table(self) -> dict:
        return {
            "inputs tried": self.inputs,
            "command runs": self.runs,
            "clean errors": self.clean_errors,
            "runs with counted skips": self.counted_skips,
            "tracebacks (runs)": sum(self.tracebacks.values()),
            "distinct tracebacks": len(self.tracebacks),
            "runs with silently wrong values": sum(self.silent.values()),
            "inputs with silently wrong values": len(self.silent_inputs),
        }


# --- making damaged files -------------------------------------------------------------------


def sample_files(workdir: Path) -> list[tuple[str, str, bytes]]:
    """(format, file name, uncompressed bytes) of every sample, the canonical one included."""
    from compactlab.transcripts.importers import load_file
    from compactlab.transcripts.importers.canonical import write_canonical

    out = []
    for fmt, relative in SAMPLES:
        path = REPO / relative
        data = path.read_bytes()
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        out.append((fmt, path.name.removesuffix(".gz"), data))
    canonical = write_canonical(load_file(REPO / SAMPLES[0][1]), workdir / "canonical-sample.jsonl")
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
    raise ValueError(kind)


def _is_document(name: str) -> bool:
    return name.endswith(".json")


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


# --- reading them ----------------------------------------------------------------------------


def fingerprint(transcripts) -> tuple:
    """What must not change silently: ids, message counts and every recorded LLM call."""
    return tuple(
        (
            t.id,
            len(t.messages),
            tuple(
                (c.model, c.input_tokens, c.cache_read_tokens, c.cache_write_tokens, c.output_tokens, c.cost_usd) for c in t.calls
            ),
        )
        for t in transcripts
    )


def broken_invariant(transcripts) -> str | None:
    ids = [t.id for t in transcripts]
    if len(set(ids)) != len(ids):
        return "transcript ids not unique"
    for t in transcripts:
        try:
            t.id.encode("utf-8")
        except UnicodeEncodeError:
            return "transcript id is not valid text (it cannot be written to a UTF-8 file)"
    for t in transcripts:
        for c in t.calls:
            for value in (c.input_tokens, c.cache_read_tokens, c.cache_write_tokens, c.output_tokens):
                if type(value) is not int or not 0 <= value < LIMIT:
                    return f"token count {value!r}"
            if c.cost_usd is not None and (type(c.cost_usd) is not float or not 0 <= c.cost_usd < LIMIT):
                return f"cost {c.cost_usd!r}"
    return None


def read_library(path: Path, lenient: bool):
    """('error', message) | ('ok', transcripts) | ('traceback', key)."""
    from compactlab.transcripts.importers import load_file
    from compactlab.transcripts.source import TranscriptError

    try:
        transcripts = load_file(path, lenient=lenient)
        fingerprint(transcripts)
        return "ok", transcripts
    except TranscriptError as exc:
        if "internal error" in str(exc):
            return "traceback", f"internal error: {str(exc).split('internal error', 1)[1][:80]}"
        return "error", str(exc)
    except Exception as exc:  # noqa: BLE001  (what the fuzz test exists to find)
        return "traceback", _where(exc)


def read_cli(arguments: list[str]):
    """('error', text) | ('ok', text) | ('traceback', key) for `compactlab ARGUMENTS`."""
    from compactlab.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(arguments)
    except SystemExit as exc:
        status = exc.code
    except Exception as exc:  # noqa: BLE001
        return "traceback", _where(exc)
    text = err.getvalue()
    if "internal error" in text or "Traceback" in text:
        return "traceback", "internal error: " + text.split("internal error", 1)[-1][:80]
    if status == 0:
        return "ok", out.getvalue()
    if status == 2 and "compactlab: error:" in text:
        return "error", text
    return "traceback", f"exit status {status}: {text[:80]}"


def _where(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    inner = next((f for f in reversed(frames) if "/bench/" in f.filename), frames[-1] if frames else None)
    place = f"{Path(inner.filename).name}:{inner.name}" if inner else "?"
    return f"{type(exc).__name__} in {place}"


def check_input(path: Path, kind: str, what: str, original: tuple | None, tally: Tally, label: str, cli: bool = True) -> None:
    tally.inputs += 1
    for lenient in (False, True):
        tally.runs += 1
        outcome, value = read_library(path, lenient)
        if outcome == "traceback":
            tally.tracebacks[value] += 1
        elif outcome == "error":
            tally.clean_errors += 1
        elif any(t.skipped for t in value):
            tally.counted_skips += 1
            if broken_invariant(value):
                tally.silent[f"{label}: {broken_invariant(value)}"] += 1
                tally.silent_inputs.add(label)
        else:
            problem = broken_invariant(value)
            changed = original is not None and fingerprint(value) != original
            if problem is None and changed and (kind in MUST_NOTICE or kind == "valid"):
                problem = "result changed with nothing reported"
            if problem:
                tally.silent[f"{label}: {problem}"] += 1
                tally.silent_inputs.add(label)
    for flags in ([], ["--lenient"]) if cli else ():
        tally.runs += 1
        outcome, value = read_cli(["inspect", *flags, str(path)])
        if outcome == "traceback":
            tally.tracebacks[value] += 1
        elif outcome == "error":
            tally.clean_errors += 1


def fuzz(per_kind: int, seed: int, workdir: Path, tally: Tally | None = None, cli: bool = True) -> Tally:
    from compactlab.transcripts.importers import load_file

    tally = tally or Tally()
    for fmt, name, data in sample_files(workdir):
        original_path = workdir / name
        original_path.write_bytes(data)
        original = fingerprint(load_file(original_path))
        for number, damaged in enumerate(damaged_variants(name, data, per_kind, seed)):
            folder = workdir / f"{fmt}-{number}"
            folder.mkdir()
            path = folder / damaged.name
            path.write_bytes(damaged.data)
            check_input(path, damaged.kind, damaged.what, original, tally, f"{fmt} {name}: {damaged.kind} ({damaged.what})", cli)
            shutil.rmtree(folder)
    return tally


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-kind", type=int, default=12, help="damaged variants per kind of damage and sample file")
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument("--show", type=int, default=25, help="list this many tracebacks and silent inputs")
    parser.add_argument("--cases", action="store_true", help="only issue 32's run-level cases (tests/input_cases.py)")
    args = parser.parse_args(argv)
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 1000))
    with tempfile.TemporaryDirectory(prefix="compactlab-cases-") as tmp:
        from tests.input_cases import print_cases

        print("run-level input cases (tests/input_cases.py):")
        tracebacks, wrong = print_cases(Path(tmp))
        print(f"cases: tracebacks {tracebacks}, not as wanted {wrong}")
    if args.cases:
        return 0
    with tempfile.TemporaryDirectory(prefix="compactlab-fuzz-") as tmp:
        tally = fuzz(args.per_kind, args.seed, Path(tmp))
        try:
            from tests.listed_inputs import check_listed
        except ImportError:
            check_listed = None
        if check_listed is not None:
            check_listed(Path(tmp) / "listed", tally)
    for key, value in tally.table().items():
        print(f"{key:36} {value}")
    for key, count in tally.tracebacks.most_common(args.show):
        print(f"  traceback ×{count}: {key}")
    for key, count in sorted(tally.silent.items())[: args.show]:
        print(f"  silent ×{count}: {key}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
