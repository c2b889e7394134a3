"""The summarizing strategies and every preset, on real bundled sessions: their invariants."""

from __future__ import annotations

from dataclasses import replace

import pytest

from compactlab.contract import CompactionFailed, CompactionRequest, Context, SummaryResponse, fell_back
from compactlab.sessions.importers import load_file
from compactlab.sessions.messages import is_summary, is_user_turn_start, last_user_request
from compactlab.sessions.model import ToolCallPart, ToolResultPart
from compactlab.strategies.prompting import prompt_set_hash, render
from compactlab.strategies.registry import describe_all, get_strategy, registered
from compactlab.strategies.summarize import TURN_SEPARATOR, choose_cut, files_in
from compactlab.tokens.metering import Meter
from tests.conftest import bundled

SESSIONS = [
    load_file(bundled("mini-swe-agent-pr816", "deepseek_reasoner_dev_marshmallow-code__marshmallow-1343"))[0],
    load_file(bundled("claude-code-log", "-src-deep-manifest__a7da6a22"))[0],
    load_file(bundled("claude-code-log", "-Users-dain-workspace-danieldemmel-me-next__9e953218"))[0],
    load_file(bundled("m-claude", "21e3c711"), lenient=True)[0],
]
IDS = ["mini-swe-agent", "claude-deep-manifest", "claude-me-next", "m-claude-long"]


def request_for(session, window: int = 40_000) -> tuple[CompactionRequest, Meter]:
    meter = Meter(session, "chars/4")
    return CompactionRequest(reason="threshold", window=window, target_tokens=window // 2, count_tokens=meter.count), meter


def assert_valid(messages) -> None:
    calls = set()
    for message in messages:
        for part in message.parts:
            if isinstance(part, ToolCallPart):
                calls.add(part.id)
            if isinstance(part, ToolResultPart):
                assert part.call_id in calls, f"orphan tool result {part.call_id}"


def last_request_kept(original, compacted) -> bool:
    last = last_user_request(original)
    return any(last in m.text() for m in compacted)


@pytest.mark.parametrize("name", sorted(registered()))
@pytest.mark.parametrize("session", SESSIONS, ids=IDS)
def test_every_strategy_and_preset_keeps_the_invariants(name: str, session) -> None:
    request, meter = request_for(session)
    context = Context(messages=session.messages)
    result = get_strategy(name).compact(context, request)
    after = result.context.messages
    assert_valid(after)
    if session.messages[0].role == "system":
        assert after[0] == session.messages[0]
    assert last_request_kept(session.messages, after)
    assert meter.count(after) <= meter.count(session.messages)
    assert result.messages_removed >= 0


@pytest.mark.parametrize("session", SESSIONS, ids=IDS)
def test_summarize_cuts_at_a_turn_or_splits_a_long_turn(session) -> None:
    request, meter = request_for(session)
    result = get_strategy("summarize").compact(Context(messages=session.messages), request)
    after = result.context.messages
    summary_index = next(i for i, m in enumerate(after) if is_summary(m))
    kept = after[summary_index + 1 :]
    assert kept, "recent history is kept verbatim"
    assert tuple(kept) == session.messages[-len(kept) :]
    split = "(split turn)" in result.note
    assert split or is_user_turn_start(kept[0])
    # About window/4 of recent history is kept (seed 004). A split moves the cut forward to the next
    # point that does not separate a tool call from its result (as pi does), so it can keep a bit less.
    assert meter.count(kept) >= request.window // 8 or is_user_turn_start(kept[0])
    assert meter.count(kept) <= request.window // 4 + max(meter.count([m]) for m in kept) or is_user_turn_start(kept[0])
    assert result.prompt_hash == prompt_set_hash("summary.j2", "update.j2", "turn_prefix.j2")


def test_split_turn_on_a_single_task_agent() -> None:
    # mini-swe-agent sessions are one long turn after the task: the cut must split it. Nothing comes
    # before that turn, so its summary is the whole summary: no empty part, no dangling header.
    session = SESSIONS[0]
    request, _ = request_for(session)
    result = get_strategy("summarize").compact(Context(messages=session.messages), request)
    assert "(split turn)" in result.note
    assert TURN_SEPARATOR.strip() not in result.context.summary and "Turn Context" not in result.context.summary
    # The task statement is kept verbatim after the system prompt, not summarized.
    assert result.context.messages[:2] == session.messages[:2]


def test_summary_carries_file_lists_and_last_request() -> None:
    session = SESSIONS[1]
    request, _ = request_for(session)
    summary = get_strategy("summarize").compact(Context(messages=session.messages), request).context.summary
    files = files_in(summary)
    assert "/src/deep-manifest/deep_manifest/deep_manifest.py" in files.modified
    assert "/src/deep-manifest/README.md" in files.read
    assert summary.rstrip().endswith(last_user_request(session.messages)[-40:])
    assert "Last request from user was: " in summary


def test_iterative_merge_updates_the_earlier_summary_and_keeps_file_lists() -> None:
    session = SESSIONS[3]
    request, meter = request_for(session, window=60_000)
    half = len(session.messages) // 2
    merge = get_strategy("iterative-merge")
    first = merge.compact(Context(messages=session.messages[:half]), request).context
    grown = replace(first, messages=(*first.messages, *session.messages[half:]))
    second = merge.compact(grown, request)
    summaries = [m for m in second.context.messages if is_summary(m)]
    assert len(summaries) == 1  # the earlier summary was merged, not stacked
    # The task statement stays first, verbatim, through both compactions.
    assert first.messages[0] == second.context.messages[0] == session.messages[0]
    # The extractive update merges the earlier summary section by section instead of nesting it.
    earlier_error = first.summary.split("## Errors seen\n- ", 1)[1].split("\n", 1)[0]
    assert earlier_error in second.context.summary
    assert "## Earlier summary" not in second.context.summary
    earlier = files_in(first.summary)
    now = files_in(second.context.summary)
    assert set(earlier.modified) <= set(now.modified)  # cumulative
    assert second.messages_removed > 0


def test_summarizer_failure_falls_back_to_truncate() -> None:
    class Failing:
        name = "failing"

        def summarize(self, request):
            raise CompactionFailed("provider returned 500")

    session = SESSIONS[2]
    request, meter = request_for(session)
    request = replace(request, summarizer=Failing())
    result = get_strategy("summarize", summarizer="llm").compact(Context(messages=session.messages), request)
    assert result.note.startswith("[fell back] summarizer failed (provider returned 500); truncate") and fell_back(result.note)
    assert meter.count(result.context.messages) < meter.count(session.messages)
    with pytest.raises(CompactionFailed):
        get_strategy("summarize", summarizer="llm", fallback="").compact(Context(messages=session.messages), request)


def test_llm_summarizer_gets_the_rendered_prompt() -> None:
    seen = []

    class Recording:
        name = "recording"

        def summarize(self, request):
            seen.append(request)
            return SummaryResponse(text="## Goal\n- recorded")

    session = SESSIONS[1]
    request, _ = request_for(session)
    result = get_strategy("summarize", summarizer="llm").compact(
        Context(messages=session.messages), replace(request, summarizer=Recording())
    )
    assert seen and "<conversation>" in seen[0].prompt and "Do NOT continue the conversation" in seen[0].system
    assert "[Assistant tool call]: " in seen[0].prompt
    assert result.context.summary.startswith("## Goal\n- recorded")


def test_a_summarizer_that_reads_no_prompt_gets_none_and_writes_the_same_summary() -> None:
    seen = []

    class Recording:
        name = "recording"

        def summarize(self, request):
            seen.append(request)
            return SummaryResponse(text=f"## Goal\n- {len(request.messages)} messages")

    class NoPrompt(Recording):
        reads_prompt = False

    session = SESSIONS[1]
    request, _ = request_for(session)
    strategy = get_strategy("summarize", summarizer="llm")
    results = [
        strategy.compact(Context(messages=session.messages), replace(request, summarizer=s())) for s in (Recording, NoPrompt)
    ]
    half = len(seen) // 2  # one request per summarized span (two for a split turn)
    for rendered, skipped in zip(seen[:half], seen[half:], strict=True):
        assert "<conversation>" in rendered.prompt and rendered.system and rendered.prompt_hash
        assert (skipped.prompt, skipped.system, skipped.prompt_hash) == ("", "", "")
        assert skipped.messages == rendered.messages
    assert results[0] == results[1]  # the same summary, file lists and prompt-set hash


def test_archive_keeps_the_full_history() -> None:
    session = SESSIONS[2]
    request, _ = request_for(session)
    result = get_strategy("archive").compact(Context(messages=session.messages), request)
    assert result.context.archives == (session.messages,)
    assert "archived as archive #1" in next(m for m in result.context.messages if is_summary(m)).text()


def test_presets_state_source_and_documented_numbers() -> None:
    rows = {row["name"]: row for row in describe_all()}
    for name in (
        "seed-000",
        "seed-001",
        "seed-002",
        "seed-003",
        "seed-004",
        "pi",
        "opencode",
        "codex",
        "claude-code",
        "openhands",
        "jetbrains-masking",
    ):
        assert rows[name]["kind"] == "preset" and rows[name]["source"], name
    pi = get_strategy("pi")
    assert (pi.trigger.reserve_tokens, pi.strategy.keep_recent_tokens) == (16_384, 20_000)
    seed_003 = get_strategy("seed-003")
    assert (seed_003.trigger.warning, seed_003.trigger.critical, seed_003.trigger.target, seed_003.estimator) == (
        0.75,
        0.9,
        0.6,
        "words",
    )
    prune = get_strategy("seed-002").strategy.stages[1]  # seed 002 summarizes, then prunes
    assert (prune.protect_tokens, prune.minimum_tokens, prune.max_part_tokens) == (40_000, 20_000, 50_000)
    assert get_strategy("seed-004").strategy.keep_recent_tokens is None  # window / 4
    assert get_strategy("codex").trigger.fraction == 0.9
    assert get_strategy("jetbrains-masking").strategy.keep_last == 10
    assert get_strategy("pi", keep_recent_tokens=5_000).strategy.keep_recent_tokens == 5_000


def test_choose_cut_on_known_shapes() -> None:
    session = SESSIONS[2]
    history = session.messages
    count = Meter(session, "chars/4").count
    cut, split = choose_cut(history, 10**9, count, 5)
    assert (cut, split) == (0, None)  # everything fits: nothing to summarize
    assert choose_cut(history, 0, count, 5) == (len(history), None)  # nothing recent kept: all is summarized
    cut, split = choose_cut(history, 1, count, 5)
    assert cut > 0 and (split is not None or is_user_turn_start(history[cut]))


def test_prompt_hash_changes_with_the_template(tmp_path) -> None:
    mine = tmp_path / "mine.j2"
    mine.write_text("Summarize:\n{{ conversation }}\n")
    first = render(str(mine), conversation="x").hash
    mine.write_text("Summarize briefly:\n{{ conversation }}\n")
    assert render(str(mine), conversation="x").hash != first
    with pytest.raises(FileNotFoundError, match="summary.j2"):
        render("no-such-template.j2", conversation="x")


# The shell patterns of file_activity as they read (bench/sessions/messages.py writes them to start with
# the character they need, which Python's regular expressions scan to quickly).
READABLE_SHELL_WRITES = r"\bsed\s+-i|\s>>?\s*\S|\btee\b|\bpatch\b|\bgit\s+apply\b|\btouch\b|\bmv\b|\bcp\b"


def test_shell_patterns_find_what_they_read_as() -> None:
    import re

    from compactlab.sessions import messages as base

    readable_path = re.compile(base._SHELL_PATH.pattern.replace(r"(?=[\w.@+~/-]*\.)", "", 1))
    assert readable_path.pattern != base._SHELL_PATH.pattern
    lines = [
        "sed -i s/a/b/ x.py",
        "xsed -i",
        "used -i",
        "echo hi > out.txt",
        "a>b",
        "tee log.md",
        "attee",
        "patch -p1",
        "git  apply d.patch",
        "touch a.py",
        "mvx",
        "cp a.py b.py",
        "scp a b",
        "cat ./src/a.py ~/b.txt ../c.md",
        "ls dir/",
        "python -m x.y",
        "vim a.pyx",
        "rm -rf build",
        "",
        "x=1.py",
        "<a.py",
        "a.b.py(",
    ]
    for dataset, stem in (
        ("mini-swe-agent-pr816", "deepseek_chat_dev_pylint-dev__astroid-1333_"),
        ("claude-code-log", "-src-deep-manifest__a7da6a22"),
    ):
        for session in load_file(bundled(dataset, stem)):
            for message in session.messages:
                for part in message.parts:
                    arguments = part.parsed_arguments() if isinstance(part, ToolCallPart) else None
                    if isinstance(arguments, dict) and isinstance(arguments.get("command"), str):
                        lines.append(arguments["command"].split("\n", 1)[0])
    assert len(lines) > 100
    assert [bool(base._SHELL_WRITES.search(line)) for line in lines] == [
        bool(re.search(READABLE_SHELL_WRITES, line)) for line in lines
    ]
    assert [base._SHELL_PATH.findall(line) for line in lines] == [readable_path.findall(line) for line in lines]
    assert any(base._SHELL_WRITES.search(line) for line in lines) and any(base._SHELL_PATH.findall(line) for line in lines)
