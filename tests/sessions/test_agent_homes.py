"""A whole home directory read as a dataset (issue 49): a tree laid out as the agents lay out their
folders, built from the bundled real sessions, with the files beside them that are no sessions."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

from compactlab.sessions.importers import load_file
from compactlab.sessions.loading import load_inputs
from compactlab.sessions.session_family import session_family
from tests.conftest import REPO

DATASETS = REPO / "datasets"
CLINE = REPO / "tests" / "fixtures" / "cline"
OPENCODE = REPO / "tests" / "fixtures" / "opencode"


def _session_id(path: Path) -> str:
    """The `sessionId` of a Claude Code file's first record that has one (read with json alone)."""
    for line in gzip.decompress(path.read_bytes()).splitlines():
        record = json.loads(line)
        if "sessionId" in record:
            return record["sessionId"]
    raise AssertionError(path)


def _home(tmp_path: Path) -> tuple[Path, dict[Path, Path], list[Path]]:
    """(the home, each session file placed there -> the bundled file it copies, the files no session)."""
    home = tmp_path / "home"
    placed: dict[Path, Path] = {}

    def place(source: Path, target: Path) -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        placed[target] = source

    # The bundle named each file by its path under ~/.claude/projects with "/" written "__": put back,
    # a sub-agent's file is in its parent session's folder (<session>/subagents/) or, from older
    # Claude Code, beside it (agent-*.jsonl).
    for source in sorted((DATASETS / "claude-code-log" / "sessions").glob("*.jsonl.gz")):
        place(source, home / ".claude" / "projects" / source.name.replace("__", "/"))
    for source in sorted((DATASETS / "codex-rollouts" / "sessions").glob("*.jsonl.gz"))[:2]:
        name = source.name.split("__")[-1]  # rollout-YYYY-MM-DDThh-mm-ss-<uuid>.jsonl.gz
        year, month, day = name.removeprefix("rollout-")[:10].split("-")
        place(source, home / ".codex" / "sessions" / year / month / day / name)
    for source in sorted((DATASETS / "pi-sessions" / "sessions").glob("*.jsonl.gz")):
        place(source, home / ".pi" / "agent" / "sessions" / "--Users-x-pi-mono--" / source.name)
    cline = home / ".cline" / "data" / "sessions" / "1784094124598_rruoq"
    place(CLINE / "agentic.compaction.json", cline / "1784094124598_rruoq.messages.json")
    opencode = home / ".local" / "share" / "opencode"
    opencode.mkdir(parents=True)
    (opencode / "opencode.db").write_bytes(gzip.decompress((OPENCODE / "opencode-1.18.33.db.gz").read_bytes()))
    placed[opencode / "opencode.db"] = OPENCODE / "opencode-1.18.33.db.gz"
    shutil.copytree(OPENCODE / "storage-1.1.65", opencode / "storage")
    (session_file,) = (opencode / "storage" / "session").glob("*/ses_*.json")
    placed[session_file] = session_file
    # Beside the sessions, files named like sessions that are none: a read of the home passes them over.
    others = [
        cline / "1784094124598_rruoq.json",  # Cline's manifest of the session (a real one)
        home / ".claude" / "history.jsonl",
        home / ".claude" / "settings.json",
        home / ".codex" / "history.jsonl",
        home / ".codex" / "auth.json",
    ]
    for path in others:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text('{"display": "a prompt typed", "timestamp": 1}\n')
    return home, placed, others


def test_a_home_directory_is_read_as_one_dataset_of_its_agents_sessions(tmp_path: Path) -> None:
    home, placed, others = _home(tmp_path)
    loaded = load_inputs([str(home)], workers=1)
    storage = home / ".local" / "share" / "opencode" / "storage"
    store_files = [p for p in storage.rglob("*") if p.is_file() and p.parent.parent.name != "session"]  # messages, parts, ...
    assert loaded.failed == () and sorted(loaded.passed_over) == sorted(others + store_files)
    alone = {path: load_file(path) for path in placed}
    # Every session of every file, each once, with the calls each file holds read on its own.
    assert len(loaded.sessions) == sum(len(s) for s in alone.values())
    assert [len(t.calls) for t in loaded.sessions] == [len(t.calls) for path in sorted(placed) for t in alone[path]]
    formats = {t.source_format for t in loaded.sessions}
    assert formats == {"claude-code", "codex-rollout", "pi-session", "cline-session", "opencode"}


def test_each_session_is_named_by_its_folder_relative_to_the_home(tmp_path: Path) -> None:
    home, placed, _ = _home(tmp_path)
    loaded = load_inputs([str(home)], workers=1)
    by_path = {Path(t.source_path): t for t in loaded.sessions if not t.is_subagent and t.source_format != "opencode"}
    for path, session in by_path.items():
        folder = path.parent.relative_to(home).as_posix()
        assert session.id == f"{folder}/{load_file(path)[0].id}"
    # opencode's sessions, in its database or its older JSON files, are named by its folder alone.
    named = sorted(t.id for t in loaded.sessions if t.source_format == "opencode")
    assert named == sorted(f".local/share/opencode/{load_file(p)[0].id}" for p in placed if "opencode" in p.parts)
    # The same layout names the same sessions alike from the agent's own folder.
    again = load_inputs([str(home / ".codex")], workers=1)
    assert {t.id for t in again.sessions} == {t.id for t in loaded.sessions if t.source_format == "codex-rollout"}


def test_sub_agent_files_are_of_their_parent_s_family_wherever_they_lie(tmp_path: Path) -> None:
    home, placed, _ = _home(tmp_path)
    loaded = load_inputs([str(home)], workers=1)
    families = {Path(t.source_path): session_family(t) for t in loaded.sessions}
    subagent_files = [p for p in placed if p.name.startswith("agent-")]
    in_parent_folder = [p for p in subagent_files if p.parent.name == "subagents"]
    assert len(subagent_files) == 14 and len(in_parent_folder) == 7
    files_of = {p.name.removesuffix(".jsonl.gz"): p for p in placed if p.parent.parent.name == "projects"}
    for path in subagent_files:
        parent = _session_id(path)
        assert families[path] == parent
        if parent in files_of:
            assert families[files_of[parent]] == parent
    assert sum(_session_id(p) in files_of for p in subagent_files) == 9
