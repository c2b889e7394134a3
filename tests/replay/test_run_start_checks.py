"""`Harness.checks` "run-start": the trigger asked only before a call that starts a prompt run (pi's
`_checkCompaction` points), by the plain replay, the fast path and the preview alike (issue 42)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from compactlab.replay.replay import replay, replay_plain
from compactlab.replay.setting import Setting
from compactlab.replay.uncompacted import run_starts
from compactlab.runs.preview import compact
from compactlab.sessions.importers import load_file
from compactlab.sessions.model import LLMCall, Message, TextPart, ToolCallPart, ToolResultPart
from compactlab.strategies.registry import get_strategy
from compactlab.tokens.context_windows import ContextWindows

SESSION = load_file(Path(__file__).parents[2] / "datasets" / "pi-sessions" / "sessions" / "compact.jsonl.gz")[0]
WINDOW = ContextWindows(overrides={"": 64_000})


def _reply(tool: bool) -> Message:
    parts = (ToolCallPart("c", "read", "{}"),) if tool else (TextPart("done"),)
    return Message("assistant", parts, call=LLMCall("m", 10))


def test_a_run_starts_at_the_first_call_and_after_each_user_prompt_not_after_tool_results_or_instructions() -> None:
    messages = [
        Message("user", (TextPart("task"),)),
        _reply(tool=True),
        Message("tool", (ToolResultPart("c", "out"),)),
        _reply(tool=True),
        Message("tool", (ToolResultPart("c", "out"),)),
        Message("user", (TextPart("AGENTS.md"),), instruction=True),
        _reply(tool=False),
        Message("user", (TextPart("next"),)),
        Message("system", (TextPart("reminder"),)),
        _reply(tool=False),
    ]
    assert run_starts(messages) == (True, False, False, True)


def test_the_trigger_waits_for_the_next_prompt_while_the_overflow_path_does_not() -> None:
    pi = get_strategy("pi")
    every_call = replace(pi, harness=replace(pi.harness, checks="every-call"))
    starts = run_starts(SESSION.messages)
    runs = {}
    for preset in (pi, every_call):
        plain = replay_plain(SESSION, Setting("pi", "pi"), WINDOW, strategy=preset)
        fast = replay(SESSION, Setting("pi", "pi"), WINDOW, strategy=preset)
        assert plain.calls == fast.calls and [r.call for r in plain.compactions] == [r.call for r in fast.compactions]
        runs[preset.harness.checks] = [r for r in plain.compactions if r.event.reason == "threshold"]
    assert runs["run-start"] and all(starts[r.call] for r in runs["run-start"])
    assert not all(starts[r.call] for r in runs["every-call"])  # asked at every call, it fires inside tool loops


def test_the_preview_picks_the_first_run_start_the_trigger_fires_at() -> None:
    preview = compact(SESSION, "pi", windows=WINDOW)
    first = replay_plain(SESSION, Setting("pi", "pi"), WINDOW).compactions[0]
    assert preview.chosen_by == "trigger" and preview.call == first.call and run_starts(SESSION.messages)[preview.call]
