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
re-indented JSON) and the result is not the undamaged file's; a file with a byte-order mark is
valid too (refusing it or skipping a record is wrong). Two Claude Code sessions interleaved in one file
must be read as the two sessions (in any ids) or refused; a link out of a dataset folder must be a file
not read. The per-kind table "kind | runs | tracebacks | silently wrong | clean" is printed last.
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

from tests.damaged_inputs import INTERLEAVE_KIND, LINK_KIND, RECORD_KINDS, damaged_variants, interleaved, sample_files

LIMIT = 2**53

# Kinds whose damage compactlab must notice (an error or a counted skip) when it changes the result.
MUST_NOTICE = ("truncate", "duplicate_line", "retype", "nest", *(k for k in RECORD_KINDS if k != "bom"))
# What the error for a link out of the folder says (a link opened and refused for its content is read).
OUTSIDE = "outside the folder"
# Kinds that keep the file what it was: the result must be the undamaged file's.
UNCHANGED = ("valid", "bom")


@dataclass
class Tally:
    inputs: int = 0
    runs: int = 0
    clean_errors: int = 0
    counted_skips: int = 0
    tracebacks: Counter = field(default_factory=Counter)  # "Type: where" -> runs
    silent: Counter = field(default_factory=Counter)  # input description -> runs
    silent_inputs: set = field(default_factory=set)
    # per kind of damage: [runs, tracebacks, silently wrong]
    kinds: dict = field(default_factory=dict)

    def count(self, kind: str, outcome: str) -> None:
        """One run of `kind` ended in `outcome` ("run", "traceback" or "silent")."""
        row = self.kinds.setdefault(kind, [0, 0, 0])
        row[("run", "traceback", "silent").index(outcome)] += 1

    def kind_table(self) -> list[str]:
        lines = ["kind | runs | tracebacks | silently wrong | clean", "---|---|---|---|---"]
        for kind, (runs, tracebacks, silent) in self.kinds.items():
            lines.append(f"{kind} | {runs} | {tracebacks} | {silent} | {runs - tracebacks - silent}")
        return lines

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
    """What must not change silently: ids, message counts, every recorded LLM call and every compaction."""
    return tuple(
        (
            t.id,
            len(t.messages),
            tuple(
                (c.model, c.input_tokens, c.cache_read_tokens, c.cache_write_tokens, c.output_tokens, c.cost_usd) for c in t.calls
            ),
            tuple((c.at_message, c.kept) for c in t.compactions),
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


def check_input(
    path: Path, kind: str, what: str, original: tuple | None, tally: Tally, label: str, cli: bool = True, same=None
) -> None:
    """`same(found, original)`, when given, tells whether a result is the undamaged one (default: equal fingerprints)."""
    tally.inputs += 1
    same = same or (lambda found, expected: found == expected)
    for lenient in (False, True):
        tally.runs += 1
        tally.count(kind, "run")
        outcome, value = read_library(path, lenient)
        if outcome == "traceback":
            tally.tracebacks[value] += 1
            tally.count(kind, "traceback")
        elif outcome == "error":
            tally.clean_errors += 1
            if kind == "bom":  # a valid file refused
                tally.silent[f"{label}: refused ({value[:80]})"] += 1
                tally.silent_inputs.add(label)
                tally.count(kind, "silent")
        elif any(t.skipped for t in value) and kind != "bom":
            tally.counted_skips += 1
            if broken_invariant(value):
                tally.silent[f"{label}: {broken_invariant(value)}"] += 1
                tally.silent_inputs.add(label)
                tally.count(kind, "silent")
        else:
            problem = broken_invariant(value)
            changed = original is not None and not same(fingerprint(value), original)
            if problem is None and changed and (kind in MUST_NOTICE or kind in UNCHANGED or kind == INTERLEAVE_KIND):
                problem = "result changed with nothing reported"
            if problem:
                tally.silent[f"{label}: {problem}"] += 1
                tally.silent_inputs.add(label)
                tally.count(kind, "silent")
    if cli:
        inspect_both_ways(path, kind, tally)


def inspect_both_ways(path: Path, kind: str, tally: Tally) -> None:
    """`compactlab inspect PATH`, strictly and with --lenient: a traceback is counted."""
    for flags in ([], ["--lenient"]):
        tally.runs += 1
        tally.count(kind, "run")
        outcome, value = read_cli(["inspect", *flags, str(path)])
        if outcome == "traceback":
            tally.tracebacks[value] += 1
            tally.count(kind, "traceback")
        elif outcome == "error":
            tally.clean_errors += 1


def _without_ids(found: tuple, expected: tuple) -> bool:
    """The same sessions, whatever their ids (two sessions split from one file get new ones)."""
    return sorted(f[1:] for f in found) == sorted(f[1:] for f in expected)


def check_interleaved(samples: list, workdir: Path, tally: Tally, cli: bool) -> None:
    """Two Claude Code sessions mixed line by line in one file: read as the two sessions, or refused."""
    from compactlab.sessions.importers import load_file

    claude = [(name, data) for fmt, name, data in samples if fmt == "claude-code"]
    for (first, a), (second, b) in zip(claude, claude[1:]):
        originals: list = []
        for name, data in ((first, a), (second, b)):
            (workdir / name).write_bytes(data)
            originals += fingerprint(load_file(workdir / name))
        folder = workdir / "interleaved"
        folder.mkdir()
        path = folder / first
        path.write_bytes(interleaved(a, b))
        label = f"claude-code {first} + {second}: {INTERLEAVE_KIND}"
        check_input(path, INTERLEAVE_KIND, "two sessions line by line", tuple(originals), tally, label, cli, _without_ids)
        shutil.rmtree(folder)


def check_links_out(samples: list, workdir: Path, tally: Tally, cli: bool) -> None:
    """A dataset folder holding links to files outside it (a session, /etc/passwd): each is a file not
    read, counted (strict: an error), as a link to a folder outside is; the session inside is read."""
    from compactlab.sessions.loading import load_inputs
    from compactlab.sessions.source import SessionError

    fmt, name, data = samples[0]
    outside = workdir / "outside"
    outside.mkdir()
    (outside / ("other-" + name)).write_bytes(data)
    for target in (outside / ("other-" + name), Path("/etc/passwd")):
        folder = workdir / "linked"
        folder.mkdir()
        (folder / name).write_bytes(data)
        (folder / "linked.jsonl").symlink_to(target)
        label = f"{fmt} folder with a link to {target.name}: {LINK_KIND}"
        tally.inputs += 1
        for lenient in (False, True):
            tally.runs += 1
            tally.count(LINK_KIND, "run")
            try:
                loaded = load_inputs([str(folder)], lenient=lenient, workers=1)
            except SessionError as exc:
                tally.clean_errors += 1
                if "linked.jsonl" not in str(exc) or OUTSIDE not in str(exc):
                    tally.silent[f"{label}: the link was opened (strict): {str(exc)[-80:]}"] += 1
                    tally.silent_inputs.add(label)
                    tally.count(LINK_KIND, "silent")
                continue
            except Exception as exc:  # noqa: BLE001
                tally.tracebacks[_where(exc)] += 1
                tally.count(LINK_KIND, "traceback")
                continue
            read_link = not any(f.path.name == "linked.jsonl" and OUTSIDE in f.error for f in loaded.failed)
            if read_link or not lenient:
                tally.silent[f"{label}: the link was opened and read ({'lenient' if lenient else 'strict'})"] += 1
                tally.silent_inputs.add(label)
                tally.count(LINK_KIND, "silent")
        if cli:
            inspect_both_ways(folder, LINK_KIND, tally)
        shutil.rmtree(folder)
    shutil.rmtree(outside)


def fuzz(per_kind: int, seed: int, workdir: Path, tally: Tally | None = None, cli: bool = True) -> Tally:
    from compactlab.sessions.importers import load_file

    tally = tally or Tally()
    samples = sample_files(workdir)
    for fmt, name, data in samples:
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
    check_interleaved(samples, workdir, tally, cli)
    check_links_out(samples, workdir, tally, cli)
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
    print("\n".join(tally.kind_table()))
    for key, count in tally.tracebacks.most_common(args.show):
        print(f"  traceback ×{count}: {key}")
    for key, count in sorted(tally.silent.items())[: args.show]:
        print(f"  silent ×{count}: {key}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
