"""Run an engine's own compaction code on sessions and record its decisions: the oracle the presets
are tested against (issue 42).

    python -m tests.scripts.engine_oracle ENGINE --engine-source GIT_DIR [--commit REV] [--out DIR] SESSION ...

ENGINE is one of `ENGINES`. GIT_DIR is a snapshot of the engine's repository that you fetched (a git
directory, read with `git show`, as the search tool's fetch leaves it; a clone's `.git` works too); its
commit is recorded in every oracle. Each engine's module (`tests.scripts.oracles.<engine>`) copies
the engine's compaction functions verbatim from the snapshot into a scratch folder, stubs only their
imports, runs them (node, or cargo for Rust) on each session converted to the engine's own message
format, and writes one JSON oracle per session (`write_oracle`). No model is called. node and cargo
are needed to make oracles, never by the tests that read the committed ones (tests/data/oracles/).
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import json
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ORACLE_VERSION = 1
# Engine → the module that runs it (`run(snapshot, sessions, out) -> list[Path]`).
ENGINES = {
    "pi": "tests.scripts.oracles.pi",
    "opencode": "tests.scripts.oracles.opencode",
    "codex": "tests.scripts.oracles.codex",
    "gemini-cli": "tests.scripts.oracles.gemini_cli",
}


class OracleError(RuntimeError):
    """An oracle that cannot be made: names what is missing and how to get it."""


@dataclass(frozen=True)
class Snapshot:
    """One commit of an engine's repository, read with git (no work tree needed)."""

    git_dir: Path
    commit: str  # the full hash

    @staticmethod
    def of(git_dir: Path, rev: str = "HEAD") -> Snapshot:
        if not git_dir.exists():
            raise OracleError(f"{git_dir}: no such snapshot (fetch the engine's repository first)")
        done = _git(git_dir, "rev-parse", "--verify", f"{rev}^{{commit}}")
        return Snapshot(git_dir, done.strip())

    def read(self, path: str) -> str:
        """The text of `path` at this commit."""
        return _git(self.git_dir, "show", f"{self.commit}:{path}")

    def copy(self, paths: Sequence[str], into: Path) -> None:
        """Copy these files of the commit, verbatim, under `into` (keeping their paths)."""
        for path in paths:
            target = into / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(self.read(path), encoding="utf-8")


def _git(git_dir: Path, *args: str) -> str:
    done = subprocess.run(["git", f"--git-dir={git_dir}", *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise OracleError(f"{git_dir}: git {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout


def require(program: str, how: str) -> str:
    """The path of `program`, or an error that says how to install it."""
    found = shutil.which(program)
    if found is None:
        raise OracleError(f"{program} is needed to run the engine's own code: {how}")
    return found


def write_oracle(
    out: Path, engine: str, repository: str, snapshot: Snapshot, licence: str, session: str, checks: list[dict]
) -> Path:
    """One session's oracle: what the engine's code decided at every point it checks (`checks`, in
    order; each a dict whose keys the engine's module documents)."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{Path(session).stem}.json"
    document = {
        "oracle": ORACLE_VERSION,
        "engine": engine,
        "repository": repository,
        "commit": snapshot.commit,
        "licence": licence,
        "session": session,
        "checks": checks,
    }
    path.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def read_oracle(path: Path) -> dict:
    """A committed oracle, checked for its version."""
    document = json.loads(path.read_text(encoding="utf-8"))
    if document.get("oracle") != ORACLE_VERSION:
        raise OracleError(f"{path}: oracle version {document.get('oracle')!r}, this code reads {ORACLE_VERSION}")
    return document


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.scripts.engine_oracle", description=__doc__.split("\n\n")[0])
    parser.add_argument("engine")
    parser.add_argument("sessions", nargs="+", type=Path, help="session files (the engine's own format, or one compactlab reads)")
    parser.add_argument("--engine-source", type=Path, required=True, help="the engine repository's git directory")
    parser.add_argument("--commit", default="HEAD", help="the commit to read (default: the snapshot's HEAD)")
    parser.add_argument("--out", type=Path, default=Path("oracles"), help="where the oracles go (one folder per engine)")
    args = parser.parse_args(argv)
    if args.engine not in ENGINES:
        close = difflib.get_close_matches(args.engine, ENGINES, n=1)
        parser.error(
            f"no engine {args.engine!r}" + (f" (did you mean {close[0]!r}?)" if close else f"; one of {', '.join(ENGINES)}")
        )
    missing = [str(p) for p in args.sessions if not p.is_file()]
    if missing:
        parser.error(f"no such session file: {', '.join(missing)}")
    try:
        snapshot = Snapshot.of(args.engine_source, args.commit)
        module = importlib.import_module(ENGINES[args.engine])
        written = module.run(snapshot, args.sessions, args.out / args.engine)
    except OracleError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for path in written:
        print(path)
    print(f"{len(written)} oracles of {args.engine} at {snapshot.commit[:12]} in {args.out / args.engine}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
