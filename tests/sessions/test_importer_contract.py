"""The importer contract, over every registered importer (issue 46): each reads its own real sample,
none claims another format's file, and a file two importers claim is an error naming both.

The samples are real files: every bundled dataset's sessions (its dataset.toml names the format), the
real fixtures in tests/fixtures, and canonical exports of real sessions. A new importer without a
sample here fails the first test; one whose `match` also accepts another format's files fails the
second. Detection asks every importer, so the order they are registered in decides nothing.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from compactlab.sessions.datasets import list_datasets
from compactlab.sessions.importers import detect, format_facts, importers, load_file
from compactlab.sessions.importers.canonical import write_canonical
from compactlab.sessions.source import SessionError, Source
from tests.conftest import REPO

FIXTURES = REPO / "tests" / "fixtures"
# Real files of formats no bundled dataset has (the fixtures' READMEs say where each comes from).
REAL_FIXTURES = {
    "codex-rollout": sorted((FIXTURES / "codex").glob("*.jsonl")),
    "mini-swe-agent": sorted((FIXTURES / "mini_swe_agent").glob("*.traj.json")),
    "openai-chat": [FIXTURES / "json_chat" / "real_openai_gpt4o_mini_image_tool.json"],
    "anthropic-messages": [FIXTURES / "json_chat" / "real_anthropic_tool_with_thinking.json"],
    "swe-agent": sorted((FIXTURES / "swe_agent").glob("*.traj")),
    "gemini-cli": sorted((FIXTURES / "gemini_cli").glob("*.jsonl")),
    "cline-session": sorted((FIXTURES / "cline").glob("*.json")),
    "dataclaw": [FIXTURES / "dataclaw" / "conversations.jsonl.gz"],
    "opencode": [
        FIXTURES / "opencode" / "opencode-1.18.33.db.gz",
        *sorted((FIXTURES / "opencode").glob("storage-*/session/*/ses_*.json")),
    ],
}
# Canonical exports are made from these (a Claude Code session with sub-agent facts, a pi session).
EXPORTED = ("m-claude", "pi-sessions")


def _bundled() -> list[tuple[str, Path]]:
    return [(dataset.source_format, path) for dataset in list_datasets() for path in dataset.files]


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, Path]]:
    """(format, file) for every real sample, canonical exports included."""
    out = _bundled() + [(fmt, path) for fmt, paths in REAL_FIXTURES.items() for path in paths]
    folder = tmp_path_factory.mktemp("canonical")
    datasets = {dataset.name: dataset for dataset in list_datasets()}
    for name in EXPORTED:
        first = datasets[name].files[0]
        lenient = datasets[name].lenient
        out.append(("canonical", write_canonical(load_file(first, lenient=lenient), folder / f"{name}.jsonl")))
    return out


def test_every_registered_importer_has_a_real_sample(samples: list[tuple[str, Path]]) -> None:
    assert sorted({fmt for fmt, _ in samples}) == sorted(importers())
    assert all(path.is_file() for _, path in samples) and len(samples) > 150


def test_each_sample_is_claimed_by_its_own_importer_alone(samples: list[tuple[str, Path]]) -> None:
    claims = {
        path.name: [name for name, importer in importers().items() if importer.match(Source(path)) is None] for _, path in samples
    }
    assert {path.name: claims[path.name] for fmt, path in samples if claims[path.name] != [fmt]} == {}


def test_each_importer_reads_its_own_sample_into_sessions_of_its_format(samples: list[tuple[str, Path]]) -> None:
    lenient = {dataset.source_format for dataset in list_datasets() if dataset.lenient}
    first = {fmt: path for fmt, path in reversed(samples)}  # the first sample of each format
    for fmt, path in first.items():
        sessions = load_file(path, lenient=fmt in lenient or fmt == "canonical")
        assert sessions, path
        expected = {"canonical": {"claude-code", "pi-session"}}.get(fmt, {fmt})
        assert {t.source_format for t in sessions} <= expected, path


def _head_line(path: Path) -> bytes:
    data = path.read_bytes()
    data = gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data
    return data.splitlines(keepends=True)[0]


@pytest.fixture
def claimed_twice(tmp_path: Path) -> Path:
    """A real pi session with a real Claude Code record in its head: two importers' markers."""
    pi = next(path for fmt, path in _bundled() if fmt == "pi-session")
    claude = next(path for fmt, path in _bundled() if fmt == "claude-code")
    lines = gzip.decompress(pi.read_bytes()).splitlines(keepends=True)
    claude_record = next(
        line
        for line in gzip.decompress(claude.read_bytes()).splitlines(keepends=True)
        if b'"sessionId"' in line and b'"type":"user"' in line.replace(b" ", b"")
    )
    path = tmp_path / "claimed-twice.jsonl"
    path.write_bytes(lines[0] + claude_record + b"".join(lines[1:]))
    return path


def test_a_file_two_importers_claim_is_an_error_naming_both(claimed_twice: Path) -> None:
    """Before, the first importer registered (claude-code) read it, and registration order decided."""
    with pytest.raises(SessionError, match="ambiguous session format") as raised:
        detect(Source(claimed_twice))
    assert "'claude-code'" in str(raised.value) and "'pi-session'" in str(raised.value)
    assert str(claimed_twice) in str(raised.value)
    with pytest.raises(SessionError, match="'claude-code' and 'pi-session'"):
        load_file(claimed_twice, lenient=True)
    # Named, the format is not detected: pi's importer reads it, the foreign record counted as skipped.
    [session] = load_file(claimed_twice, lenient=True, format="pi-session")
    assert session.source_format == "pi-session" and len(session.skipped) == 1 and session.skipped[0].line == 2


def test_the_stages_read_a_format_s_facts_from_its_importer() -> None:
    """tokens/framing.py, results/real_engines.py and sessions/session_family.py ask the importer."""
    from compactlab.results.real_engines import preset_of_format
    from compactlab.tokens.framing import framing_for, without_system_prompt

    for name, importer in importers().items():
        facts = importer.facts
        assert format_facts(name) is facts
        framing = framing_for(name)
        assert (framing.count_thinking, framing.anthropic_images) == (facts.thinking_resent, facts.anthropic_images)
        assert preset_of_format(name) == facts.engine_preset
        assert (name in without_system_prompt()) is not facts.system_prompt_in_file
    assert {name for name in importers() if preset_of_format(name)} == {"claude-code", "codex-rollout", "pi-session", "opencode"}
    assert format_facts("no-such-format") == format_facts("openai-chat")  # a session built in code: the defaults
