"""The gemini-cli preset against Gemini CLI's own code: the committed oracles (tests/data/oracles/gemini-cli,
made by `python -m tests.scripts.engine_oracle gemini-cli`), read without node. Each check of an
oracle is replayed through compactlab's API (`tests.scripts.oracles.gemini_cli_agreement`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from compactlab.contract import CompactionFailed, CompactionRequest, Context
from compactlab.sessions.messages import is_summary
from compactlab.strategies.gemini import ACK, GEMINI_COMMIT, GeminiCompression, contents, masked_part
from compactlab.strategies.presets import gemini_cli
from compactlab.strategies.prompting import render
from compactlab.tokens.metering import Meter
from tests.scripts.engine_oracle import read_oracle
from tests.scripts.oracles.gemini_cli_agreement import ORACLES, FixedSummary, agreement, preset_checks, session_of

PATHS = sorted(ORACLES.glob("*.json"))


@pytest.fixture(scope="module")
def compared() -> list[tuple[dict, list[dict]]]:
    assert len(PATHS) >= 4, f"the committed oracles are missing from {ORACLES}"
    pairs = []
    for path in PATHS:
        oracle = read_oracle(path)
        assert oracle["commit"] == GEMINI_COMMIT and oracle["licence"] == "Apache-2.0", path
        pairs.append((oracle, preset_checks(session_of(oracle), oracle["checks"])))
    return pairs


def figures(compared, kind: str) -> tuple[int, int]:
    total = same = 0
    for oracle, mine in compared:
        n, agreeing = agreement(oracle, mine).get(kind, (0, 0))
        total, same = total + n, same + agreeing
    return total, same


def test_the_trigger_agrees_with_gemini_at_the_real_window(compared) -> None:
    total, same = figures(compared, "trigger, real window")
    assert total > 700 and same == total
    assert gemini_cli().trigger.fraction == 0.5


def test_the_trigger_fires_at_most_one_call_before_gemini_at_a_simulated_window(compared) -> None:
    # The listed deviation: the preset's measure adds the messages since the last call (and sizes the
    # history past the recorded agent's own compaction), Gemini's is the last prompt alone: where they
    # differ the preset fires and Gemini does not yet.
    differing = 0
    for oracle, mine in compared:
        for theirs, ours in zip(oracle["checks"], mine):
            engine = theirs["simulated"]["status"] != "NOOP"
            if engine != ours["simulated"]["fires"]:
                differing += 1
                assert ours["simulated"]["fires"] and not engine, (oracle["session"], theirs["call"])
    assert 0 < differing < 0.05 * sum(len(o["checks"]) for o, _ in compared)


def test_the_split_agrees_with_gemini_where_it_compresses(compared) -> None:
    total, same = figures(compared, "status where it compresses, simulated")
    assert total > 600 and same == total
    total, same = figures(compared, "truncated outputs, simulated")
    assert same == total
    total, same = figures(compared, "first kept message, simulated")
    # The listed difference: 3 checks of pi-mono-before-compaction (calls 746-750) split 10 messages later.
    assert total - same <= 3, f"first kept message agrees at {same}/{total}"


def test_masking_masks_the_outputs_gemini_masks(compared) -> None:
    total, same = figures(compared, "masked outputs (every check)")
    assert same == total
    acting, same = figures(compared, "masked outputs (acting checks)")
    assert acting > 0 and same == acting


def test_the_compressed_history_is_the_snapshot_the_acknowledgement_and_the_kept_tail() -> None:
    oracle = read_oracle(next(p for p in PATHS if p.stem.startswith("pi-mono")))
    session = session_of(oracle)
    check = next(c for c in reversed(oracle["checks"]) if c["simulated"]["first_kept"] is not None)
    context = Context(messages=session.messages[: check["call"]], known_usage=(check["end"], check["last_prompt"]))
    request = CompactionRequest("threshold", 65_536, 32_768, Meter(session, "hybrid").count, FixedSummary())
    after = GeminiCompression(summarizer="llm").compact(context, request).context.messages
    at = next(i for i, m in enumerate(after) if is_summary(m))
    assert after[at].text() == "<state_snapshot>oracle</state_snapshot>" and after[at + 1].text() == ACK
    kept = session.messages[check["simulated"]["first_kept"] : check["call"]]
    assert [m.role for m in after[at + 2 :]] == [m.role for m in kept]


def test_the_summary_prompt_is_geminis() -> None:
    fresh = render("gemini_cli.j2", conversation="c", previous_summary=None).text
    again = render("gemini_cli.j2", conversation="c", previous_summary="<state_snapshot>x</state_snapshot>").text
    assert "distilling chat history into a structured XML <state_snapshot>" in fresh and "<artifact_trail>" in fresh
    assert "Generate a new <state_snapshot>" in fresh and "A previous <state_snapshot> exists" in again
    assert Path(gemini_cli().source).name == "" or GEMINI_COMMIT[:8] in gemini_cli().source


def _pi_check() -> tuple:
    oracle = read_oracle(next(p for p in PATHS if p.stem.startswith("pi-mono")))
    session = session_of(oracle)
    check = next(c for c in reversed(oracle["checks"]) if c["simulated"]["first_kept"] is not None)
    return session, check


def test_a_failed_compression_is_not_remembered() -> None:
    # Gemini (client.ts hasFailedCompressionAttempt) only truncates after an inflated compression; the
    # strategy keeps no state, so a second attempt on the same inflated context fails the same way.
    session, check = _pi_check()
    context = Context(messages=session.messages[: check["call"]], known_usage=(check["end"], 10))
    request = CompactionRequest("threshold", 65_536, 32_768, Meter(session, "hybrid").count, FixedSummary())
    for _ in range(2):
        with pytest.raises(CompactionFailed, match="larger than the last prompt"):
            GeminiCompression(summarizer="llm").compact(context, request)


def test_one_summarizer_call_stands_for_the_summary_and_its_probe() -> None:
    session, check = _pi_check()
    asked: list[str] = []

    class Counting(FixedSummary):
        def summarize(self, request):
            asked.append(request.prompt)
            return super().summarize(request)

    context = Context(messages=session.messages[: check["call"]], known_usage=(check["end"], check["last_prompt"]))
    request = CompactionRequest("threshold", 65_536, 32_768, Meter(session, "hybrid").count, Counting())
    GeminiCompression(summarizer="llm").compact(context, request)
    assert len(asked) == 1 and "Critically evaluate" not in asked[0]


def test_a_recorded_shell_output_gets_the_general_preview() -> None:
    session, _ = _pi_check()
    history, _ = contents(session.messages)
    part = next(
        p
        for c in history
        for p in c["parts"]
        if "functionResponse" in p and len(p["functionResponse"]["response"]["output"]) > 2_000
    )
    assert part["functionResponse"]["name"] != "run_shell_command"
    snippet = masked_part(part)["functionResponse"]["response"]["output"]
    assert snippet.startswith("<tool_output_masked>\n{\n") and "\n... [TRUNCATED] ...\n" in snippet
