"""One word for one thing (issue 30 §3): session, setting and removed, in the code, the tests, the
report's templates, the README and the docs.

The older words stay only where a name belongs to someone else, or to an older format this version
reads: each such use is listed below, and any other use fails, naming the file and line.
"""

from __future__ import annotations

import re
import subprocess

from tests.conftest import REPO

# Where the old words are names of the world outside or of older formats (not our vocabulary).
OUTSIDE = (
    r"shared/transcripts",  # the shared collection's folder
    r'"shared" / "transcripts"',
    r'"compactlab": "transcript"',  # the canonical file format's header (version 1)
    r'\("compactlab"\) == "transcript"',
    r"compactlab canonical transcript",
    r"combined_transcript_link",  # a real session's text that a test searches for
    r'older word "transcript"',  # docs/index.md saying which names keep it
)
# Files that read older formats (run directories of format 3 and older, baselines of format 2) or
# describe them; their test data; prompts sent to models (their wording is the prompt, not ours).
FORMAT_READERS = (
    "bench/runs/run_format.py",
    "bench/runs/run_files.py",
    "bench/gate/gate.py",
    "tests/runs/test_run_format.py",
    "tests/gate/test_check_and_baseline.py",
    "tests/package/test_vocabulary.py",
)
NOT_OURS = re.compile(r"^(tests/data/|tests/fixtures/|strategies/prompts/|bench/sessions/schema/|datasets/)")
# A "config" key or column is a setting's older name; these are other people's "config".
OTHER_CONFIGS = (
    "bench/sessions/importers/mini_swe_agent",
    "tests/sessions/test_import_mini_swe_agent",
    "bench/sessions/tool_effects.py",
)


def _files(*patterns: str) -> list[str]:
    listed = subprocess.run(["git", "ls-files", *patterns], cwd=REPO, capture_output=True, text=True, check=True)
    return [f for f in listed.stdout.split() if not NOT_OURS.match(f)]


def _lines(files: list[str]):
    for name in files:
        for number, line in enumerate((REPO / name).read_text(encoding="utf-8").splitlines(), start=1):
            yield name, number, line


def test_session_is_the_one_word_for_a_recorded_run_of_an_agent() -> None:
    outside = re.compile("|".join(OUTSIDE))
    found = [
        f"{name}:{number}: {line.strip()[:100]}"
        for name, number, line in _lines(_files("bench", "strategies", "tests", "README.md", "docs", "pyproject.toml"))
        if re.search("transcript", outside.sub("", line), re.IGNORECASE)
        and name not in FORMAT_READERS
        and not (name == "docs/run-directory.md" and "older one (3:" in line)  # (its paragraph on the run directory's formats)
    ]
    assert not found, "the word is session (see docs/index.md, 'Three words'):\n" + "\n".join(found)


def test_setting_is_the_one_word_for_what_a_run_ranks() -> None:
    found = [
        f"{name}:{number}: {line.strip()[:100]}"
        for name, number, line in _lines(_files("bench", "strategies", "tests"))
        if name.endswith((".py", ".j2"))
        and not name.startswith(OTHER_CONFIGS)
        and name not in FORMAT_READERS
        and re.search(r"""["']configs?["']|StrategyConfig""", line)
    ]
    assert not found, "the word is setting (a run's configuration is RunConfig and config.json):\n" + "\n".join(found)


def test_removed_is_the_one_word_for_what_a_compaction_takes_out() -> None:
    found = [
        f"{name}:{number}: {line.strip()[:100]}"
        for name, number, line in _lines(_files("bench", "strategies", "tests"))
        if name != "tests/package/test_vocabulary.py"
        and re.search(r"tokens_saved|saved_tokens|saved_(low|high)|\bSAVED\b|tokens saved", line)
    ]
    assert not found, "the word is removed:\n" + "\n".join(found)
