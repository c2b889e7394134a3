"""Next-step preservation: crafted cases with known answers (real recorded sessions: test_preservation_on_real_sessions.py)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from compactlab.scoring.extraction import extract_items, step_items
from compactlab.scoring.matching import Haystack, Item, SessionText, present
from compactlab.scoring.preservation import preservation
from compactlab.sessions.messages import summary_message
from compactlab.sessions.model import Message, TextPart, ThinkingPart, ToolCallPart, ToolResultPart

_calls = iter(range(10_000))


def system(text: str = "You are a coding agent.") -> Message:
    return Message("system", (TextPart(text),))


def user(text: str) -> Message:
    return Message("user", (TextPart(text),))


def say(text: str, thinking: str | None = None) -> Message:
    parts = ((ThinkingPart(thinking),) if thinking else ()) + (TextPart(text),)
    return Message("assistant", parts)


def call(name: str, text: str = "", **arguments: object) -> Message:
    parts = ((TextPart(text),) if text else ()) + (ToolCallPart(f"call_{next(_calls)}", name, json.dumps(arguments)),)
    return Message("assistant", parts)


def bash(command: str, text: str = "") -> Message:
    return call("bash", text, command=command)


def result(output: str, call_id: str = "call_x") -> Message:
    return Message("tool", (ToolResultPart(call_id, output),))


def texts(items: Sequence[Item], kind: str | None = None) -> list[str]:
    return [i.text for i in items if kind is None or i.kind == kind]


# --- crafted cases -------------------------------------------------------------------------------

HISTORY = [
    system(),
    user("Fix the crash in the parser."),
    bash("grep -rn parse_header /testbed/src"),
    result("/testbed/src/pkg/headers.py:42:def parse_header(raw):"),
]
NEXT_READ = [bash("cat /testbed/src/pkg/headers.py")]


def test_a_path_seen_only_in_a_dropped_tool_result_is_lost() -> None:
    score = preservation(HISTORY, [HISTORY[0], HISTORY[1]], NEXT_READ, k=1)
    assert texts(score.needed) == ["/testbed/src/pkg/headers.py"]
    assert score.kept == ()
    assert texts(score.lost) == ["/testbed/src/pkg/headers.py"]
    assert score.score == 0.0


def test_the_same_path_named_in_the_summary_is_kept() -> None:
    compacted = [HISTORY[0], summary_message("The crash is in /testbed/src/pkg/headers.py, parse_header."), HISTORY[1]]
    score = preservation(HISTORY, compacted, NEXT_READ, k=1)
    assert texts(score.kept) == ["/testbed/src/pkg/headers.py"]
    assert score.lost == () and score.score == 1.0


def test_a_step_with_nothing_to_rely_on_is_not_applicable() -> None:
    score = preservation(HISTORY, HISTORY[:1], [say("Done.")], k=1)
    assert score.needed == () and score.score is None


def test_items_absent_from_the_history_are_not_needed() -> None:
    # The step invents a new file and names a function nobody mentioned: nothing to preserve.
    step = bash("touch /testbed/src/pkg/new_module.py", "I'll add `build_index` in a new module.")
    assert texts(extract_items([step])) == [
        "build_index",
        "touch /testbed/src/pkg/new_module.py",
        "/testbed/src/pkg/new_module.py",
    ]
    assert preservation(HISTORY, HISTORY[:1], [step], k=1).score is None
    # Mixed: only the part the history knows is needed.
    mixed = bash("diff /testbed/src/pkg/headers.py /testbed/src/pkg/new_module.py")
    assert texts(preservation(HISTORY, HISTORY[:1], [mixed], k=1).needed) == ["/testbed/src/pkg/headers.py"]


def test_k_aggregates_the_next_k_assistant_steps_and_ignores_tool_results() -> None:
    history = [system(), user("a.py b.py c.py d.py e.py f.py are the files; see ValueError in g.py")]
    future: list[Message] = []
    for name in "abcdef":
        future += [bash(f"cat {name}.py"), result("mentions g.py and ValueError")]
    one, five = preservation(history, history[:1], future, 1), preservation(history, history[:1], future, 5)
    assert texts(one.needed) == ["a.py"]
    assert texts(five.needed) == ["a.py", "b.py", "c.py", "d.py", "e.py"]  # not f.py, nor g.py from results
    assert five.score == 0.0
    assert preservation(history, history, future, 5).score == 1.0
    # Near the end of a session there may be fewer than k steps: the ones there are count.
    assert texts(preservation(history, history[:1], future[-2:], 5).needed) == ["f.py"]


def test_tool_call_ids_and_json_keys_are_never_items() -> None:
    step = Message(
        "assistant",
        (
            ToolCallPart(
                "toolu_01ABCdefGHI_jkl", "Read", json.dumps({"file_path": "/repo/app/main.py", "offset": 670, "limit": 200})
            ),
        ),
    )
    history = [user("toolu_01ABCdefGHI_jkl file_path offset limit /repo/app/main.py 670 200")]
    items = extract_items([step])
    assert items == [Item("path", "/repo/app/main.py"), Item("number", "670")]  # no id, no keys, no limit
    assert preservation(history, [], [step], 1).needed == tuple(items)


def test_error_names_and_urls() -> None:
    step = say(
        "The run fails with `TypeError: unsupported operand` and a `KeyError` in the loader; "
        "the docs at https://docs.python.org/3/library/json.html, say so."
    )
    items = extract_items([step])
    assert [(i.kind, i.text) for i in items] == [
        ("error", "TypeError"),
        ("error", "KeyError"),
        ("url", "https://docs.python.org/3/library/json.html"),
    ]
    history = [result("Traceback ... TypeError: x\nKeyError: 'a'\nsee HTTPS://DOCS.PYTHON.ORG/3/library/json.html")]
    score = preservation(history, [user("keyerror happened")], [step], 1)
    assert texts(score.needed) == ["TypeError", "KeyError", "https://docs.python.org/3/library/json.html"]
    assert score.kept == ()  # error names are case-sensitive whole words
    assert present(items[2], "Read https://Docs.Python.org/3/library/json.html")  # URLs are not


def test_numbers_line_ranges_versions_and_what_is_not_a_number() -> None:
    step = bash(
        "sed -n '670,690p' src/app.py | head -100 && tail -n 250 log.txt", "Lines 670-690 (see #4312, Python 3.11, v2.0.1)."
    )
    numbers = texts(extract_items([step]), "number")
    assert numbers == ["670", "690", "4312", "3.11", "2.0.1"]  # not head -100, tail -n 250, or 2-digit numbers
    assert texts(extract_items([bash("git log -n 500 --timeout=300 ticket-9876")]), "number") == []
    # Whole numbers only: 670 is not kept by 1670 or 6701, 3.11 not by 3.11.2.
    assert present(Item("number", "670"), "app.py:670:def run():")
    assert not present(Item("number", "670"), "took 1670 ms, id 6701")
    assert not present(Item("number", "3.11"), "Python 3.11.2")
    assert present(Item("number", "2.0.1"), "release v2.0.1")
    history = [result("src/app.py:670:    def crash(self):")]
    score = preservation(history, [], [step], 1)
    assert texts(score.needed) == ["670", "src/app.py"] and score.score == 0.0


def test_path_prefix_rule() -> None:
    path = Item("path", "/testbed/src/x/y.py")
    assert present(path, "edited src/x/y.py")  # another root, same directory and file
    assert present(path, "see x/y.py:12")  # one directory and the file name are enough
    assert not present(path, "see y.py")  # a bare file name is not
    assert not present(path, "see src/x/y.pyc or /testbed/src/xx/y.py")
    assert present(Item("path", "src/x/y.py"), "cat /testbed/src/x/y.py")  # and the other way round
    assert present(Item("path", "/testbed/src/x"), "/testbed/src/x/y.py")  # a directory inside a longer path
    assert texts(extract_items([bash("python ./scripts/run.py")]), "path") == ["scripts/run.py"]


def test_commands_are_first_lines_normalised_and_heredocs_are_not_commands() -> None:
    items = extract_items([bash("cd /testbed &&  python   -m pytest tests/test_a.py::TestA::test_b -x\necho more")])
    assert [(i.kind, i.text) for i in items] == [
        ("command", "python -m pytest tests/test_a.py::TestA::test_b -x"),
        ("identifier", "tests/test_a.py::TestA::test_b"),
        ("path", "tests/test_a.py"),
    ]
    assert present(items[0], "$ python -m pytest\n   tests/test_a.py::TestA::test_b   -x")
    heredoc = extract_items([bash("cat > /tmp/fix.py << 'EOF'\nimport secret_module\nEOF")])
    assert heredoc == []  # the file a heredoc writes is produced, like its body (issue 27 §2)
    assert texts(extract_items([bash('python -c "\nimport foo_bar\nprint(1)\n"')])) == []


def test_identifiers_are_code_like_and_common_words_are_not() -> None:
    step = say(
        "Now the `resolve_expression` method of WhereNode calls compiler.compile(node) and then "
        "applyFilters(); this is the Data path for the Server and its URLs via `self`.",
        thinking="Check file(s) with GitHub and JavaScript for os.path.join usage in `helpers` and `__dict__`.",
    )
    items, weak = step_items([step])
    # Standard-library and protocol names are general knowledge (os.path.join, __dict__); upper
    # camel case prose words need the history to show them as code (below).
    assert texts(items) == [
        "helpers",
        "GitHub",
        "JavaScript",
        "resolve_expression",
        "WhereNode",
        "compiler.compile",
        "applyFilters",
    ]
    assert weak == {"GitHub", "JavaScript", "WhereNode"}


def test_prose_names_count_only_when_the_history_uses_them_as_code() -> None:
    history = [user("We route traffic through WireGuard."), result("class WhereNode(tree.Node):\n    pass")]
    step = say("WireGuard is up; WhereNode needs a fix and `TodoWrite` is a tool.")
    tools = [Message("assistant", (ToolCallPart("c1", "TodoWrite", "{}"),)), user("TodoWrite")]
    assert texts(preservation([*history, *tools], [], [step], 1).needed) == ["WhereNode"]


def test_what_a_step_writes_is_never_needed_whatever_wraps_it() -> None:
    history = [user("settings.configure TIME_ZONE django.conf sphinx/ext/a.py old_name keep_me new_name sc_auth")]
    heredoc = "python - <<'PY'\nfrom django.conf import settings\nsettings.configure(TIME_ZONE='UTC')\nPY"
    v1 = Message("assistant", (TextPart(f"THOUGHT: try it.\n\n```bash\n{heredoc}\n```"),))
    unclosed = Message("assistant", (TextPart(f"THOUGHT: `keep_me` matters.\n```bash\n{heredoc}"),))
    printf = bash("printf 'new_name = 1' > out/new_file.py && sc_auth list")
    patch = "*** Begin Patch\n*** Update File: sphinx/ext/a.py\n@@\n-old_name = 1\n+new_name = 2\n keep_me()\n*** End Patch"
    codex = call("shell", command=["apply_patch", patch])
    raw = Message("assistant", (ToolCallPart("c2", "apply_patch", patch),))
    todo = call("TodoWrite", todos=[{"content": "Fix old_name", "status": "pending", "activeForm": "Fixing keep_me"}])
    assert texts(preservation(history, [], [v1], 1).needed) == []
    assert texts(preservation(history, [], [unclosed], 1).needed) == ["keep_me"]
    assert texts(preservation(history, [], [printf], 1).needed) == []
    for step in (codex, raw):
        assert texts(preservation(history, [], [step], 1).needed) == ["sphinx/ext/a.py", "old_name", "keep_me"]
    assert texts(preservation(history, [], [todo], 1).needed) == []


def test_general_commands_placeholders_and_display_limits_are_not_items() -> None:
    history = [user("git status -sb, pytest -q, [REDACTED_IP], 200 lines, 623 messages, sed -n '1,200p' a.py")]
    steps = [
        bash("git status -sb"),
        bash("pytest -q"),
        bash('ssh root@[REDACTED_IP] "uptime"'),
        bash("sed -n '1,200p' a.py"),
        say("There are 6,623 messages and `[REDACTED_IP]` hosts."),
    ]
    assert [texts(preservation(history, [], [s], 1).needed) for s in steps] == [[], [], [], ["sed -n '1,200p' a.py", "a.py"], []]


def test_edits_give_the_old_text_and_not_the_new_one() -> None:
    step = call(
        "Edit",
        file_path="/r/app.py",
        old_string="def load_config(path):\n    return Config(path)",
        new_string="def read_settings(): ...",
    )
    assert texts(extract_items([step])) == ["/r/app.py", "load_config", "Config"]


def test_a_command_split_across_two_messages_is_found_as_the_joined_text_has_it() -> None:
    messages = (user("run the tests"), say("I will run pytest -x"), say("tests/test_a.py   now"), say("done"))
    index = SessionText(messages)
    command = Item("command", "pytest -x tests/test_a.py")
    assert present(command, Haystack.of(messages[:3])) and not present(command, Haystack.of(messages[:2]))
    assert index.in_history(command, 3) and not index.in_history(command, 2)
    assert index.in_context([command], messages[1:3]) == [True]
    assert index.in_context([command], messages[2:]) == [False]
    # An item only a new message (a summary) holds counts as kept.
    path = Item("path", "src/app/views.py")
    assert index.in_context([path], (summary_message("edited src/app/views.py"), *messages[2:])) == [True]
