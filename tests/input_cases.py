"""The run-level input cases of issue 32, each made from real bundled files, run through the CLI.

`python -m tests.scripts.input_fuzz --cases` runs them after the damaged sessions and prints one line
per case: the command's exit status, whether it ended in a traceback, and what it said or counted.
Each case runs `python -m compactlab.cli.main` in a child process, so the script measures an older
checkout just as well (put its package first on PYTHONPATH). `tests/cli/test_input_cases.py`
asserts the outcome each case must have.

Cases: file names that are not UTF-8, a FIFO and a link to a parent folder inside a dataset
folder, a folder of files none of which can be read (`--lenient`), `--out` inside the dataset,
numbers out of range in the configuration, and Claude Code and Codex records whose id or type is
damaged (does the count change without a word?).
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SESSIONS = (
    REPO / "datasets/mini-swe-agent-pr816/sessions",
    ("deepseek_chat_dev_pvlib__pvlib-python-1707", "deepseek_chat_dev_pvlib__pvlib-python-1854"),
)
CLAUDE = REPO / "datasets/claude-code-log/sessions/-src-experiments-claude_p__2b4ed4c0-b905-41de-9238-273db3ec737a.jsonl.gz"
CODEX = REPO / "tests/fixtures/codex/rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-940e6b99603c.jsonl"
RUN = ("--strategy", "truncate", "--window", "32000")
TRACEBACK = "Traceback (most recent call last)"


@dataclass(frozen=True)
class Outcome:
    code: int
    stdout: str
    stderr: str

    @property
    def traceback(self) -> bool:
        return TRACEBACK in self.stderr

    def said(self) -> str:
        """The command's last line on stderr (its error), else on stdout."""
        lines = (self.stderr.strip() or self.stdout.strip()).splitlines()
        return lines[-1][:200] if lines else ""


def compactlab(*arguments: str | Path, cwd: Path = REPO) -> Outcome:
    """`compactlab ARGUMENTS` in a child process (the arguments may be bytes-like paths: not UTF-8)."""
    command = [os.fsencode(sys.executable), b"-m", b"compactlab.cli.main", *map(os.fsencode, arguments)]
    done = subprocess.run(command, cwd=cwd, capture_output=True, timeout=600)
    return Outcome(done.returncode, done.stdout.decode("utf-8", "replace"), done.stderr.decode("utf-8", "replace"))


def sessions(folder: Path) -> Path:
    """A folder holding two real mini-swe-agent sessions."""
    folder.mkdir(parents=True, exist_ok=True)
    source, stems = SESSIONS
    for stem in stems:
        [path] = source.glob(f"{stem}*")
        shutil.copy(path, folder)
    return folder


@dataclass(frozen=True)
class Case:
    name: str
    run: Callable[[Path], Outcome]  # given a fresh working folder
    # What must hold of the outcome once issue 32 is done (`tests/cli/test_input_cases.py`).
    expected: Callable[[Outcome], bool]
    wanted: str  # the expectation in words


def non_utf8_name(work: Path) -> Outcome:
    data = sessions(work / "data")
    source = next(data.iterdir())
    os.rename(source, os.path.join(os.fsencode(data), b"caf\xe9-" + os.fsencode(source.name)))
    return compactlab("run", "--dataset", data, *RUN, "--lenient", "--out", work / "out")


def fifo(work: Path) -> Outcome:
    data = sessions(work / "data")
    os.mkfifo(data / "pipe.jsonl")
    return compactlab("run", "--dataset", data, *RUN, "--lenient", "--out", work / "out")


def link_to_parent(work: Path) -> Outcome:
    data = sessions(work / "outer" / "data")
    shutil.copy(CLAUDE, work / "outer")  # outside the folder named: must not be read
    (data / "up").symlink_to(work / "outer", target_is_directory=True)
    return compactlab("inspect", "--lenient", "--json", data)


def nothing_readable(work: Path) -> Outcome:
    data = work / "data"
    data.mkdir()
    for name in ("a.jsonl", "b.json.gz"):
        (data / name).write_bytes(b"\x00\x01 not a session")
    return compactlab("run", "--dataset", data, *RUN, "--lenient", "--out", work / "out")


def out_inside_dataset(work: Path) -> Outcome:
    data = sessions(work / "data")
    return compactlab("run", "--dataset", data, *RUN, "--out", data / "run")


def configuration(text: str) -> Callable[[Path], Outcome]:
    def run(work: Path) -> Outcome:
        data = sessions(work / "data")
        config = work / "compactlab.toml"
        config.write_text(f'datasets = ["{data}"]\n{text}\n')
        return compactlab("run", "--config", config, "--out", work / "out")

    return run


def claude_lines() -> list[dict]:
    return [json.loads(line) for line in gzip.decompress(CLAUDE.read_bytes()).splitlines() if line.strip()]


def claude_id_missing(work: Path) -> Outcome:
    """The first line of a response that Claude Code wrote over several lines loses `message.id`."""
    lines = claude_lines()
    by_id: dict[str, list[int]] = {}
    for i, record in enumerate(lines):
        if record.get("type") == "assistant":
            by_id.setdefault(record["message"].get("id"), []).append(i)
    first = next(ids for ids in by_id.values() if len(ids) > 1)[0]
    del lines[first]["message"]["id"]
    path = work / "claude-no-id.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    return compactlab("inspect", "--lenient", "--json", path)


def codex_type_damaged(work: Path) -> Outcome:
    """A Codex response item whose `type` lost a letter ("mesage"): a message dropped, not a new kind."""
    lines = [json.loads(line) for line in CODEX.read_text().splitlines() if line.strip()]
    index = next(i for i, r in enumerate(lines) if r.get("payload", {}).get("type") == "message")
    lines[index]["payload"]["type"] = "mesage"
    path = work / "codex-bad-type.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    return compactlab("inspect", "--lenient", "--json", path)


def _counted_skip(outcome: Outcome) -> bool:
    records = [json.loads(line) for line in outcome.stdout.splitlines() if line.startswith("{")]
    return outcome.code == 0 and any(r.get("skipped_records") for r in records)


def _clean_error(*words: str) -> Callable[[Outcome], bool]:
    return lambda o: o.code == 2 and not o.traceback and all(w in o.stderr for w in words)


def _file_not_read(name: str) -> Callable[[Outcome], bool]:
    return lambda o: (
        o.code == 0 and not o.traceback and any("file not read" in line and name in line for line in o.stdout.splitlines())
    )


CASES: tuple[Case, ...] = (
    Case(
        "file name not UTF-8, run --lenient",
        non_utf8_name,
        lambda o: o.code == 0 and not o.traceback and "2 sessions × 1 strategies" in o.stdout and "not read" not in o.stdout,
        "exit 0, both read",
    ),
    Case("FIFO in a dataset folder", fifo, _file_not_read("pipe.jsonl"), "a 'file not read' line"),
    Case(
        "link to a parent folder in a dataset folder",
        link_to_parent,
        lambda o: o.code == 0 and "not followed" in o.stdout and CLAUDE.name not in o.stdout,
        "not followed; reported",
    ),
    Case(
        "run --lenient, no file readable",
        nothing_readable,
        _clean_error(
            "no session could be read: 2 files not read", "a.jsonl: unknown session format", "b.json.gz: not a valid gzip"
        ),
        "exit 2, each file's reason",
    ),
    Case("--out inside the dataset folder", out_inside_dataset, _clean_error("inside the dataset folder"), "refused, exit 2"),
    Case(
        "window = 10^30",
        configuration("window = 1000000000000000000000000000000"),
        _clean_error("compactlab.toml", "window"),
        "exit 2",
    ),
    Case(
        "[context_windows] negative",
        configuration('[context_windows]\n"deepseek" = -5'),
        _clean_error("compactlab.toml", "deepseek"),
        "exit 2",
    ),
    Case(
        "keep_recent_tokens negative",
        configuration('[[strategy]]\nname = "summarize"\nsettings = { keep_recent_tokens = -100 }'),
        _clean_error("compactlab.toml", "keep_recent_tokens"),
        "exit 2",
    ),
    Case(
        "max_failed_share = 2",
        configuration("max_failed_share = 2"),
        _clean_error("compactlab.toml", "max_failed_share"),
        "exit 2",
    ),
    Case("max_cost_usd = inf", configuration("max_cost_usd = inf"), _clean_error("compactlab.toml", "max_cost_usd"), "exit 2"),
    Case(
        "trigger absolute = 10^30",
        configuration('[[strategy]]\nname = "truncate"\ntrigger = { absolute = 1000000000000000000000000000000 }'),
        _clean_error("compactlab.toml", "absolute"),
        "exit 2",
    ),
    Case(
        "[summarizer] max_in_flight = 0",
        configuration('[summarizer]\nprovider = "openai"\nmodel = "gpt-4o-mini"\nmax_in_flight = 0'),
        _clean_error("compactlab.toml", "max_in_flight"),
        "exit 2",
    ),
    Case("Claude Code message.id missing", claude_id_missing, _counted_skip, "a counted skip"),
    Case("Codex response item type damaged", codex_type_damaged, _counted_skip, "a counted skip"),
)


def run_cases(work: Path) -> Iterator[tuple[Case, Outcome]]:
    for number, case in enumerate(CASES):
        folder = work / f"case-{number}"
        folder.mkdir(parents=True)
        yield case, case.run(folder)


def print_cases(work: Path) -> tuple[int, int]:
    """Run every case and print its outcome; (tracebacks, cases not as issue 32 wants)."""
    tracebacks = wrong = 0
    for case, outcome in run_cases(work):
        ok = case.expected(outcome)
        tracebacks += outcome.traceback
        wrong += not ok
        verdict = "ok" if ok else f"NOT OK (wanted: {case.wanted})"
        print(
            f"  {case.name:44} exit {outcome.code}{' TRACEBACK' if outcome.traceback else ''}; {verdict}; {outcome.said()!r:.140}"
        )
    return tracebacks, wrong
