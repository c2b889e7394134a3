"""Next-step preservation on real recorded sessions: what a reader would extract from real steps, a full
history keeping everything, the session index and the fast patterns agreeing with plain searches on real
text. The crafted cases with known answers are in test_preservation.py."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from compactlab.scoring.extraction import extract_items
from compactlab.scoring.matching import Haystack, Item, SessionText, present
from compactlab.scoring.preservation import preservation
from compactlab.sessions.importers import load_file
from compactlab.sessions.messages import FILE_EXTENSIONS, leading_system, summary_message
from compactlab.sessions.model import Message, TextPart, ThinkingPart, ToolCallPart, ToolResultPart
from tests.conftest import bundled


def _load(dataset: str, stem: str):
    return load_file(bundled(dataset, stem))[0]


def _step_with(messages: Sequence[Message], needle: str) -> Message:
    return next(m for m in messages if m.role == "assistant" and needle in m.text())


@pytest.fixture(scope="module")
def django() -> tuple[Message, ...]:
    return _load("mini-swe-agent-pr816", "deepseek_chat_test_1-100_django__django-15213").messages


@pytest.fixture(scope="module")
def claude_code() -> tuple[Message, ...]:
    return _load("claude-code-log", "-Users-dain-workspace-claude-code-log-sample__37f83ec9").messages


def test_real_mini_swe_agent_steps_extract_what_a_reader_would(django: tuple[Message, ...]) -> None:
    grep = extract_items([_step_with(django, 'grep -n \\"class Q\\" /testbed/django/db/models/query_utils.py')])
    assert Item("path", "/testbed/django/db/models/query_utils.py") in grep
    pytest_run = extract_items([_step_with(django, "tests/annotations/tests.py::AnnotationTest")])
    assert Item("identifier", "tests/annotations/tests.py::AnnotationTest::test_empty_expression_annotation") in pytest_run
    assert Item("path", "tests/annotations/tests.py") in pytest_run
    sed = extract_items([_step_with(django, "sed -n '981,983p'")])
    assert [(i.kind, i.text) for i in sed] == [
        ("command", "sed -n '981,983p' /testbed/django/db/models/expressions.py"),
        ("number", "981"),
        ("number", "983"),
        ("path", "/testbed/django/db/models/expressions.py"),
    ]
    prose = extract_items([_step_with(django, "Look at line 417")])
    assert {Item("number", "417"), Item("identifier", "EmptyResultSet"), Item("identifier", "pk__in")} <= set(prose)
    assert not any(i.text.startswith("call_") for m in django for i in extract_items([m]))


def test_real_claude_code_steps_extract_what_a_reader_would(claude_code: tuple[Message, ...]) -> None:
    read = extract_items([_step_with(claude_code, '"offset": 657')])
    assert read == [Item("path", "/Users/dain/workspace/claude-code-log/claude_code_log/renderer.py"), Item("number", "657")]
    explain = extract_items([_step_with(claude_code, "## `_get_enhanced_session_navigation`")])
    assert Item("identifier", "_get_enhanced_session_navigation") in explain
    grep = extract_items([_step_with(claude_code, "Let me find the template.render call:")])
    assert [i.text for i in grep] == ["combined_transcript_link", "template.render", "claude_code_log/renderer.py"]
    assert not any(i.text.startswith("toolu_") for m in claude_code for i in extract_items([m]))


@pytest.mark.parametrize("session", ["django", "claude_code"])
def test_real_sessions_full_history_keeps_everything_and_system_prompt_alone_loses(session: str, request) -> None:
    messages: tuple[Message, ...] = request.getfixturevalue(session)
    system_only = messages[: leading_system(messages)]
    bare_scores: list[float] = []
    for cut in range(4, len(messages), 9):
        history, future = messages[:cut], messages[cut:]
        for k in (1, 5):
            full = preservation(history, history, future, k)
            assert full.score in (None, 1.0) and full.lost == ()
            if full.score is not None:
                bare = preservation(history, system_only, future, k)
                assert bare.needed == full.needed and bare.score is not None
                assert set(bare.lost) | set(bare.kept) == set(full.needed)
                bare_scores.append(bare.score)
    assert len(bare_scores) >= 10
    assert sum(bare_scores) / len(bare_scores) < 0.5  # the system prompt alone keeps little
    middle = next(
        c
        for c in range(len(messages) // 2, len(messages))
        if messages[c].role == "assistant" and preservation(messages[:c], messages[:c], messages[c:], 5).score
    )
    lost = preservation(messages[:middle], system_only, messages[middle:], 5)
    assert lost.score is not None and lost.score < 1.0 and lost.lost


@pytest.mark.parametrize("session", ["django", "claude_code"])
def test_the_session_index_answers_as_a_search_of_the_joined_text(session: str, request) -> None:
    # SessionText searches a session's text once per item; scoring must not change by it.
    messages: tuple[Message, ...] = request.getfixturevalue(session)
    index = SessionText(messages)
    items = list(dict.fromkeys(i for m in messages if m.role == "assistant" for i in extract_items([m])))
    assert len(items) > 40 and {i.kind for i in items} >= {"path", "identifier", "command", "number"}
    checked = 0
    for cut in range(3, len(messages), max(1, len(messages) // 5)):
        history = Haystack.of(messages[:cut])
        summary = summary_message("Kept: " + ", ".join(i.text for i in items[::5]))
        context = (*messages[: leading_system(messages)], summary, *messages[cut // 2 : cut])
        whole = Haystack.of(context)
        for item, answer in zip(items, index.in_context(items, context)):
            assert index.in_history(item, cut) == present(item, history), (item, cut)
            assert answer == present(item, whole), (item, cut)
            checked += answer
    assert checked > 100


def _assistant_texts(messages: Sequence[Message]) -> list[str]:
    return [p.text for m in messages if m.role == "assistant" for p in m.parts if isinstance(p, (TextPart, ThinkingPart))]


@pytest.mark.parametrize("session", ["django", "claude_code"])
def test_the_identifier_prefilter_finds_every_token_the_full_scan_accepts(session: str, request) -> None:
    # _scan visits only _CANDIDATE tokens; it must find exactly what visiting every _TOKEN finds.
    from compactlab.scoring.extraction import _CANDIDATE, _TOKEN, _is_identifier

    def accepted(pattern, text: str) -> list[tuple[int, str]]:
        return [
            (m.start(), m.group(0)) for m in pattern.finditer(text) if _is_identifier(m.group(0), text[m.end() : m.end() + 1])
        ]

    texts = _assistant_texts(request.getfixturevalue(session))
    texts += ["self.x_y CamelCase call( __init__ _private a.b.c e.g. URLs plain words ünïcode_x Ärger fooBar"]
    found = 0
    for text in texts:
        full = accepted(_TOKEN, text)
        assert accepted(_CANDIDATE, text) == full
        found += len(full)
    assert found > 50


@pytest.mark.parametrize("session", ["django", "claude_code"])
def test_the_open_quote_check_agrees_with_shlex_on_real_commands(session: str, request) -> None:
    import shlex

    from compactlab.scoring.shell_lines import _SHELL_WORDS, command_line

    def shlex_accepts(line: str) -> bool:
        try:
            shlex.split(line)
        except ValueError:
            return False
        return True

    lines = [
        command_line(arguments["command"])
        for m in request.getfixturevalue(session)
        for p in m.parts
        if isinstance(p, ToolCallPart)
        if isinstance(arguments := p.parsed_arguments(), dict) and isinstance(arguments.get("command"), str)
    ]
    lines += ['python -c "import os', "echo 'it''s'", 'echo "a \\" b"', "echo a\\", "echo 'a\\' b", 'grep -n "x\\\\" f']
    assert len(lines) > 20
    for line in filter(None, lines):
        assert (_SHELL_WORDS.fullmatch(line) is not None) == shlex_accepts(line), line


# The extraction patterns as they read (compactlab.scoring.preservation writes them to start with the character
# they need, which Python's regular expressions scan to quickly): they must find the same items.
READABLE_NUMBER = r"(?:(?<=\bv)|(?<![\w.]))(?:\d+(?:\.\d+)+|\d{3,})(?!(?!p\b)\w|\.\d|-\d\d-\d)"
READABLE_ERROR = r"(?<![\w.])[A-Z]\w*(?:Error|Exception|Warning)(?!\w)|\b(?:StopIteration|KeyboardInterrupt|SystemExit)\b"
READABLE_CANDIDATE = r"(?<![\w.$@/-])(?=_|[A-Za-z]\w*?[_A-Z]|[A-Za-z]\w*\.[A-Za-z_]|[A-Za-z]\w*\()[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*"
READABLE_PATH = (  # without the lookahead for a `.` or `/` that every kind of path holds
    r"(?<![\w.$\]!@-])(?:(?:[A-Za-z]:)?/(?:[\w.@+!-]+(?:\([\w.-]+\))?/)+[\w.@+-]+/?|(?:~|\.{1,2})?/?(?:[\w.@+!-]+/)*[\w@+-]+\.(?:"
    + FILE_EXTENSIONS
    + r")(?![\w/(])"
    r"|(?:~|\.{1,2})/[\w.@+/-]+)"
)
CRAFTED = [
    "2026-04-12 2026-4 !/README.md @/stores/x.ts C:/Users/a/b.md /c/V/!/A.md x:/y/z.py 3f3:.obsidian/a.json c:/a/b(12)/c.lua f(x)/y",
    "v1.2 av1.2 v12 1.2.3 3.11 3.11.2 956 1956 django-15213 100px 670,690p 12 .123 x.123 a123 _123 ٣٤٥ 1.2.",
    "ValueError x.ValueError _ValueError MyError2 StopIteration xStopIteration StopIterationX KeyboardInterrupt",
    "SystemExit: a.SystemExit (SystemExit) ErrorError Error Exception Warning UserWarning é.RuntimeError",
    "9",
    "",
    "v",
    "1234",
    "Error",
    "StopIteration",
    "_x a_b aB ab.cd ab( abc ab.1 $ab @ab -ab x.ab é_b _ __init__ A a.b.c() file(s) src/x.py ~/a.txt ../b /a/b /dev/null a/b.c",
]


def _real_texts() -> list[str]:
    texts = list(CRAFTED)
    for dataset, stem in (
        ("claude-code-log", "-src-deep-manifest__a7da6a22"),
        ("mini-swe-agent-pr816", "deepseek_chat_dev_pylint-dev__astroid-1333_"),
    ):
        for session in load_file(bundled(dataset, stem)):
            for message in session.messages:
                for part in message.parts:
                    if isinstance(part, (TextPart, ThinkingPart)):
                        texts.append(part.text)
                    elif isinstance(part, ToolCallPart):
                        texts.append(part.arguments)
                    elif isinstance(part, ToolResultPart):
                        texts.append(part.content)
    return texts


@pytest.mark.parametrize(
    ("fast", "readable"),
    [("_NUMBER", READABLE_NUMBER), ("_ERROR", READABLE_ERROR), ("_CANDIDATE", READABLE_CANDIDATE), ("_PATH", READABLE_PATH)],
)
def test_extraction_patterns_find_what_they_read_as(fast: str, readable: str) -> None:
    import re

    import compactlab.scoring.extraction as preservation

    pattern, reference = getattr(preservation, fast), re.compile(readable)
    texts = _real_texts()
    found = [[(m.start(), m.group(0)) for m in pattern.finditer(text)] for text in texts]
    assert found == [[(m.start(), m.group(0)) for m in reference.finditer(text)] for text in texts]
    assert sum(map(len, found)) > 100  # the texts hold many
    words = [w for text in CRAFTED for w in text.split()]
    assert [bool(pattern.fullmatch(w)) for w in words] == [bool(reference.fullmatch(w)) for w in words]


def test_the_plan_a_step_proposes_is_written_not_needed(shared) -> None:
    # pai-claude d6a37ffc, message 39: a step whose ExitPlanMode `plan` argument names 40-odd items of
    # the session; they are what the step writes. Its thinking and text still say what it consumed.
    [session] = [t for t in load_file(next((shared / "pai-claude").glob("d6a37ffc*")), lenient=True)]
    step = session.messages[39]
    [call] = [p for p in step.parts if isinstance(p, ToolCallPart)]
    assert call.name == "ExitPlanMode" and len(call.parsed_arguments()["plan"]) > 5_000
    found = [i.text for i in extract_items([step])]
    assert found == [
        "ExitPlanMode",
        "load-core-context.ts",
        "capture-decision.ts",
        "SKILL.md",
        "/Users/pretor/.claude/plans/dreamy-dancing-clarke.md",
    ]
    assert "capture-all-events.ts" not in found  # named only in the plan (47 items were found before)
