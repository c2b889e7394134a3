"""Issue 41's extractor rules, each on a real shared step where today's extractor went wrong before
it: text a step writes for another reader, the web platform's vocabulary, Windows paths, the year
of a date, and the agent's own tool parameters. (docs/needed-items-labelling.md is the rule.)"""

from __future__ import annotations

from pathlib import Path

from compactlab.scoring.extraction import extract_items
from compactlab.scoring.matching import Item
from compactlab.scoring.preservation import preservation
from compactlab.sessions.importers import load_file
from compactlab.sessions.model import Message, TextPart, ToolCallPart, ToolResultPart


def _step(shared: Path, name: str, index: int) -> tuple[Message, set[str]]:
    [session] = load_file(shared / name, lenient=True)
    message = session.messages[index]
    return message, {item.text for item in extract_items([message])}


def test_a_sub_agent_prompt_is_text_the_step_writes(shared: Path) -> None:
    # Two Task calls brief sub-agents about a Swift app: the names in their prompts are what the step
    # writes for its sub-agents (the extractor found 40 of them, `CGFloat`, `AnyObject`, ...).
    message, items = _step(shared, "m-claude/554b9fa6-f719-40e8-ba70-beee69bd60b5.jsonl", 9)
    assert [p.name for p in message.parts if isinstance(p, ToolCallPart)] == ["Task", "Task"]
    assert not {"CGFloat", "AnyObject", "CGWindowID", "ConfigurationTests"} & items


def test_a_tasks_description_is_written_but_a_commands_is_read() -> None:
    brief = ToolCallPart("1", "Task", '{"description": "Check load_config in app_settings.py", "prompt": "Read it"}')
    command = ToolCallPart("2", "Bash", '{"command": "ls", "description": "List what load_config wrote"}')
    assert extract_items([Message("assistant", (brief,))]) == []
    assert Item("identifier", "load_config") in extract_items([Message("assistant", (command,))])


def test_css_functions_in_an_edits_old_text_are_general_knowledge(shared: Path) -> None:
    # A MultiEdit of the session's tokenizer.js: its old text calls `rgba(` (a CSS colour), beside the
    # session's own functions.
    _, items = _step(
        shared, "claude-code-log/-Users-dain-workspace-danieldemmel-me-next__f852ad25-1024-47da-964e-5eaae5bd6e6a.jsonl", 26
    )
    assert "rgba" not in items
    assert {"addModel", "saveModels", "isValidModelName"} <= items


def test_a_windows_path_is_one_path_not_its_folders(shared: Path) -> None:
    # curl -o "C:\Users\Mischa\AppData\Local\ClaudeCode\claude.ico": was read as `AppData`, `ClaudeCode`, `claude.ico`.
    _, items = _step(shared, "m-claude/8c3b5351-cb5f-4ca6-8d86-9eae3634c81e.jsonl", 17)
    assert "C:\\Users\\Mischa\\AppData\\Local\\ClaudeCode\\claude.ico" in items
    assert not {"AppData", "ClaudeCode", "claude.ico"} & items
    # In prose, with the bracket that closes the sentence left out: "(C:\Windows\MEMORY.DMP)".
    _, items = _step(shared, "m-claude/7fcdbdcd-c55c-4463-b1d1-3a8d85864ad0.jsonl", 1)
    assert {"C:\\Windows\\Minidump", "C:\\Windows\\MEMORY.DMP"} <= items and "MEMORY.DMP" not in items


def test_the_year_of_a_date_is_no_number_of_the_session(shared: Path) -> None:
    # "Session Date: 2026-01-17" in a summary the step writes for the user.
    _, items = _step(shared, "m-claude/21037e11-89de-484d-abba-8705254aa991.jsonl", 286)
    assert "2026" not in items
    assert {"/etc/config/firewall", "/etc/config/gl-dns"} <= items


def test_a_path_after_a_negation_or_an_alias_is_no_fragment() -> None:
    text = "The `.gitignore` keeps !/README.md; the store is imported as @/stores/stream-store.ts from /c/V/!/AGENTS.md"
    items = {item.text for item in extract_items([Message("assistant", (TextPart(text),))])}
    assert "/README.md" not in items and "/stores/stream-store.ts" not in items and "!/README.md" in items
    assert "/c/V/!/AGENTS.md" in items and "/AGENTS.md" not in items


def test_the_agents_tool_parameters_are_not_needed() -> None:
    # Codex's code-mode `exec` names its tool's parameters (`yield_time_ms`); the session passed them
    # to every call, so they are the agent's interface, not a fact of the session.
    call = '{"cmd": "rg -n load_config", "yield_time_ms": 1000}'
    history = (
        Message("user", (TextPart("fix load_config"),)),
        Message("assistant", (ToolCallPart("1", "exec_command", call),)),
        Message("tool", (ToolResultPart("1", "app.py:3: def load_config(): yield_time_ms"),)),
    )
    step = Message("assistant", (TextPart("`load_config` returns early; raise `yield_time_ms` next time"),))
    score = preservation(history, history, (step,), 1)
    assert [i.text for i in score.needed] == ["load_config"]


def test_the_dom_and_reacts_own_names_are_general_knowledge(shared: Path) -> None:
    # An input handler: `event.target.value` reaches the DOM's event, `textInput.style.height` the element's
    # style; the session's own name is `textInput`.
    _, items = _step(
        shared, "claude-code-log/-Users-dain-workspace-danieldemmel-me-next__f852ad25-1024-47da-964e-5eaae5bd6e6a.jsonl", 18
    )
    assert not {"event.target.value", "textInput.style.height"} & items
    _, items = _step(shared, "pai-claude-2/259b058c-bb1a-4998-8d8b-b8962283f8a5.jsonl", 21)
    assert "className" not in items
    _, items = _step(
        shared, "claude-code-log/-Users-dain-workspace-JSSoundRecorder__7acd37a8-2745-4b58-a8a9-46164b22ad9e.jsonl", 31
    )
    assert "devDependencies" not in items


def test_other_libraries_names_that_look_like_the_platforms_stay(shared: Path) -> None:
    # Qt's `QMessageBox.critical(` and `self.style()`, the session's own `self.log(`, Django's `col.target.column`.
    openprintkit = "codex-rollouts/Monotoba__OpenPrintKit/rollout-2025-10-31T19-02-58-c61729d4-da6d-46a4-9a29-ec2c614e5e23.jsonl"
    assert "QMessageBox.critical" in _step(shared, openprintkit, 98)[1]
    assert "self.log" in _step(shared, openprintkit, 120)[1]
    later = "codex-rollouts/Monotoba__OpenPrintKit/rollout-2025-11-01T11-34-37-97b66f6c-a160-40e0-bd0f-1fdcbbb9498b.jsonl"
    assert "self.style" in _step(shared, later, 511)[1]
    django = "mini-swe-agent-pr816/deepseek_chat_test_1-100_django__django-14997_django__django-14997.traj.json"
    [session] = load_file(shared / django, lenient=True)
    assert "col.target.column" in {i.text for i in extract_items([session.messages[92]])}


def test_a_process_objects_methods_name_the_variable(shared: Path) -> None:
    # `autopilotProcess.kill(`: the method is subprocess's (Node's ChildProcess has the same); the item is the variable.
    _, items = _step(shared, "pai-claude-2/4b85f137-9b0d-418e-8870-6de8cea01765.jsonl", 434)
    assert "autopilotProcess.kill" not in items


def test_a_relative_backslash_path_is_one_path(shared: Path) -> None:
    # astroid's Windows-path test data: `src\project\__init__.py`, which was read as `__init__.py`.
    name = "mini-swe-agent-pr816/deepseek_chat_dev_pylint-dev__astroid-1333_pylint-dev__astroid-1333.traj.json"
    [session] = load_file(shared / name, lenient=True)
    items = {i.text for i in extract_items([session.messages[62]])}
    assert "src\\project\\__init__.py" in items


def test_a_windows_folder_with_a_bracketed_number_stays_in_its_path() -> None:
    text = "open c:/Games/Editor(2024)/Saved/Logs/run.log and C:\\Games\\Editor(2024)\\x.lua"
    items = {i.text for i in extract_items([Message("assistant", (TextPart(text),))])}
    assert items == {"c:/Games/Editor(2024)/Saved/Logs/run.log", "C:\\Games\\Editor(2024)\\x.lua"}


def test_a_library_named_like_a_file_is_needed_only_as_a_file(shared: Path) -> None:
    # "Next.js" in prose is the framework; a `Button.js` the history shows below a folder is a file.
    history = (
        Message("user", (TextPart("the app uses Next.js; see src/Button.js"),)),
        Message("assistant", (TextPart("ok"),)),
    )
    step = Message("assistant", (TextPart("Next.js renders Button.js here"),))
    score = preservation(history, history, (step,), 1)
    assert [i.text for i in score.needed] == ["Button.js"]
    # On a real step: the framework named in prose is not needed.
    name = "claude-code-log/-Users-dain-workspace-danieldemmel-me-next__9e953218-585f-4692-89df-9e0747a31c68.jsonl"
    [session] = load_file(shared / name, lenient=True)
    from compactlab.scoring.preservation import needed_items

    needed = needed_items(session.messages, 139, (1,))[1] or ()
    assert "Next.js" not in {i.text for i in needed}
