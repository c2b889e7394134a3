"""Seeded damage to real session files, and what compactlab does with each damaged file.

Shared by `tests/sessions/test_input_fuzz.py` (a small, fixed share in CI) and by running this module as a
script, which measures the reliability table of issue 16 for inputs:

    .venv/bin/python -m tests.scripts.input_fuzz [--per-kind N] [--seed S]

prints inputs tried, command runs, clean errors, tracebacks (distinct and total) and runs with
silently wrong values. It uses only `load_file`, `load_inputs`, `write_canonical` and the CLI's
`main`, so it measures an older checkout just as well (copy it there, with tests/damaged_inputs.py that
makes the damaged files, and run it from that folder).

Each damaged input is read four ways: strictly and leniently through the library, and through
`compactlab inspect` and `compactlab inspect --lenient`. A run ends in a clean error (a
`SessionError`, or the CLI's `compactlab: error:` line and exit status 2), a result, or a
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
import io
import shutil
import sys
import tempfile
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from tests.damaged_inputs import damaged_variants, sample_files

LIMIT = 2**53

# Kinds whose damage compactlab must notice (an error or a counted skip) when it changes the result.
MUST_NOTICE = ("truncate", "duplicate_line", "retype", "nest")


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


# --- reading damaged files ----------------------------------------------------------------------------


def fingerprint(sessions) -> tuple:
    """What must not change silently: ids, message counts and every recorded LLM call."""
    return tuple(
        (
            t.id,
            len(t.messages),
            tuple(
                (c.model, c.input_tokens, c.cache_read_tokens, c.cache_write_tokens, c.output_tokens, c.cost_usd) for c in t.calls
            ),
        )
        for t in sessions
    )


def broken_invariant(sessions) -> str | None:
    ids = [t.id for t in sessions]
    if len(set(ids)) != len(ids):
        return "session ids not unique"
    for t in sessions:
        try:
            t.id.encode("utf-8")
        except UnicodeEncodeError:
            return "session id is not valid text (it cannot be written to a UTF-8 file)"
    for t in sessions:
        for c in t.calls:
            for value in (c.input_tokens, c.cache_read_tokens, c.cache_write_tokens, c.output_tokens):
                if type(value) is not int or not 0 <= value < LIMIT:
                    return f"token count {value!r}"
            if c.cost_usd is not None and (type(c.cost_usd) is not float or not 0 <= c.cost_usd < LIMIT):
                return f"cost {c.cost_usd!r}"
    return None


def read_library(path: Path, lenient: bool):
    """('error', message) | ('ok', sessions) | ('traceback', key)."""
    from compactlab.sessions.importers import load_file
    from compactlab.sessions.source import SessionError

    try:
        sessions = load_file(path, lenient=lenient)
        fingerprint(sessions)
        return "ok", sessions
    except SessionError as exc:
        if "internal error" in str(exc):
            return "traceback", f"internal error: {str(exc).split('internal error', 1)[1][:80]}"
        return "error", str(exc)
    except Exception as exc:  # noqa: BLE001  (what the fuzz test exists to find)
        return "traceback", _where(exc)


def read_cli(arguments: list[str]):
    """('error', text) | ('ok', text) | ('traceback', key) for `compactlab ARGUMENTS`."""
    from compactlab.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    status: object  # main's return code, or SystemExit's code (an int, a message or None)
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
    from compactlab.sessions.importers import load_file

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
        except ImportError:  # an older checkout without it: the fuzz alone
            pass
        else:
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
