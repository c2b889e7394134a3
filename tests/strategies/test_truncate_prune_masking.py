"""The LLM-free strategies (truncate, prune, observation masking) on real sessions.

Every bundled dataset with tool use is read; on a sample of its sessions (the largest ones, plus
one with skipped damaged records, one sub-agent session and one without any user message, where
the dataset has them) each strategy compacts the whole history, as the context at the session's
last call, towards a small target (30% of its chars/4 size). The checks are the invariants a
provider and a replay rely on, plus each strategy's documented numbers.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

import pytest

from compactlab.contract import CompactionRequest, Context
from compactlab.sessions.messages import (
    is_user_turn_start,
    leading_system,
    pinned_head,
    pinned_in,
    pinned_indexes,
    safe_cut_points,
    summary_message,
    turn_boundaries,
    turn_starts,
)
from compactlab.sessions.model import Message, Session, ToolCallPart, ToolResultPart
from compactlab.strategies.masking import ObservationMasking
from compactlab.strategies.prune import PLACEHOLDER, Prune
from compactlab.strategies.registry import get_strategy
from compactlab.strategies.truncate import Truncate
from tests.strategy_sessions import (
    DATASETS,
    STRATEGIES,
    assert_no_dropped_results,
    assert_no_orphans,
    by_id,
    counter,
    each,
    part_tokens,
    request_for,
    results_of,
    run,
    sample,
    sessions,
)

# --- invariants every strategy keeps -------------------------------------------------------------


@pytest.mark.parametrize("dataset", DATASETS)
@pytest.mark.parametrize("name", list(STRATEGIES))
def test_invariants_on_real_sessions(name: str, dataset: str) -> None:
    each(dataset, lambda session: check_invariants(name, session))


def check_invariants(name: str, session: Session) -> None:
    before = session.messages
    assert_no_orphans(before)  # the recorded session itself is valid
    result = run(STRATEGIES[name], session)
    after = result.context.messages
    count = counter(session)

    assert_no_orphans(after)
    assert_no_dropped_results(before, after)
    system = leading_system(before)
    assert after[:system] == before[:system], "the leading system prompt is kept"
    starts = turn_starts(before)
    if starts:
        assert before[starts[-1]] in after, "the last user request is kept"
        assert [m for m in after if is_user_turn_start(m)][-1] == before[starts[-1]]
    assert after[-1] == before[-1], "the newest message is kept"
    assert count(after) <= count(before)
    assert result.messages_removed == len(before) - len(after)
    assert result.note
    assert result.context.summary is None and result.context.archives == ()
    if after == before:
        notes = result.note.split("; ") if name == "pipeline" else [result.note]
        assert all("nothing to do" in note for note in notes), result.note


# --- truncate -----------------------------------------------------------------------------------


@pytest.mark.parametrize("dataset", DATASETS)
def test_truncate_cuts_at_a_user_turn_within_budget(dataset: str) -> None:
    each(dataset, check_truncate)


def check_truncate(session: Session) -> None:
    before = session.messages
    request = request_for(session)
    result = Truncate().compact(Context(messages=before), request)
    after = result.context.messages
    head = pinned_head(before)
    pinned = [before[i] for i in sorted(pinned_indexes(before))]
    if result.messages_removed:
        assert [m for m in after if m in pinned] == pinned, "system prompt, instructions and the task are kept verbatim"
        tail = after[len(pinned) :]
        assert tail == before[len(before) - len(tail) :], "after the pinned messages, a contiguous recent tail is kept"
        assert len(before) - len(tail) in turn_boundaries(before), "the tail starts a turn (or a step of the task's turn)"
        if "over budget anyway" not in result.note:
            assert request.count_tokens(after) <= request.target_tokens
    else:
        boundaries = [b for b in turn_boundaries(before) if b > head]
        assert not boundaries or request.count_tokens(before) <= request.target_tokens
        assert result.note.startswith("nothing to do")


@pytest.mark.parametrize("dataset", DATASETS)
def test_truncate_finds_the_cut_the_plain_scan_finds(dataset: str) -> None:
    # The plain definition: scan the cuts from the first and keep the first whose context fits.
    # Truncate searches them by halves; both must keep exactly the same messages, at every budget.
    def plain(messages, request) -> tuple:
        head_end = pinned_head(messages)
        safe = set(safe_cut_points(messages))
        cuts = [i for i in turn_boundaries(messages) if i > head_end and i in safe]
        kept = messages
        for cut in cuts:
            kept = messages[:head_end] + pinned_in(messages, head_end, cut) + messages[cut:]
            if request.prompt_size(kept) <= request.target_tokens:
                break
        return kept

    def check(session: Session) -> None:
        messages = session.messages
        for share in (0.05, 0.2, 0.5, 0.8):
            request = request_for(session, target=int(share * counter(session)(messages)))
            result = Truncate(keep_summary=False).compact(Context(messages=messages), request)
            if result.messages_removed:
                assert result.context.messages == plain(messages, request), (session.id, share)

    each(dataset, check)


def test_truncate_keeps_the_last_turn_whole_when_even_it_does_not_fit() -> None:
    session = by_id("m-claude", "3af9b1a7")
    before = session.messages
    result = run(Truncate(), session, target=10)
    after = result.context.messages
    last = turn_starts(before)[-1]
    assert after == before[:1] + before[last:], "the task statement, then exactly the last user turn, whole"
    assert result.messages_removed == last - 1
    assert "over budget anyway" in result.note and "last turn" in result.note


def test_truncate_keeps_the_summary_and_uses_its_own_budget() -> None:
    session = sample("mini-swe-agent-pr816")[0]
    multi = by_id("m-claude", "3af9b1a7")
    # A multi-turn history behind the mini-swe-agent system prompt and an earlier summary.
    summary = summary_message("Earlier work: explored the repository.")
    messages = session.messages[:1] + (summary,) + multi.messages
    count = counter(multi)
    request = CompactionRequest("threshold", 200_000, target_tokens=10**9, count_tokens=count)
    context = Context(messages=messages, summary="Earlier work: explored the repository.")
    result = Truncate(budget_tokens=25_000).compact(context, request)
    after = result.context.messages
    assert after[:2] == messages[:2], "system prompt and summary kept"
    assert is_user_turn_start(after[2])
    assert count(after) <= 25_000 and result.messages_removed > 0
    assert result.context.summary == context.summary
    dropped = Truncate(budget_tokens=25_000, keep_summary=False).compact(context, request).context.messages
    assert summary not in dropped and dropped[0] == messages[0]


# --- prune --------------------------------------------------------------------------------------


def test_prune_documented_numbers() -> None:
    prune = Prune()
    assert (prune.protect_tokens, prune.minimum_tokens) == (40_000, 20_000)
    assert prune.protected_tools == ("skill",) and prune.protect_turns == 2
    assert PLACEHOLDER == prune.placeholder == "[Old tool result content cleared]"
    assert get_strategy("prune") == prune


def prunable_region(messages: Sequence[Message], protect_turns: int = 2) -> int:
    """Index where the last `protect_turns` user turns begin (prune never looks past it)."""
    starts = turn_starts(messages)
    return starts[-protect_turns] if len(starts) >= protect_turns else 0


def test_prune_clears_old_outputs_beyond_the_newest_40k() -> None:
    session = by_id("m-claude", "3af9b1a7")  # 123k tokens over 10 user turns
    before = session.messages
    result = run(Prune(), session)
    after = result.context.messages
    assert len(after) == len(before) and result.messages_removed == 0
    region = prunable_region(before)
    assert after[region:] == before[region:], "the last two user turns are untouched"
    cleared = [
        (i, j)
        for i, m in enumerate(after)
        for j, p in enumerate(m.parts)
        if isinstance(p, ToolResultPart) and p.content == PLACEHOLDER
    ]
    assert cleared, result.note
    cleared_tokens = sum(part_tokens(session, before[i], before[i].parts[j]) for i, j in cleared)
    assert cleared_tokens > 20_000
    assert f"{cleared_tokens:,} tokens" in result.note
    # The newest tool output before the protected turns, up to the newest cleared result, is > 40k;
    # without that cleared result it is <= 40k.
    newest_i, newest_j = max(cleared)
    newer = sum(
        part_tokens(session, before[i], p)
        for i in range(newest_i, region)
        for j, p in enumerate(before[i].parts)
        if isinstance(p, ToolResultPart) and (i, j) > (newest_i, newest_j)
    )
    assert newer <= 40_000 < newer + part_tokens(session, before[newest_i], before[newest_i].parts[newest_j])
    # Calls stay, results stay (with cleared content): the sequence is valid and smaller.
    assert counter(session)(after) < counter(session)(before) - 20_000


def test_prune_does_nothing_when_less_than_20k_is_prunable() -> None:
    session = by_id("m-claude", "72dfed17")  # ~50k tokens of tool output before its last two turns
    everything = run(Prune(minimum_tokens=0), session)
    prunable = sum(
        part_tokens(session, m, p)
        for m, new in zip(session.messages, everything.context.messages)
        for p, q in zip(m.parts, new.parts)
        if isinstance(p, ToolResultPart) and p != q
    )
    assert 0 < prunable < 20_000, prunable
    result = run(Prune(), session)
    assert result.context.messages == session.messages and result.messages_removed == 0
    assert result.note.startswith("nothing to do") and f"{prunable:,} tokens" in result.note


def test_prune_is_idempotent() -> None:
    session = by_id("m-claude", "3af9b1a7")
    first = run(Prune(), session)
    assert first.context.messages != session.messages
    second = run(Prune(), session, messages=first.context.messages)
    assert second.context.messages == first.context.messages
    assert second.messages_removed == 0 and second.note.startswith("nothing to do")
    assert "earlier prune" in second.note
    # Even pruning everything it may, twice, changes nothing the second time.
    greedy = Prune(protect_tokens=0, minimum_tokens=0, protect_turns=0)
    once = run(greedy, session)
    assert run(greedy, session, messages=once.context.messages).context.messages == once.context.messages


def test_prune_never_touches_protected_tools() -> None:
    # The one bundled session that called Claude Code's Skill tool.
    [session] = [
        t
        for t in sessions("m-claude") + sessions("claude-code-log")
        if any(isinstance(p, ToolCallPart) and p.name == "Skill" for m in t.messages for p in m.parts)
    ][:1]
    skill_calls = {p.id for m in session.messages for p in m.parts if isinstance(p, ToolCallPart) and p.name == "Skill"}
    greedy = Prune(protect_tokens=0, minimum_tokens=0, protect_turns=0)
    after = run(greedy, session).context.messages
    results = {p.call_id: p for p in results_of(after)}
    originals = {p.call_id: p for p in results_of(session.messages)}
    assert any(p.content == PLACEHOLDER for p in results.values()), "other tools were pruned"
    assert skill_calls & set(originals), "the session has skill results"
    for call_id in skill_calls & set(originals):
        assert results[call_id] == originals[call_id], "the skill tool's output is untouched"
    # Protecting the only tool of a mini-swe-agent session leaves nothing to prune.
    swe = sample("mini-swe-agent-pr816")[0]
    protected = run(Prune(protect_tokens=0, minimum_tokens=0, protect_turns=0, protected_tools=("bash",)), swe)
    assert protected.context.messages == swe.messages and protected.note.startswith("nothing to do")


# --- observation masking ------------------------------------------------------------------------

MASKED = re.compile(r"Old environment output: \((\d+) lines omitted\)")


@pytest.mark.parametrize("dataset", DATASETS)
def test_masking_keeps_exactly_the_last_10_outputs(dataset: str) -> None:
    each(dataset, check_masking)


def check_masking(session: Session) -> None:
    result = run(ObservationMasking(), session)
    before, after = results_of(session.messages), results_of(result.context.messages)
    assert len(before) == len(after) and result.messages_removed == 0
    assert after[-10:] == before[-10:], "the last 10 tool outputs are intact"
    count = counter(session)
    masked = 0
    for old, new in zip(before[:-10], after[:-10]):
        placeholder = f"Old environment output: ({len(old.content.splitlines())} lines omitted)"
        smaller = count([Message("tool", (replace(old, content=placeholder),))]) < count([Message("tool", (old,))])
        if smaller:  # every older output is masked unless the placeholder would not be smaller
            masked += 1
            assert new == replace(old, content=placeholder)
        else:
            assert new == old
    if masked:
        assert f"masked {masked} " in result.note
    else:
        assert result.context.messages == session.messages and result.note.startswith("nothing to do")
    # Idempotent: a second run changes nothing and says so.
    again = run(ObservationMasking(), session, messages=result.context.messages)
    assert again.context.messages == result.context.messages
    assert again.messages_removed == 0 and again.note.startswith("nothing to do")


def test_masking_window_is_a_setting() -> None:
    session = sample("mini-swe-agent-pr816")[0]
    after = results_of(run(ObservationMasking(keep_last=3), session).context.messages)
    assert after[-3:] == results_of(session.messages)[-3:]
    assert MASKED.fullmatch(after[-4].content) or len(after[-4].content) < 60
    nothing = run(ObservationMasking(keep_last=10_000), session)
    assert nothing.context.messages == session.messages and nothing.note.startswith("nothing to do")
