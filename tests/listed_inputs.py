"""The damaged inputs issue 16 lists one by one, each made from a real file.

`listed_cases(folder)` writes them and returns `Case`s: the command-line inputs to read, and, when
the input is valid after all (a multi-member gzip, a non-UTF-8 file name, two files of one name),
what the undamaged result is, so that a changed result counts as silently wrong. Every other case
must end in a clean error or a counted skip. `tests/scripts/input_fuzz.py` reads them all through the
library and the CLI; `tests/sessions/test_input_fuzz.py` asserts each one's outcome.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CLAUDE = REPO / "datasets/claude-code-log/sessions/-src-experiments-claude_p__2b4ed4c0-b905-41de-9238-273db3ec737a.jsonl.gz"
OPENAI = REPO / "tests/fixtures/json_chat/real_openai_gpt4o_mini_image_tool.json"
CODEX = REPO / "tests/fixtures/codex/rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-940e6b99603c.jsonl"
CONDENSER = REPO / "datasets/condenser-pairs-gpt5mini/sessions/astropy__astropy-14096_20251014_175213.jsonl.gz"


@dataclass(frozen=True)
class Case:
    name: str
    inputs: tuple[str, ...]
    # For valid inputs: the fingerprint (see input_fuzz.fingerprint) the result must have, ids aside
    # (they must be unique and printable, which `broken_invariant` checks).
    expected: tuple | None = None
    # Made around the reads (an unreadable folder is simulated: the tests run as root).
    around: Callable[[], contextlib.AbstractContextManager] | None = None


def claude_lines() -> list[dict]:
    return [json.loads(line) for line in gzip.decompress(CLAUDE.read_bytes()).splitlines() if line.strip()]


def jsonl(records: list) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


def _assistant_indexes(lines: list[dict]) -> list[int]:
    return [i for i, r in enumerate(lines) if r.get("type") == "assistant" and "usage" in r.get("message", {})]


def listed_cases(folder: Path) -> Iterator[Case]:
    from compactlab.sessions.importers import load_file
    from compactlab.sessions.importers.canonical import write_canonical
    from tests.scripts.input_fuzz import fingerprint

    folder.mkdir(parents=True, exist_ok=True)

    def file(name: str, data: bytes) -> str:
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return str(path)

    lines = claude_lines()
    first = _assistant_indexes(lines)[0]

    nested = [dict(r) for r in lines]
    nested[first] = "NESTED"
    yield Case("100,000 nested [", (file("nested.jsonl", jsonl(nested).replace(b'"NESTED"', b"[" * 100_000 + b"]" * 100_000)),))

    openai = json.loads(OPENAI.read_text())
    listed = json.loads(json.dumps(openai))
    listed["messages"][0]["role"] = ["user"]
    yield Case('"role": ["user"]', (file("role-list.json", json.dumps(listed).encode()),))
    for label, value in (
        ("Infinity", "Infinity"),
        ("NaN", "NaN"),
        ("10^30", "1e30"),
        ("-1", "-1"),
        ("1.5", "1.5"),
        ("true", "true"),
    ):
        changed = json.loads(json.dumps(openai))
        usage = (
            next(m for m in changed["messages"] if m.get("usage"))["usage"]
            if any(isinstance(m, dict) and m.get("usage") for m in changed["messages"])
            else changed["usage"][0]
        )
        usage["prompt_tokens"] = "VALUE"
        yield Case(
            f"openai prompt_tokens {label}",
            (file(f"openai-{label}.json", json.dumps(changed).replace('"VALUE"', value).encode()),),
        )

    for label, value in (("true", True), ("10^30", 10**30), ("-5", -5), ("list", [])):
        changed = [json.loads(json.dumps(r)) for r in lines]
        changed[first]["message"]["usage"]["output_tokens"] = value
        yield Case(f"claude-code output_tokens {label}", (file(f"claude-{label}.jsonl", jsonl(changed)),))
    for label, value in (("Infinity", "Infinity"), ("NaN", "NaN")):
        changed = [json.loads(json.dumps(r)) for r in lines]
        changed[first]["message"]["usage"]["input_tokens"] = "VALUE"
        yield Case(
            f"claude-code input_tokens {label}",
            (file(f"claude-{label}.jsonl", jsonl(changed).replace(b'"VALUE"', value.encode())),),
        )

    canonical = write_canonical(load_file(CLAUDE), folder / "canonical-source.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in canonical]
    with_call = next(i for i, r in enumerate(records) if r.get("call"))
    for number, (label, edit) in enumerate(
        (
            ('cache_write_tokens "5"', lambda r: r["call"].__setitem__("cache_write_tokens", "5")),
            ("cost_usd NaN", lambda r: r["call"].__setitem__("cost_usd", float("nan"))),
            ("text part a number", lambda r: r["parts"][0].__setitem__("text", 5)),
        )
    ):
        changed = [json.loads(json.dumps(r)) for r in records]
        edit(changed[with_call])
        yield Case(f"canonical {label}", (file(f"canonical-{number}.jsonl", "\n".join(json.dumps(r) for r in changed).encode()),))
    tool_call = next(i for i, r in enumerate(records) if any(p.get("kind") == "tool_call" for p in r.get("parts", [])))
    changed = [json.loads(json.dumps(r)) for r in records]
    next(p for p in changed[tool_call]["parts"] if p["kind"] == "tool_call")["arguments"] = {"command": "ls"}
    yield Case("canonical tool-call arguments an object", (file("canonical-args.jsonl", jsonl(changed)),))
    os.remove(folder / "canonical-source.jsonl")

    codex = [json.loads(line) for line in CODEX.read_text().splitlines() if line.strip()]
    reasoning = next(i for i, r in enumerate(codex) if r.get("payload", {}).get("type") == "reasoning")
    changed = [json.loads(json.dumps(r)) for r in codex]
    changed[reasoning]["payload"]["summary"] = -1
    yield Case("codex reasoning summary -1", (file("codex-summary.jsonl", jsonl(changed)),))
    call = next(i for i, r in enumerate(codex) if r.get("payload", {}).get("type") == "function_call")
    changed = [json.loads(json.dumps(r)) for r in codex]
    changed[call]["payload"]["arguments"] = {"command": ["ls"]}
    yield Case("codex tool-call arguments an object", (file("codex-args.jsonl", jsonl(changed)),))
    token = next(i for i, r in enumerate(codex) if (r.get("payload", {}).get("info") or {}).get("last_token_usage"))
    for label, value in (("true", True), ("-3", -3), ("2^60", 2**60)):
        changed = [json.loads(json.dumps(r)) for r in codex]
        changed[token]["payload"]["info"]["last_token_usage"]["output_tokens"] = value
        yield Case(f"codex output_tokens {label}", (file(f"codex-{label}.jsonl", jsonl(changed)),))

    whole = fingerprint(load_file(CLAUDE))
    raw = gzip.decompress(CLAUDE.read_bytes())
    half = raw.rfind(b"\n", 0, len(raw) // 2) + 1
    yield Case("multi-member gzip", (file("two-members.jsonl.gz", gzip.compress(raw[:half]) + gzip.compress(raw[half:])),), whole)

    response_lines = [i for i, r in enumerate(lines) if r.get("type") == "assistant"]
    by_id: dict[str, list[int]] = {}
    for i in response_lines:
        by_id.setdefault(lines[i]["message"].get("id"), []).append(i)
    split = next((ids for ids in by_id.values() if len(ids) > 1), None)
    if split is not None:
        changed = [json.loads(json.dumps(r)) for r in lines]
        for i in split:
            del changed[i]["message"]["id"]
        # The lines still share their requestId: read as one response, never two calls, and the
        # missing id is reported (an error; with --lenient a counted skip), issue 32.
        yield Case("missing message.id", (file("no-message-id.jsonl", jsonl(changed)),))

    user = next(i for i, r in enumerate(lines) if r.get("type") == "user")
    yield Case("duplicated user record", (file("dup-user.jsonl", jsonl(lines[: user + 1] + lines[user:])),))
    yield Case("duplicated assistant record", (file("dup-assistant.jsonl", jsonl(lines[: first + 1] + lines[first:])),))
    condenser = gzip.decompress(CONDENSER.read_bytes()).splitlines(keepends=True)
    yield Case("duplicated condenser record", (file("dup-condenser.jsonl", condenser[0] + b"".join(condenser)),))
    changed = [json.loads(json.dumps(r)) for r in lines]
    changed[first]["type"] = "assistXnt"
    yield Case("corrupted `type`", (file("bad-type.jsonl", jsonl(changed)),))

    empty = folder / "empty-folder"
    empty.mkdir()
    yield Case("empty folder", (str(empty),))

    collide = folder / "collide"
    for sub in ("a", "b"):
        (collide / sub).mkdir(parents=True)
        shutil.copy(CLAUDE, collide / sub / "session.jsonl.gz")
    yield Case("two files of one name in two folders", (str(collide),), whole * 2)

    links = folder / "links"
    links.mkdir()
    shutil.copy(CLAUDE, links / "real.jsonl.gz")
    (links / "dangling.jsonl").symlink_to(links / "missing.jsonl")
    yield Case("dangling symlink", (str(links),))
    loop = folder / "loop"
    loop.mkdir()
    shutil.copy(CLAUDE, loop / "real.jsonl.gz")
    (loop / "self").symlink_to(loop, target_is_directory=True)
    (loop / "a.jsonl").symlink_to(loop / "b.jsonl")
    (loop / "b.jsonl").symlink_to(loop / "a.jsonl")
    yield Case("symlink loop", (str(loop),))

    locked = folder / "locked"
    (locked / "sub").mkdir(parents=True)
    shutil.copy(CLAUDE, locked / "real.jsonl.gz")
    shutil.copy(CLAUDE, locked / "sub" / "other.jsonl.gz")
    yield Case("unreadable subfolder", (str(locked),), around=lambda: unreadable(locked / "sub"))
    yield Case("unreadable folder", (str(locked / "sub"),), around=lambda: unreadable(locked / "sub"))

    weird = os.fsdecode(bytes(folder / "name-") + b"\xff\xfe.jsonl.gz")
    shutil.copy(CLAUDE, weird)
    yield Case("file name that is not UTF-8", (weird,), whole)

    bomb = folder / "bomb.jsonl.gz"
    with gzip.open(bomb, "wb", compresslevel=9) as out:
        block = b"\0" * (1 << 20)
        for _ in range(300):
            out.write(block)
    yield Case("300 MB gzip bomb", (str(bomb),))


@contextlib.contextmanager
def unreadable(path: Path):
    """`path` cannot be listed, as a folder without read permission (root ignores chmod)."""
    real = os.scandir

    def scandir(target=".", *rest):
        if os.path.realpath(target) == os.path.realpath(path):
            raise PermissionError(13, "Permission denied", str(target))
        return real(target, *rest)

    os.scandir = scandir
    try:
        yield
    finally:
        os.scandir = real


def check_listed(folder: Path, tally) -> None:
    """Read every listed case four ways (see input_fuzz.check_input) and add the outcomes to `tally`."""
    from compactlab.sessions.loading import load_inputs
    from tests.scripts.input_fuzz import broken_invariant, fingerprint, read_cli

    for case in listed_cases(folder):
        label = f"listed: {case.name}"
        tally.inputs += 1
        with case.around() if case.around else contextlib.nullcontext():
            for lenient in (False, True):
                tally.runs += 1
                outcome, value = _read_inputs(load_inputs, list(case.inputs), lenient)
                if outcome == "traceback":
                    tally.tracebacks[value] += 1
                elif outcome == "error":
                    tally.clean_errors += 1
                else:
                    problem = broken_invariant(value.sessions)
                    noticed = value.failed or any(t.skipped for t in value.sessions)
                    if case.expected is not None and _without_ids(fingerprint(value.sessions)) != _without_ids(case.expected):
                        problem = problem or "result differs from the undamaged input's"
                    elif case.expected is None and not noticed:
                        problem = problem or "read with nothing reported"
                    if noticed:
                        tally.counted_skips += 1
                    if problem:
                        tally.silent[f"{label}: {problem}"] += 1
                        tally.silent_inputs.add(label)
            for flags in ([], ["--lenient"]):
                tally.runs += 1
                outcome, value = read_cli(["inspect", *flags, *case.inputs])
                if outcome == "traceback":
                    tally.tracebacks[value] += 1
                elif outcome == "error":
                    tally.clean_errors += 1


def _without_ids(found: tuple) -> tuple:
    return tuple(f[1:] for f in found)


def _read_inputs(load_inputs, inputs: list[str], lenient: bool):
    from compactlab.sessions.source import SessionError
    from tests.scripts.input_fuzz import _where

    try:
        loaded = load_inputs(inputs, lenient=lenient, workers=1)
    except (SessionError, ValueError, KeyError, FileNotFoundError) as exc:
        if "internal error" in str(exc):
            return "traceback", "internal error"
        return "error", str(exc)
    except Exception as exc:  # noqa: BLE001
        return "traceback", _where(exc)
    return "ok", loaded
