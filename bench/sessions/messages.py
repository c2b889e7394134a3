"""What a message is to a compaction: summaries, pinned messages, turn boundaries, safe cut points,
the files a session read and wrote.

Strategies, estimators and scorers all read messages this way; the helpers need only the model.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from compactlab.memo import IdentityMemo
from compactlab.sessions.model import Message, TextPart, ToolCallPart, ToolResultPart

SUMMARY_SOURCE_ID = "compactlab:summary"
CONTINUATION = "This session is being continued from a previous conversation"
SUMMARY_PREFIX = f"{CONTINUATION}. Summary of the earlier part:\n\n"


def summary_message(text: str, verbatim: bool = False) -> Message:
    """The summary as the message that replaces the history. `verbatim`: the text is already what
    the model saw (a production agent's recorded summary, its own preamble included)."""
    # A summary that opens with its own continuation preamble (Claude Code's recorded ones do:
    # "This session is being continued from a previous conversation that ran out of context...")
    # gets no second one in front of it.
    prefix = "" if verbatim or text.startswith(CONTINUATION) else SUMMARY_PREFIX
    return Message(role="user", parts=(TextPart(prefix + text),), source_id=SUMMARY_SOURCE_ID)


def is_summary(message: Message) -> bool:
    return message.source_id == SUMMARY_SOURCE_ID


def summary_text(message: Message) -> str:
    return message.text().removeprefix(SUMMARY_PREFIX)


def leading_system(messages: Sequence[Message]) -> int:
    """How many messages at the start are system messages (always kept)."""
    count = 0
    while count < len(messages) and messages[count].role == "system":
        count += 1
    return count


def is_instruction(message: Message) -> bool:
    """A system prompt, or a message flagged as instructions (Codex's developer message, AGENTS.md,
    environment context): kept verbatim by every strategy, wherever it sits."""
    return message.role == "system" or message.instruction


def is_user_turn_start(message: Message) -> bool:
    """A real user message (not a tool result, not a summary, not instructions) starts a turn."""
    return (
        message.role == "user"
        and not message.instruction
        and not is_summary(message)
        and not any(isinstance(p, ToolResultPart) for p in message.parts)
    )


def task_index(messages: Sequence[Message]) -> int | None:
    """Where the task statement is: the first message that starts a user turn."""
    return next((i for i, m in enumerate(messages) if is_user_turn_start(m)), None)


def pinned_indexes(messages: Sequence[Message], pin_task: bool = True) -> set[int]:
    """Messages a strategy keeps verbatim: instructions (system prompts included) and, with `pin_task`
    (the harness's default, `compactlab.contract.Harness`), the task statement. They cost what they
    cost: the agent cannot do its task without them. A preset whose source summarizes the first
    user message like any other turns `pin_task` off."""
    task = task_index(messages) if pin_task else None
    return {i for i, m in enumerate(messages) if i == task or is_instruction(m)}


def pinned_head(messages: Sequence[Message], pin_task: bool = True) -> int:
    """How many messages at the start are pinned (see `pinned_indexes`): the part a compaction keeps
    in front of its summary or of the history it kept."""
    pinned = pinned_indexes(messages, pin_task)
    count = 0
    while count in pinned:
        count += 1
    return count


def pinned_in(messages: Sequence[Message], start: int, end: int, pin_task: bool = True) -> tuple[Message, ...]:
    """The pinned messages of `messages[start:end]`, a span a strategy drops or summarizes: it keeps
    them, in order, after the head (they are never tool results, so no call loses its result)."""
    pinned = pinned_indexes(messages, pin_task)
    return tuple(messages[i] for i in range(start, end) if i in pinned)


def safe_cut_points(messages: Sequence[Message]) -> list[int]:
    """Indexes where the history may be cut so that no tool result loses its call.

    A cut at `i` keeps `messages[i:]`. It is safe when every tool result in the kept part has its
    call in the kept part too.
    """
    unsafe: set[int] = set()
    # Walking backwards: a cut just before a message is unsafe while a kept result waits for its call.
    waiting: set[str] = set()
    for index in range(len(messages) - 1, -1, -1):
        for part in messages[index].parts:
            if isinstance(part, ToolResultPart):
                waiting.add(part.call_id)
            elif isinstance(part, ToolCallPart):
                waiting.discard(part.id)
        if waiting:
            unsafe.add(index)
    return [i for i in range(len(messages) + 1) if i not in unsafe]


class SafeCuts:
    """Whether a cut is safe (`i in SafeCuts(messages)` is `i in safe_cut_points(messages)`), found
    from the end only as far back as asked: a summarizing strategy asks about the cuts near the
    tail it keeps, and `safe_cut_points` walks the whole history at every compaction
    (`tests/sessions/test_safe_cuts.py` holds the two equal on real sessions)."""

    def __init__(self, messages: Sequence[Message]) -> None:
        self.messages = messages
        self.waiting: set[str] = set()  # as in `safe_cut_points`: results kept whose call is not yet
        self.unsafe: set[int] = set()
        self.next = len(messages) - 1  # the next message to walk (backwards)

    def __contains__(self, index: object) -> bool:
        if not isinstance(index, int) or not 0 <= index <= len(self.messages):
            return False
        waiting, unsafe, messages = self.waiting, self.unsafe, self.messages
        while self.next >= index:
            for part in messages[self.next].parts:
                if isinstance(part, ToolResultPart):
                    waiting.add(part.call_id)
                elif isinstance(part, ToolCallPart):
                    waiting.discard(part.id)
            if waiting:
                unsafe.add(self.next)
            self.next -= 1
        return index not in unsafe


def turn_starts(messages: Sequence[Message]) -> list[int]:
    return [i for i, m in enumerate(messages) if is_user_turn_start(m)]


def turn_boundaries(messages: Sequence[Message]) -> list[int]:
    """Where turns start, for strategies that keep or drop whole turns: user turn starts, and, when
    the last user turn is the task's own (single-task agents such as mini-swe-agent, sub-agents),
    every step after it: an assistant message that follows a non-assistant one. The task statement
    is pinned, so its turn would otherwise never shrink."""
    starts = turn_starts(messages)
    if starts and starts[-1] != task_index(messages):
        return starts
    after = starts[-1] if starts else -1
    steps = [
        i
        for i in range(max(after + 1, 1), len(messages))
        if messages[i].role == "assistant" and messages[i - 1].role != "assistant"
    ]
    return starts + steps


@dataclass(frozen=True)
class FileActivity:
    """Files a session read and modified, taken from tool calls (cumulative across compactions)."""

    read: tuple[str, ...] = ()
    modified: tuple[str, ...] = ()


READ_TOOLS = frozenset({"read", "read_file", "view", "cat", "grep", "glob", "ls", "notebookread"})
WRITE_TOOLS = frozenset(
    {"write", "edit", "multiedit", "write_file", "edit_file", "str_replace", "create", "notebookedit", "apply_patch"}
)
PATH_KEYS = ("file_path", "path", "filename", "notebook_path", "file")


# Shell commands (mini-swe-agent, Codex) name files inline: a path-like token with an extension,
# modified when the command writes (sed -i, redirection, tee, patch), otherwise read.
FILE_EXTENSIONS = (
    "py|pyi|ipynb|js|jsx|ts|tsx|mjs|cjs|json|jsonl|md|rst|txt|toml|yaml|yml|cfg|ini|conf|rs|go|java|kt|c|h|cc|cpp|hpp|"
    "cs|rb|php|swift|sh|bash|zsh|ps1|html|htm|css|scss|sql|xml|csv|tsv|log|lock|env|proto|tf|vue|svelte|lua|r|scala|dart"
)
# (The path pattern asks first for the `.` of its extension, so a plain word fails at once.)
_SHELL_PATH = re.compile(
    rf"(?<![\w<>=.])(?=[\w.@+~/-]*\.)((?:~|\.{{1,2}})?/?(?:[\w.@+-]+/)*[\w@+-]+\.(?:{FILE_EXTENSIONS}))(?![\w/(])"
)
# `\bsed\s+-i|\s>>?\s*\S|\btee\b|\bpatch\b|\bgit\s+apply\b|\btouch\b|\bmv\b|\bcp\b`, each written to start
# with its first character: Python's regular expressions skip quickly to where one can match, but
# try every position for a pattern that starts with \b (docs/performance.md).
_SHELL_WRITES = re.compile(
    r"s(?<=\bs)ed\s+-i|\s>>?\s*\S|t(?<=\bt)ee\b|p(?<=\bp)atch\b|g(?<=\bg)it\s+apply\b|t(?<=\bt)ouch\b|m(?<=\bm)v\b|c(?<=\bc)p\b"
)
COMMAND_KEYS = ("command", "cmd")


def file_activity(messages: Sequence[Message], earlier: FileActivity = FileActivity()) -> FileActivity:
    read: dict[str, None] = dict.fromkeys(earlier.read)
    modified: dict[str, None] = dict.fromkeys(earlier.modified)
    for message in messages:
        for path, writes in _file_events(message):
            (modified if writes else read).setdefault(path, None)
    return FileActivity(read=tuple(p for p in read if p not in modified), modified=tuple(modified))


# Each message's file events, made once: every compaction of a sweep lists the files of the
# whole history again. The entry holds the message so its id is not reused while it lives.
_EVENTS: IdentityMemo[tuple[tuple[str, bool], ...]] = IdentityMemo(100_000)


def _file_events(message: Message) -> tuple[tuple[str, bool], ...]:
    """(path, modified) for each file a message's tool calls read or modify, in order."""
    return _EVENTS.of(message, _events_of)


def _events_of(message: Message) -> tuple[tuple[str, bool], ...]:
    events: list[tuple[str, bool]] = []
    for part in message.parts:
        if not isinstance(part, ToolCallPart):
            continue
        arguments = part.parsed_arguments()
        if not isinstance(arguments, dict):
            continue
        name = part.name.lower()
        writes = name in WRITE_TOOLS or "write" in name or "edit" in name
        paths = [arguments[k] for k in PATH_KEYS if isinstance(arguments.get(k), str)]
        for key in COMMAND_KEYS:
            command = arguments.get(key)
            if isinstance(command, str):
                # Only the command line itself: a heredoc body is file content, not files touched.
                first_line = command.split("\n", 1)[0]
                paths += _SHELL_PATH.findall(first_line)
                writes = writes or bool(_SHELL_WRITES.search(first_line))
        reads = name in READ_TOOLS or "read" in name or any(isinstance(arguments.get(k), str) for k in COMMAND_KEYS)
        events += [(path, writes) for path in paths if writes or reads]
    return tuple(events)


def last_user_request(messages: Sequence[Message]) -> str | None:
    for message in reversed(messages):
        if is_user_turn_start(message):
            text = "\n".join(p.text for p in message.parts if isinstance(p, TextPart)).strip()
            if text:
                return text
    return None
