"""A structured summary without an LLM: deterministic, offline, and the default summarizer.

It pulls from the dropped messages what a summary most needs: the goal (the first user
messages), the last request, files read and modified, errors seen, commands run, and the most
recent decisions (the assistant's last statements). The same messages always give the same
summary, so the main job runs offline and reproducibly. It cannot understand the session: it
only keeps literal pieces of it, which is what the next-step metrics then test.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import ClassVar

from compactlab.contract import SummaryRequest, SummaryResponse
from compactlab.memo import text_cache
from compactlab.sessions.messages import file_activity, is_summary, is_user_turn_start, summary_text
from compactlab.sessions.model import Message, TextPart, ToolCallPart, ToolResultPart, parsed_arguments

# A line that starts like an error report (not any line mentioning "error", such as source code
# shown by a file read).
_ERROR_LINE = re.compile(
    r"^\s*(?:[\w.]*(?:Error|Exception)\b.*|Traceback \(most recent call last\).*|FAILED\b.*|E\s{2,}\S.*|"
    r"(?:error|Error|ERROR|fatal|panic)(?:\[\w+\])?:.*)$",
    re.MULTILINE,
)
# User messages that agents insert on the user's behalf (Claude Code's command echoes and caveats):
# they are in the prompt, but they are not what the user asked for.
NOT_A_REQUEST = ("<command-", "<local-command", "Caveat: The messages below", "[Request interrupted", "<system-reminder>")
COMMAND_ARGUMENTS = ("command", "cmd", "script")


@dataclass(frozen=True)
class ExtractiveSummarizer:
    name: ClassVar[str] = "extractive"
    reads_prompt: ClassVar[bool] = False  # it reads the messages themselves (SummaryRequest)
    goal_messages: int = 2
    max_item_chars: int = 400
    max_items: int = 8

    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        messages = [m for m in request.messages if not is_summary(m)]
        earlier = [summary_text(m) for m in request.messages if is_summary(m)]
        if request.previous_summary:
            earlier.insert(0, request.previous_summary)
        sections: list[tuple[str, list[str]]] = [
            ("Goal", self._goal(messages)),
            ("Last request", self._last_request(messages)),
            # Left to the strategy when it tracks files: its template renders the cumulative lists.
            ("Files modified", [] if request.files_tracked else list(file_activity(messages).modified)),
            ("Files read", [] if request.files_tracked else list(file_activity(messages).read)),
            ("Errors seen", self._errors(messages)),
            ("Commands run", self._commands(messages)),
            ("Recent decisions", self._decisions(messages)),
        ]
        if request.purpose == "turn_prefix":
            sections[0] = ("Original request", sections[0][1])
        sections, foreign = self._merge(earlier, sections)
        lines = []
        if foreign:
            # An earlier summary this summarizer did not write (e.g. a production agent's) is kept
            # whole; its own earlier summaries are merged section by section instead of nesting.
            lines += ["## Earlier summary", *foreign, ""]
        for title, items in sections:
            if items:
                lines.append(f"## {title}")
                lines += [f"- {item}" for item in items]
                lines.append("")
        text = "\n".join(lines).strip() or "(nothing to summarize)"
        return SummaryResponse(text=_clip(text, request.max_output_tokens * 4))

    def _merge(self, earlier: list[str], sections: list[tuple[str, list[str]]]) -> tuple[list[tuple[str, list[str]]], list[str]]:
        merged = {title: list(items) for title, items in sections}
        foreign: list[str] = []
        for text in earlier:
            parsed = _sections(text)
            if parsed is None:
                foreign.append(_SUMMARY_TAIL.split(text)[0].strip())
                continue
            for title, items in parsed.items():
                if title == "Earlier summary":
                    foreign.extend(i for i in items if i.strip())
                elif title in ("Goal", "Original request"):  # the first requests stay first
                    merged["Goal"] = list(dict.fromkeys(items + merged.get("Goal", [])))[: self.goal_messages]
                elif title == "Last request":
                    merged[title] = merged.get(title) or items
                else:  # newer items win the limited room
                    merged[title] = list(dict.fromkeys(items + merged.get(title, [])))[-self.max_items :]
        ordered = [(title, merged.get(title, [])) for title, _ in sections]
        return ordered, [f for f in dict.fromkeys(foreign) if f]

    def _short(self, text: str) -> str:
        return _shortened(text, self.max_item_chars)

    def _user_texts(self, messages: Sequence[Message]) -> list[str]:
        texts = ("\n".join(p.text for p in m.parts if isinstance(p, TextPart)).strip() for m in messages if is_user_turn_start(m))
        return [t for t in texts if t and not t.startswith(NOT_A_REQUEST)]

    def _goal(self, messages: Sequence[Message]) -> list[str]:
        return [self._short(t) for t in self._user_texts(messages) if t][: self.goal_messages]

    def _last_request(self, messages: Sequence[Message]) -> list[str]:
        texts = [t for t in self._user_texts(messages) if t]
        return [self._short(texts[-1])] if len(texts) > self.goal_messages else []

    def _errors(self, messages: Sequence[Message]) -> list[str]:
        found: dict[str, None] = {}
        for message in messages:
            for part in message.parts:
                if isinstance(part, ToolResultPart):
                    for line in _error_lines(part.content, part.is_error):
                        found.setdefault(self._short(line), None)
        return list(found)[-self.max_items :]

    # Commands and decisions keep only the last few, so they are gathered from the end: a summary
    # of a long history must not read all of it again for its last eight lines.
    def _commands(self, messages: Sequence[Message]) -> list[str]:
        commands: list[str] = []
        for message in reversed(messages):
            for part in reversed(message.parts):
                if isinstance(part, ToolCallPart):
                    commands += reversed(_command_texts(part.arguments))
            if len(commands) >= self.max_items:
                break
        return [self._short(c) for c in reversed(commands[: self.max_items])]

    def _decisions(self, messages: Sequence[Message]) -> list[str]:
        statements: list[str] = []
        for message in reversed(messages):
            if message.role == "assistant":
                statements += (p.text for p in reversed(message.parts) if isinstance(p, TextPart) and p.text.strip())
            if len(statements) >= self.max_items:
                break
        return [self._short(text) for text in reversed(statements[: self.max_items])]


# Per tool output and per tool call, found once: every compaction of a sweep summarizes the whole
# dropped history again, and the same outputs recur in each.
@text_cache
@lru_cache(maxsize=1 << 16)
def _error_lines(content: str, is_error: bool) -> tuple[str, ...]:
    lines = _ERROR_LINE.findall(content)
    if is_error and not lines:
        lines = content.strip().splitlines()[:1]
    return tuple(lines)


@text_cache
@lru_cache(maxsize=1 << 16)
def _command_texts(arguments_text: str) -> tuple[str, ...]:
    # Keyed by the arguments' text, whose hash Python keeps, not by the part (a dataclass's hash is
    # computed again at every lookup).
    arguments = parsed_arguments(arguments_text)
    if not isinstance(arguments, dict):  # raw-text arguments hold no named command
        return ()
    return tuple(arguments[key] for key in COMMAND_ARGUMENTS if isinstance(arguments.get(key), str))


@text_cache
@lru_cache(maxsize=1 << 16)  # the same error lines, commands and requests recur in every summary of a session
def _shortened(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# What a summary carries after its sections (file lists, the last request): not part of them.
_SUMMARY_TAIL = re.compile(r"\n\n(?:<read-files>|<modified-files>|Last request from user was:|\[The full conversation)")
_HEADING = re.compile(r"^## (.+)$")
_SEPARATORS = frozenset({"---", "**Turn Context (split turn):**", "(nothing to summarize)"})


def _sections(text: str) -> dict[str, list[str]] | None:
    """The sections of a summary written by this summarizer, or None for any other text."""
    body = _SUMMARY_TAIL.split(text)[0].strip()
    sections: dict[str, list[str]] = {}
    current: str | None = None
    for line in body.splitlines():
        if line.strip() in _SEPARATORS:
            continue  # a split-turn summary: history and turn prefix merge into one set of sections
        heading = _HEADING.match(line)
        if heading:
            current = heading.group(1)
            sections.setdefault(current, [])
        elif current is not None and line.startswith("- "):
            sections[current].append(line[2:])
        elif line.strip() and current != "Earlier summary":
            return None
        elif line.strip():
            assert current is not None  # "Earlier summary" is a section's name, so a section is open
            sections[current].append(line)
    return sections if sections else None


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 20].rstrip() + "\n[summary clipped]"
