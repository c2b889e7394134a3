"""What an importer is, and the small helpers several importers share."""

from __future__ import annotations

import base64
import math
import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Protocol, TypeGuard

from compactlab.sessions.model import ImagePart, Message, Session, ToolCallPart, ToolResultPart
from compactlab.sessions.source import RecordIssues, Source


@dataclass(frozen=True)
class FormatFacts:
    """What the stages above the importers must know of a source format, declared on its importer
    (and read through `compactlab.sessions.importers.format_facts`), not in a table two stages away.
    The defaults are a plain chat file's."""

    # Recorded thinking is sent again in later prompts (tokens/framing.py): Anthropic drops earlier
    # turns' thinking, Codex keeps only encrypted reasoning the file lacks.
    thinking_resent: bool = True
    # Images cost what Anthropic's vision docs say, not OpenAI's tiles (tokens/framing.py).
    anthropic_images: bool = False
    # The file holds the system prompt and the tool definitions (tokens/metering.py): when it does
    # not, a per-session constant stands for them.
    system_prompt_in_file: bool = True
    # The preset that reproduces the engine that wrote the file, for its real compactions
    # (results/real_engines.py); None: no preset reproduces it.
    engine_preset: str | None = None
    # The record key whose value a sub-agent's file shares with its parent session's file
    # (sessions/session_family.py); None: a session is its own family.
    family_key: str | None = None


class Importer(Protocol):
    """Turns one file of a known format into sessions.

    `name` is the format's name as users type it. `match` looks at the file cheaply and returns
    None when the file is of this format, or a short reason why it is not (shown to the user when
    no importer matches); a file two importers match is an error, so each `match` must reject every
    other format's files (tests/sessions/test_importer_contract.py). `load` reads it; damaged records
    go to `issues`. `facts` are what other stages need to know of the format (`FormatFacts`).
    """

    name: str
    description: str
    facts: FormatFacts

    def match(self, source: Source) -> str | None: ...

    def load(self, source: Source, issues: RecordIssues) -> list[Session]: ...


def image_part(media_type: str, data_b64: str | None) -> ImagePart:
    """An image placeholder with the decoded size and, for PNG/GIF/JPEG, the pixel dimensions."""
    if not data_b64:
        return ImagePart(media_type=media_type or "application/octet-stream", byte_size=0)
    try:
        data = base64.b64decode(data_b64, validate=False)
    except ValueError:
        return ImagePart(media_type=media_type, byte_size=len(data_b64) * 3 // 4)
    width, height = _image_size(data)
    return ImagePart(media_type=media_type, byte_size=len(data), width=width, height=height)


def _image_size(data: bytes) -> tuple[int | None, int | None]:
    if data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 24:
        width, height = struct.unpack(">II", data[16:24])
        return width, height
    if data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        width, height = struct.unpack("<HH", data[6:10])
        return width, height
    if data[:2] == b"\xff\xd8":
        return _jpeg_size(data)
    return None, None


def _jpeg_size(data: bytes) -> tuple[int | None, int | None]:
    # Walk the JPEG segments to the first start-of-frame marker, which holds the size.
    i = 2
    while i + 9 < len(data):
        if data[i] != 0xFF:
            return None, None
        marker = data[i + 1]
        length = struct.unpack(">H", data[i + 2 : i + 4])[0]
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height, width = struct.unpack(">HH", data[i + 5 : i + 9])
            return width, height
        i += 2 + length
    return None, None


class ToolPairing:
    """Drops tool results whose call never appeared earlier (orphans), reporting each one.

    A replay that sent such a result would be rejected by every provider, so it cannot stay;
    strict mode stops with the line, lenient mode counts it as skipped. Feed messages in order.
    """

    def __init__(self, issues: RecordIssues):
        self.issues = issues
        self.seen_calls: set[str] = set()

    def filter(self, message: Message) -> Message | None:
        parts = []
        for part in message.parts:
            if isinstance(part, ToolCallPart):
                self.seen_calls.add(part.id)
            if isinstance(part, ToolResultPart) and part.call_id not in self.seen_calls:
                where = f"{message.source_id}: " if message.line is None and message.source_id else ""
                self.issues.report(message.line, f"{where}orphan tool result: no earlier tool call has id {part.call_id!r}")
                continue
            parts.append(part)
        if not parts:
            return None
        if len(parts) == len(message.parts):
            return message
        return replace(message, parts=tuple(parts))


def check_tool_pairing(messages: list[Message], issues: RecordIssues) -> list[Message]:
    """The messages with orphan tool results removed (see `ToolPairing`)."""
    pairing = ToolPairing(issues)
    return [kept for m in messages if (kept := pairing.filter(m)) is not None]


# Counts and costs must stay below 2^53: beyond it a float (JSON readers, pandas columns, the
# metrics) no longer holds every integer, so sums and ratios would be silently wrong.
COUNT_LIMIT = 2**53


def is_count(value: object) -> TypeGuard[int | float]:
    """A token count: a non-negative integer below 2^53 (an integral float such as 5.0 counts; a
    boolean, a fraction, NaN or infinity does not)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        return False
    return 0 <= value < COUNT_LIMIT


# One call's token counts stay far below this: the largest context window of any model is 10 million
# tokens, the largest prompt of the real datasets about 1 million, and no recorded call's count in them
# (302,647 usage numbers measured for issue 45) passes 10 million, Codex's running totals aside. A count
# at or past it is damage, not a call: read, it would swamp every sum it enters.
CALL_TOKEN_LIMIT = 10**8


def is_call_count(value: object) -> TypeGuard[int | float]:
    """One call's token count: a count (`is_count`) below CALL_TOKEN_LIMIT."""
    return is_count(value) and value < CALL_TOKEN_LIMIT


def call_count_problem(value: object) -> str:
    """Why `value` is no call's token count (for the damaged-record message)."""
    if value is None:
        return "null: the call's usage is unknown"
    return f"must be a non-negative integer below 10^8 (no call holds more tokens), got {value!r:.40}"


def call_counts(
    usage: dict, fields: Iterable[tuple[str, str]], label: str, report: Callable[[str], None]
) -> dict[str, int] | None:
    """The token counts of one call's `usage` record, by `fields` (the record's key, the count's
    name): an absent key is none of that kind (0); None after `report`ing a key whose value is no
    call's count (`label.key`), null included: no real file writes one, and reading it as 0 would
    shrink the prompt."""
    counts: dict[str, int] = {}
    for name, field_name in fields:
        value = usage.get(name)
        if name in usage and not is_call_count(value):
            report(f"`{label}.{name}` {call_count_problem(value)}")
            return None
        counts[field_name] = int(value or 0)
    return counts


def timestamp_seconds(value: object) -> float | None:
    """A record's time in seconds since the epoch: an ISO-8601 string (`2025-12-24T11:44:40.534Z`;
    without a zone, UTC) or a number of seconds or, from 10^11 on, milliseconds (pi writes both). None
    for anything else: a call without a time is still a call; the replay then says its session has
    no times (`compactlab.replay.cache_lifetime`)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        seconds = value / 1000 if value >= 1e11 else float(value)
        return seconds if math.isfinite(seconds) and 0 < seconds < 1e11 else None
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00") if value.endswith("Z") else value)
    except ValueError:
        return None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def is_cost(value: object) -> TypeGuard[int | float]:
    """A cost in USD: a finite, non-negative number below 2^53 (not a boolean)."""
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value) and 0 <= value < COUNT_LIMIT
