"""Damaged real files never end in a traceback or a silently wrong result (issue 16).

The fuzz share here is small and seeded, so CI runs the same inputs each time in a few seconds;
`python -m tests.scripts.input_fuzz` runs many more and prints the table (see its docstring).
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from compactlab.sessions.importers import load_file
from compactlab.sessions.loading import load_inputs
from compactlab.sessions.source import SessionError
from tests.listed_inputs import listed_cases
from tests.scripts.input_fuzz import Tally, broken_invariant, fingerprint, fuzz, read_cli


def test_seeded_fuzz_of_real_files_of_every_format(tmp_path: Path) -> None:
    tally = fuzz(per_kind=1, seed=16, workdir=tmp_path, cli=False)
    assert dict(tally.tracebacks) == {}
    assert dict(tally.silent) == {}
    # The damage is real: most inputs are refused or have records skipped.
    assert tally.inputs >= 60 and tally.clean_errors + tally.counted_skips >= tally.inputs


def test_every_listed_input_is_an_error_a_counted_skip_or_read_right(tmp_path: Path) -> None:
    problems = []
    for case in listed_cases(tmp_path):
        with case.around() if case.around else contextlib.nullcontext():
            for lenient in (False, True):
                try:
                    loaded = load_inputs(list(case.inputs), lenient=lenient, workers=1)
                except (SessionError, ValueError) as exc:
                    if "internal error" in str(exc):
                        problems.append(f"{case.name}: {exc}")
                    elif case.expected is not None:
                        problems.append(f"{case.name}: a valid input refused: {exc}")
                    continue
                found = fingerprint(loaded.sessions)
                if broken_invariant(loaded.sessions):
                    problems.append(f"{case.name}: {broken_invariant(loaded.sessions)}")
                if case.expected is not None:
                    if [f[1:] for f in found] != [f[1:] for f in case.expected]:
                        problems.append(f"{case.name}: read differently from the undamaged file")
                elif not lenient:
                    problems.append(f"{case.name}: read strictly without an error")
                elif not (loaded.failed or any(t.skipped for t in loaded.sessions)):
                    problems.append(f"{case.name}: read leniently with nothing counted")
            outcome, said = read_cli(["inspect", "--lenient", *case.inputs])
            if outcome == "traceback":
                problems.append(f"{case.name}: compactlab inspect: {said}")
    assert problems == []


def test_a_lenient_read_of_many_files_counts_each_bad_one_and_goes_on(tmp_path: Path) -> None:
    cases = {case.name: case for case in listed_cases(tmp_path / "cases")}
    folder = tmp_path / "many"
    folder.mkdir()
    names = (
        "100,000 nested [",
        '"role": ["user"]',
        "openai prompt_tokens Infinity",
        "codex reasoning summary -1",
        'canonical cache_write_tokens "5"',
    )
    for number, name in enumerate(names):
        source = Path(cases[name].inputs[0])
        (folder / f"{number}-{source.name}").write_bytes(source.read_bytes())
    good = Path(cases["multi-member gzip"].inputs[0])
    (folder / good.name).write_bytes(good.read_bytes())
    loaded = load_inputs([str(folder)], lenient=True, workers=1)
    assert [t.id for t in loaded.sessions if not t.skipped] == ["two-members"]
    assert len(loaded.failed) + sum(1 for t in loaded.sessions if t.skipped) == len(names)
    assert all(str(folder) in f.error and "internal error" not in f.error for f in loaded.failed)


def test_files_of_one_name_in_two_folders_get_ids_qualified_by_folder(tmp_path: Path) -> None:
    cases = {case.name: case for case in listed_cases(tmp_path)}
    loaded = load_inputs(list(cases["two files of one name in two folders"].inputs), workers=1)
    assert sorted(t.id for t in loaded.sessions) == ["a/session", "b/session"]


def test_the_same_session_under_two_names_is_refused(tmp_path: Path) -> None:
    source = Path(next(c for c in listed_cases(tmp_path / "cases") if c.name == "multi-member gzip").inputs[0])
    for name in ("one.jsonl.gz", "two.jsonl.gz"):
        (tmp_path / name).write_bytes(source.read_bytes())
    from compactlab.sessions.importers.canonical import write_canonical

    write_canonical(load_file(tmp_path / "one.jsonl.gz"), tmp_path / "copy.jsonl")
    (tmp_path / "copy2.jsonl").write_bytes((tmp_path / "copy.jsonl").read_bytes())
    inputs = [str(tmp_path / "copy.jsonl"), str(tmp_path / "copy2.jsonl")]
    try:
        load_inputs(inputs, workers=1)
        raise AssertionError("two sessions of one id were read")
    except SessionError as exc:
        assert "copy2.jsonl" in str(exc) and "already the id" in str(exc)
    loaded = load_inputs(inputs, lenient=True, workers=1)
    assert len(loaded.sessions) == 1 and [f.path.name for f in loaded.failed] == ["copy2.jsonl"]


def test_tally_counts_an_unreported_change_as_silent(tmp_path: Path) -> None:
    """The measuring rule itself: a changed result with nothing reported is silently wrong."""
    from tests.scripts.input_fuzz import check_input

    source = Path(next(c for c in listed_cases(tmp_path / "cases") if c.name == "multi-member gzip").inputs[0])
    tally = Tally()
    check_input(source, "valid", "unchanged", ((),), tally, "a fingerprint it cannot have", cli=False)
    assert sum(tally.silent.values()) == 2
