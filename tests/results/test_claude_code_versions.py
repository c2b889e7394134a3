"""The claude-code preset's trigger follows the Claude Code version a session was recorded with, on
the shared real sessions: the version is read, the reserve is the version's, a model Claude Code does
not know gets its 200,000 window, and the measurement that chose the reserves counts what
`compactlab engines` shows."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from compactlab.replay.setting import window_and_trigger
from compactlab.results.real_engines import engine_rows
from compactlab.sessions.importers import load_file
from compactlab.sessions.importers.canonical import write_canonical
from compactlab.sessions.loading import load_inputs
from compactlab.sessions.model import Session
from compactlab.strategies.registry import get_strategy
from compactlab.tokens.context_windows import ContextWindows
from tests.conftest import DATASETS, bundled
from tests.scripts.trigger_choice import OPUS, cases, choose_table, repositories_of


def test_the_version_is_read_and_kept(shared: Path, tmp_path: Path) -> None:
    [opus] = load_file(shared / "pai-claude" / "24a90d02-9724-4548-9f4f-97bcb9f93ef3.jsonl", lenient=True)
    [later] = load_file(shared / "pai-claude-2" / "54b56fbb-66c0-4556-87c9-c173239b3958.jsonl", lenient=True)
    assert (opus.agent_version, later.agent_version) == ("2.0.57", "2.1.6")
    [again] = load_file(write_canonical([later], tmp_path / "later.jsonl"))
    assert again == later and again.agent_version == "2.1.6"
    # A canonical file written before the field existed still reads, without a version.
    [older] = load_file(write_canonical([replace(later, agent_version=None)], tmp_path / "older.jsonl"))
    assert older.agent_version is None and "agent_version" not in (tmp_path / "older.jsonl").read_text().splitlines()[0]
    versions = {t.agent_version for t in load_inputs([str(shared / "pai-claude-2")], lenient=True).sessions}
    assert versions == {"2.0.76", "2.1.1", "2.1.2", "2.1.3", "2.1.5", "2.1.6"}


def test_the_reserve_is_the_versions() -> None:
    trigger = get_strategy("claude-code@2026-06-07").trigger
    fires = lambda model, version: trigger.for_session(model, version).fires_from(200_000)  # noqa: E731
    assert fires("claude-opus-4-5-20251101", "2.0.57") == 200_000 - 77_000 + 1  # its 64,000-token output limit
    assert fires("claude-opus-4-5-20251101", "2.0.76") == 200_000 - 45_000 + 1  # later: like Sonnet
    assert fires("claude-sonnet-4-6", "2.1.92") == 200_000 - 36_000 + 1
    assert fires("claude-sonnet-4-6", "2.1.9") == 200_000 - 45_000 + 1  # no evidence: the documented rule
    assert fires("claude-opus-4-5-20251101", "2.0.60") == fires("claude-opus-4-5-20251101", None) == 200_000 - 77_000 + 1


def test_claude_code_fires_where_real_claude_code_did_by_its_version(shared: Path) -> None:
    sessions = load_inputs([str(shared / "pai-claude"), str(DATASETS / "m-claude")], lenient=True).sessions
    auto = [row for t in sessions if t.agent_version for row in engine_rows(t) if row.trigger == "auto"]
    assert len(auto) == 7 and all(row.agrees for row in auto)
    # The same Opus 4.5 sessions run by a later Claude Code (2.0.76 compacts it at window − 45,000) would
    # not have compacted where they did: the version decides.
    later = [row for t in sessions if OPUS in "".join(t.models) for row in engine_rows(replace(t, agent_version="2.0.76"))]
    assert later and not any(row.agrees for row in later if row.trigger == "auto")


def test_pai_claude_2s_compactions_are_manual_and_listed_apart(shared: Path) -> None:
    sessions = load_inputs([str(shared / "pai-claude-2")], lenient=True).sessions
    rows = [row for t in sessions for row in engine_rows(t)]
    assert len(rows) == 14 and {row.trigger for row in rows} == {"manual"}


def test_a_model_claude_code_does_not_know_gets_200000(shared: Path) -> None:
    preset = get_strategy("claude-code")
    assert ContextWindows().lookup("glm-4.7").tokens == 128_000  # compactlab's own table
    assert window_and_trigger(preset, None, ContextWindows(), "glm-4.7", None, "2.1.19")[0] == 200_000
    [session] = load_file(bundled("m-claude", "3af9b1a7"), lenient=True)
    [real] = engine_rows(session)
    [glm] = engine_rows(_with_model(session, "glm-4.7"))
    assert (glm.window, glm.preset_call) == (200_000, real.preset_call) and glm.agrees


def _with_model(session: Session, model: str) -> Session:
    messages = tuple(replace(m, call=replace(m.call, model=model)) if m.call else m for m in session.messages)
    return replace(session, messages=messages, models=(model,))


def test_the_measurement_counts_what_engines_shows(shared: Path) -> None:
    paths = [str(shared / "pai-claude"), str(shared / "pai-claude-2"), str(DATASETS / "m-claude")]
    sessions = list(load_inputs(paths, lenient=True).sessions)
    repositories = repositories_of(paths, sessions)
    assert {repositories[t.source_path] for t in sessions} == {
        "Smartagent-so/Personal_AI_Infrastructure",
        "procrypto/Personal_AI_Infrastructure",
        "M-Thisness/M-Claude",
    }
    found, manual = cases(sessions, repositories)
    assert (len(found), manual) == (7, 17)
    trigger = get_strategy("claude-code").trigger
    rows = {(row.session, row.real_call): row for t in sessions for row in engine_rows(t)}
    for case in found:
        threshold = trigger.for_session(case.model, case.version).fires_from(case.window)
        assert case.apart(threshold) == rows[case.session, case.real_call].calls_apart
    # Chosen on these alone: Opus 4.5 in 2.0.57 keeps its 64,000-token output limit, Sonnet 4.5 in 2.1.5 45,000.
    [band] = choose_table(found)
    assert (band.first, band.last, band.rule) == ("2.0.57", "2.1.5", (45_000, 32_000))


def test_a_trigger_with_version_reserves_reads_back_from_config_json_equal_and_hashable() -> None:
    # config.json writes a trigger's tuples as lists; settings identical by construction are grouped by
    # the trigger (compactlab.results.same_by_construction), so it must read back hashable.
    import dataclasses
    import json

    from compactlab.replay.setting import trigger_of
    from compactlab.runs.run_config import setting_from
    from compactlab.strategies.registry import get_strategy

    trigger = dataclasses.replace(trigger_of(get_strategy("claude-code")), fraction=0.9)  # (a configured fraction is at most 1)
    assert trigger.reserve_by_version
    written = json.loads(json.dumps({"name": "summarize", "trigger": dataclasses.asdict(trigger)}))
    read = setting_from(written, "config.json: strategies[0]").trigger
    assert read == trigger and hash(read) == hash(trigger)
