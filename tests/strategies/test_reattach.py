"""What Claude Code re-attaches after compacting, and the fidelity it buys at the real compactions."""

from __future__ import annotations

import json

from compactlab.contract import CompactionRequest, Context
from compactlab.replay.prompt_size import measured_ratio, measured_size
from compactlab.replay.replay import replay
from compactlab.replay.setting import Setting
from compactlab.results.metrics import compactions_frame, recorded_fidelity
from compactlab.sessions.context_readings import context_reading
from compactlab.sessions.importers import load_file
from compactlab.sessions.messages import summary_message
from compactlab.sessions.model import ImagePart, Message, TextPart, ToolCallPart, ToolResultPart
from compactlab.strategies.file_states import file_states, latest_todos
from compactlab.strategies.reattach import MAX_FILES, ReattachRules, reattach
from compactlab.strategies.registry import get_strategy
from compactlab.tokens.context_windows import ContextWindows
from compactlab.tokens.metering import Meter
from tests.conftest import bundled

AUTO = load_file(bundled("m-claude", "3af9b1a7"), lenient=True)[0]
MANUAL = load_file(bundled("m-claude", "97b0ffde"), lenient=True)[0]


def fidelity(session, **settings) -> float:
    config = Setting("recorded", "recorded", tuple(settings.items()))
    frame = recorded_fidelity(compactions_frame(replay(session, config, ContextWindows()).compactions))
    assert len(frame) == 1
    return float(frame.loc[0, "relative_error"])


def test_the_auto_compaction_gets_the_newest_read_files_and_the_todo_list() -> None:
    history = AUTO.messages[: AUTO.compactions[0].at_message]
    extra = reattach(history, lambda text: len(text) / 4, rules=ReattachRules(created_files=False, newest="touched"))
    assert [f.rsplit("/", 1)[-1] for f in extra.files] == [
        "pre-commit",
        ".gitleaks.toml",
        ".gitignore",
        "test.yml",
        "b9dd1a1.output",
    ]
    assert len(extra.files) == MAX_FILES and extra.partial == (extra.files[3],)  # test.yml was read with limit=30
    # The todo list is the last TodoWrite's, the one the agent's first step after the compaction updates.
    last = next(
        json.loads(p.arguments)["todos"]
        for m in reversed(history)
        for p in m.parts
        if isinstance(p, ToolCallPart) and p.name == "TodoWrite"
    )
    assert extra.todos == len(last) == 8
    assert json.dumps(last) in extra.messages[-1].text()
    # The re-attached .gitleaks.toml is the content the session last wrote, as the Read tool shows it.
    toml = file_states(history)[extra.files[1]]
    assert toml.raw.startswith("# Gitleaks Configuration for M-Claude Repository - MAXIMUM STRICTNESS")
    [attached] = [m for m in extra.messages if m.source_id and m.source_id.endswith(extra.files[1])]
    assert "     1→# Gitleaks Configuration" in attached.text()


def test_created_files_count_when_the_file_limit_counts_their_own_text() -> None:
    """The shipped rules (chosen leave-one-session-out over every shared real Claude Code compaction):
    created files are candidates, and the 5,000-token limit counts a file's own text by the Claude
    fit, so two of the four documents the session created near the limit are left out."""
    history = AUTO.messages[: AUTO.compactions[0].at_message]
    extra = reattach(history, Meter(AUTO, "hybrid").text_counter())
    names = [f.rsplit("/", 1)[-1] for f in extra.files]
    assert names == ["HISTORY-REWRITE-PLAN.md", "pre-commit", ".gitleaksignore", ".gitleaks.toml"]
    assert [f.rsplit("/", 1)[-1] for f in extra.over_file_limit] == ["GITLEAKS-MAX-STRICT.md"]
    # At the session's ratio the same document passes the limit: what the prompt gains is not what the Read tool counts.
    by_prompt = reattach(history, lambda text: len(text) / 4)
    assert "GITLEAKS-MAX-STRICT.md" in [f.rsplit("/", 1)[-1] for f in by_prompt.files]


def test_the_bundled_real_compactions_are_predicted_within_five_percent() -> None:
    # 3af9b1a7: without re-attachment the prediction was 24,405 against 32,473 recorded (-24.8%);
    # with it (read files only) and the summary sized at the session's ratio, -4.0%. The shipped rules
    # re-attach one created document too (+10.5%): the agent's next turn names none of them, but the
    # other shared compactions choose the rule (`python -m tests.scripts.real_compactions`).
    assert 0.05 < fidelity(AUTO) < 0.11
    assert abs(fidelity(AUTO, created_files=False)) < 0.05
    # 97b0ffde: a manual /compact with no call after it; Claude Code's /context reading (19.5k) is the
    # truth. The session read no files and kept no todo list, so nothing is re-attached: the error
    # is the summary's size. The Claude fit sizes it at 1,620 tokens (/context: 1.5k for the messages).
    assert abs(fidelity(MANUAL)) < 0.05


def test_the_session_ratio_would_size_the_manual_summary_too_high() -> None:
    # The ratio measured on 97b0ffde's history (2.05 provider tokens per chars/4 token over 58 short
    # tool calls) applied to the summary, as before summaries were sized apart, misses the goal (+5.5%).
    at = MANUAL.compactions[0].at_message
    meter = Meter(MANUAL, "hybrid")
    summary = summary_message(MANUAL.compactions[0].summary)
    written = meter.written((summary,))
    last = max(i for i, m in enumerate(MANUAL.messages[:at]) if m.call is not None)
    ratio = measured_ratio(
        MANUAL.messages[last].call.prompt_tokens, meter.offset, sum(map(meter.message_tokens, MANUAL.messages[:last]))
    )
    assert ratio > 2
    at_ratio = measured_size(meter.offset, written.estimate, ratio)
    by_fit = measured_size(meter.offset, written.estimate, ratio, written)
    assert at_ratio / 19_500 - 1 > 0.05 > abs(by_fit / 19_500 - 1)


def test_context_reading_sums_the_parts_of_the_prompt() -> None:
    [message] = [m for m in MANUAL.messages[MANUAL.compactions[0].at_message :] if "Context Usage" in m.text()]
    assert context_reading(message.text()) == 2_900 + 15_100 + 1_500  # free space is not in the prompt
    assert context_reading("Context Usage, but no parts") is None and context_reading("hello") is None


def read(path: str, content: str, call_id: str, **arguments) -> tuple[Message, Message]:
    call = ToolCallPart(call_id, "Read", json.dumps({"file_path": path, **arguments}))
    numbered = "\n".join(f"{n:>6}→{line}" for n, line in enumerate(content.split("\n"), 1))
    return Message("assistant", (call,)), Message("tool", (ToolResultPart(call_id, numbered),))


def tool(name: str, call_id: str, result: str = "ok", is_error: bool = False, **arguments) -> tuple[Message, Message]:
    return Message("assistant", (ToolCallPart(call_id, name, json.dumps(arguments)),)), Message(
        "tool", (ToolResultPart(call_id, result, is_error),)
    )


def test_edits_limits_exclusions_and_a_second_compaction() -> None:
    history = (
        *read("/p/a.py", "x = 1\ny = 2", "1"),
        *tool("Edit", "2", file_path="/p/a.py", old_string="y = 2", new_string="y = 3"),
        *tool("MultiEdit", "3", file_path="/p/a.py", edits=[{"old_string": "x = 1", "new_string": "x = 0"}]),
        *read("/p/big.md", "word " * 30_000, "4"),
        *read("/p/CLAUDE.md", "rules", "5"),
        *tool("Write", "6", file_path="/p/new.md", content="created here"),
        *read("/p/empty.py", "", "7"),
        *tool(
            "Read", "7b", result="<tool_use_error>File does not exist.</tool_use_error>", is_error=True, file_path="/p/gone.py"
        ),
        *tool(
            "Edit",
            "8",
            result="<tool_use_error>String to replace not found</tool_use_error>",
            is_error=True,
            file_path="/p/a.py",
            old_string="nope",
            new_string="never",
        ),
        *tool("TodoWrite", "9", todos=[{"content": "ship", "status": "pending"}]),
        *tool("TodoWrite", "10", result="failed", is_error=True, todos=[]),
    )
    extra = reattach(history, lambda text: len(text) / 4)
    # Files the session wrote or edited first (their modification time is the newest), then files it only
    # read, newest first; CLAUDE.md is not a candidate.
    assert extra.files == ("/p/new.md", "/p/a.py", "/p/empty.py")
    assert extra.over_file_limit == ("/p/big.md",)  # 37,500 tokens: the Read tool refuses it, nothing is cut
    assert file_states(history)["/p/a.py"].raw == "x = 0\ny = 3"  # both edits applied, the failed one not
    assert latest_todos(history) == [{"content": "ship", "status": "pending"}]  # a failed TodoWrite changes nothing
    assert "over the 5,000-token file limit" in extra.note() and "the todo list (1 items)" in extra.note()
    # A second compaction sees the first one's re-attachments as what the session last saw.
    again = reattach((Message("user", (TextPart("summary"),)), *extra.messages), lambda text: len(text) / 4)
    assert again.files == extra.files and again.todos == 1  # in the order the session touched them
    assert file_states(extra.messages)["/p/a.py"].raw == "x = 0\ny = 3"


def test_the_claude_code_preset_reattaches_after_its_summary() -> None:
    history = AUTO.messages[: AUTO.compactions[0].at_message]
    meter = Meter(AUTO, "hybrid")
    request = CompactionRequest(reason="threshold", window=200_000, target_tokens=100_000, count_tokens=meter.count)
    result = get_strategy("claude-code").compact(Context(messages=history), request)
    assert "re-attached 5 file(s)" in result.note and "the todo list (8 items)" in result.note
    assert result.context.messages[-1].source_id == "compactlab:reattached:todo"
    # The recorded strategy without re-attachment is the bare summary (the setting exists to compare).
    bare = get_strategy("recorded", summary="s", reattach=False).compact(Context(messages=history), request)
    assert len(bare.context.messages) == 1


def test_a_multiedit_with_an_edit_that_is_not_an_object_leaves_the_file_known_only_in_part() -> None:
    # A malformed MultiEdit (its `edits` a list of strings) that reported success: the edit cannot be
    # applied, so what is known of the file is what the session saw before (it raised AttributeError).
    history = AUTO.messages[: AUTO.compactions[0].at_message]
    path = reattach(history, lambda text: len(text) / 4).files[1]  # known whole before the edit
    before = file_states(history)[path]
    after = file_states((*history, *tool("MultiEdit", "bad", file_path=path, edits=["not an edit"])))[path]
    assert before.raw is not None and not before.partial
    assert after.raw is None and after.partial and after.shown == before.shown


def test_a_partial_read_after_a_write_keeps_the_whole_content() -> None:
    write = tool("Write", "1", file_path="/p/w.py", content="a\nb\nc\nd")
    history = (*write, *read("/p/w.py", "a\nb", "2", limit=2))
    state = file_states(history)["/p/w.py"]
    assert state.raw == "a\nb\nc\nd" and not state.partial
    # A limit from the top that the file ended before is the whole file; one the file filled is not.
    assert file_states(read("/p/s.py", "x\ny", "3", limit=10))["/p/s.py"].raw == "x\ny"
    assert file_states(read("/p/s.py", "x\ny", "3", limit=2))["/p/s.py"].partial


def test_an_image_read_is_reattached_as_an_image() -> None:
    image = ImagePart("image/png", 40_000, width=1500, height=1000)
    call = ToolCallPart("i", "Read", json.dumps({"file_path": "/p/shot.png"}))
    history = (Message("assistant", (call,)), Message("tool", (ToolResultPart("i", ""), image)))
    extra = reattach(history, lambda text: len(text) / 4)
    assert extra.files == ("/p/shot.png",) and image in extra.messages[0].parts
    meter = Meter(AUTO, "hybrid")  # a Claude Code session: Anthropic's image formula, about width×height/750
    assert meter.message_tokens(extra.messages[0]) > 1500 * 1000 / 750 * 0.9


def test_the_plan_is_the_last_approved_exit_plan_mode() -> None:
    approved = "User has approved your plan.\n\nYour plan has been saved to: /u/.claude/plans/p.md\n"
    history = (
        *read("/u/.claude/plans/p.md", "old plan\nline 2", "1", limit=1),
        *tool("ExitPlanMode", "2", result=approved, plan="# The plan\n\nall of it"),
    )
    extra = reattach(history, lambda text: len(text) / 4)
    assert extra.plan == "/u/.claude/plans/p.md" and "# The plan\n\nall of it" in extra.messages[-1].text()
