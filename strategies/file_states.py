"""What a Claude Code session last saw of each file, and its todo list, read from its tool calls; and
the messages a re-attachment adds (strategies/reattach.py), in the form this reader knows again.

A file's content is the last the session saw of it (a whole-file Read result, a Write's content, an
Edit applied to a known content); its order is when the session last read or wrote it (Claude Code
sorts by its cache's timestamp, which the session does not hold). A file the session saw only in
part (a Read with offset/limit, an Edit of a file never read whole) is `FileState.partial`, with the
part it saw. A partial read that returned fewer lines than its limit from the top is the whole
file; a partial read after the whole content was known (a Write, a whole Read) does not make it
partial. The plan file's whole text is the `plan` argument of the last approved `ExitPlanMode` (its
result names the file). Files an earlier re-attachment restored count as seen: Claude Code refills
its cache with them.

The tools read are Claude Code's (Read, Write, Edit, MultiEdit, TodoWrite, ExitPlanMode).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from compactlab.sessions.model import ImagePart, Message, Part, TextPart, ToolCallPart, ToolResultPart

REATTACHED_SOURCE_ID = "compactlab:reattached"
FILE_TOOLS = frozenset({"Read", "Write", "Edit", "MultiEdit"})

_READ_CALL = "Called the Read tool with the following input: "
_READ_RESULT = "Result of calling the Read tool:\n"
_REMINDER = re.compile(r"\n*<system-reminder>.*?</system-reminder>\n*", re.DOTALL)
_NUMBERED_LINE = re.compile(r"^ *\d+→", re.MULTILINE)
_PLAN_SAVED = re.compile(r"Your plan has been saved to: (\S+)")
_BEGIN = "<system-reminder>\n"
_END = "\n</system-reminder>"


@dataclass(frozen=True)
class FileState:
    """The last the session saw of one file: `shown` as the Read tool returns it, `raw` its text."""

    path: str
    shown: str
    raw: str | None
    partial: bool
    order: int
    was_read: bool = True
    images: tuple[ImagePart, ...] = ()  # an image file's content, as the Read tool returned it
    modified: int | None = None  # when the session last wrote or edited it (its order), if it did


def file_states(messages: Sequence[Message]) -> dict[str, FileState]:
    """Each file the session read, wrote or edited in `messages`, as it last saw it (files an
    earlier re-attachment restored included: Claude Code refills its cache with them), and the plan
    file an approved `ExitPlanMode` saved."""
    calls: dict[str, ToolCallPart] = {}
    states: dict[str, FileState] = {}
    for order, message in enumerate(messages):
        kind, _, path = (message.source_id or "").removeprefix(f"{REATTACHED_SOURCE_ID}:").partition(":")
        if is_reattached(message) and kind in ("file", "written"):
            shown = attachment_text(message).split(_READ_RESULT, 1)[-1]
            images = tuple(p for p in message.parts if isinstance(p, ImagePart))
            modified = order if kind == "written" else None
            states[path] = FileState(path, shown, unnumbered(shown), False, order, images=images, modified=modified)
            continue
        images = tuple(p for p in message.parts if isinstance(p, ImagePart))
        for part in message.parts:
            if isinstance(part, ToolCallPart) and (part.name in FILE_TOOLS or part.name == "ExitPlanMode"):
                calls[part.id] = part
            elif isinstance(part, ToolResultPart) and part.call_id in calls and not _failed(part):
                call = calls.pop(part.call_id)
                state = _plan(call, part, order) if call.name == "ExitPlanMode" else _after(call, part, states, order, images)
                if state is not None:
                    states[state.path] = state
    return states


def latest_todos(messages: Sequence[Message]) -> list:
    """The todo list as the last successful TodoWrite left it (empty when there is none)."""
    calls: dict[str, list] = {}
    latest: list = []
    for message in messages:
        if message.source_id == f"{REATTACHED_SOURCE_ID}:todo":
            latest = json.loads(attachment_text(message).split("\n\n", 1)[1].removesuffix(_END))
            continue
        for part in message.parts:
            if isinstance(part, ToolCallPart) and part.name == "TodoWrite":
                todos = _arguments(part).get("todos")
                calls[part.id] = todos if isinstance(todos, list) else []
            elif isinstance(part, ToolResultPart) and part.call_id in calls and not _failed(part):
                latest = calls.pop(part.call_id)
    return latest


def _plan(call: ToolCallPart, result: ToolResultPart, order: int) -> FileState | None:
    """The plan file an approved ExitPlanMode saved: its whole text is the call's `plan`."""
    plan, saved = _arguments(call).get("plan"), _PLAN_SAVED.search(result.content)
    if not isinstance(plan, str) or saved is None:
        return None
    return FileState(saved.group(1), numbered(plan), plan, False, order, was_read=False)


def _after(
    call: ToolCallPart, result: ToolResultPart, states: dict[str, FileState], order: int, images: tuple[ImagePart, ...]
) -> FileState | None:
    """The file's state after a successful Read, Write, Edit or MultiEdit."""
    arguments = _arguments(call)
    path = arguments.get("file_path")
    if not isinstance(path, str):
        return None
    before = states.get(path)
    if call.name == "Read":
        whole = _whole_read(arguments, result.content)
        if not whole and before is not None and before.raw is not None:
            return replace(before, order=order, was_read=True)  # a part of a file known whole: still known whole
        if before is not None and before.modified is not None:
            return FileState(
                path,
                result.content,
                unnumbered(result.content) if whole else None,
                not whole,
                order,
                True,
                images,
                before.modified,
            )
        return FileState(path, result.content, unnumbered(result.content) if whole else None, not whole, order, images=images)
    if call.name == "Write":
        content = arguments.get("content")
        if not isinstance(content, str):
            return None
        return FileState(path, numbered(content), content, False, order, before is not None and before.was_read, modified=order)
    edits = arguments.get("edits") if call.name == "MultiEdit" else [arguments]
    raw = before.raw if before is not None else None
    for edit in edits if isinstance(edits, list) else []:
        old, new = (edit.get("old_string"), edit.get("new_string")) if isinstance(edit, dict) else (None, None)
        if raw is None or not isinstance(old, str) or not isinstance(new, str) or old not in raw:
            raw = None
            break
        raw = raw.replace(old, new) if edit.get("replace_all") else raw.replace(old, new, 1)
    was_read = before is None or before.was_read  # an Edit needs a Read first: one the session lacks was before it
    if raw is not None:
        return FileState(path, numbered(raw), raw, False, order, was_read, modified=order)
    # Edited without a whole view of the file: what is known is what was seen before (if anything).
    return FileState(path, before.shown if before else "", None, True, order, was_read, modified=order)


def _whole_read(arguments: dict, shown: str) -> bool:
    """Whether a Read returned the whole file: no offset or limit, or a limit from the top that the
    file ended before (fewer numbered lines came back than asked for)."""
    if arguments.get("offset") not in (None, 0, 1):
        return False
    limit = arguments.get("limit")
    return limit is None or (isinstance(limit, int) and len(_NUMBERED_LINE.findall(shown)) < limit)


def file_message(path: str, shown: str, images: tuple[ImagePart, ...] = (), written: bool = False) -> Message:
    """A re-attached file as Claude Code sends it: the Read call and its result, as a user message
    (an image file's content is the image itself). `written`: the session wrote or edited it (its
    source id says so, for the next compaction's order)."""
    text = f"{_BEGIN}{_READ_CALL}{json.dumps({'file_path': path})}\n{_READ_RESULT}{shown}"
    parts: tuple[Part, ...] = (TextPart(text), *images)
    return Message(role="user", parts=parts, source_id=f"{REATTACHED_SOURCE_ID}:{'written' if written else 'file'}:{path}")


def attachment_message(kind: str, text: str) -> Message:
    return Message(role="user", parts=(TextPart(f"{_BEGIN}{text}{_END}"),), source_id=f"{REATTACHED_SOURCE_ID}:{kind}")


def attachment_text(message: Message) -> str:
    """The text of an attachment message (`_attachment`, `file_message`: one text part)."""
    part = message.parts[0]
    assert isinstance(part, TextPart), part
    return part.text


def is_reattached(message: Message) -> bool:
    return bool(message.source_id and message.source_id.startswith(REATTACHED_SOURCE_ID))


def numbered(text: str) -> str:
    """Text as the Read tool returns it: each line after its number (`cat -n`, with an arrow)."""
    return "\n".join(f"{number:>6}→{line}" for number, line in enumerate(text.split("\n"), 1))


def unnumbered(shown: str) -> str:
    return _NUMBERED_LINE.sub("", _REMINDER.sub("", shown))


def _failed(result: ToolResultPart) -> bool:
    return result.is_error or result.content.lstrip().startswith("<tool_use_error>")


def _arguments(call: ToolCallPart) -> dict:
    try:
        value = json.loads(call.arguments)
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}
