"""Importers: one module per source format, registered by name, detected from content.

`load_file(path)` is the entry point: it detects the format (or takes the one named), reads the
file strictly or leniently, and returns its sessions. When no importer matches, the error lists
every format tried and why each one did not match.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import replace
from pathlib import Path

from compactlab.registry import Registry
from compactlab.sessions.importers.importer import FormatFacts, Importer
from compactlab.sessions.model import Session
from compactlab.sessions.source import TOO_DEEP, RecordIssues, SessionError, Source


def _register_builtins(registry: Registry[Importer]) -> None:
    # Imported here, not at module top, so that importing one importer module does not pull in
    # (or break on) all the others.
    from compactlab.sessions.importers.anthropic_messages import AnthropicMessagesImporter
    from compactlab.sessions.importers.canonical import CanonicalImporter
    from compactlab.sessions.importers.claude_code import ClaudeCodeImporter
    from compactlab.sessions.importers.cline_session import ClineSessionImporter
    from compactlab.sessions.importers.codex import CodexImporter
    from compactlab.sessions.importers.condenser_log import CondenserLogImporter
    from compactlab.sessions.importers.dataclaw import DataClawImporter
    from compactlab.sessions.importers.gemini_cli import GeminiCliImporter
    from compactlab.sessions.importers.mini_swe_agent import MiniSweAgentImporter
    from compactlab.sessions.importers.openai_chat import OpenAIChatImporter
    from compactlab.sessions.importers.opencode import OpencodeImporter
    from compactlab.sessions.importers.pi_session import PiSessionImporter
    from compactlab.sessions.importers.swe_agent import SweAgentImporter

    # Formats are told apart by content only one of them has: detection asks every importer, and a
    # file two of them claim is an error naming both (`detect`), so this order decides nothing but
    # the order `compactlab formats` lists them in.
    for importer in (
        CanonicalImporter(),
        ClaudeCodeImporter(),
        CodexImporter(),
        PiSessionImporter(),
        MiniSweAgentImporter(),
        SweAgentImporter(),
        GeminiCliImporter(),
        OpenAIChatImporter(),
        AnthropicMessagesImporter(),
        CondenserLogImporter(),
        ClineSessionImporter(),
        OpencodeImporter(),
        DataClawImporter(),
    ):
        registry.register(importer.name, importer)


IMPORTERS: Registry[Importer] = Registry("format", _register_builtins, see="See `compactlab formats`.")


def importers() -> Registry[Importer]:
    """Every known importer by format name."""
    return IMPORTERS


def get_importer(name: str) -> Importer:
    """The importer called `name`, or an error that suggests the closest names."""
    return IMPORTERS.get_entry(name)


def format_facts(source_format: str) -> FormatFacts:
    """What the stages above need to know of a source format (`Importer.facts`): a format no
    importer has (a session built in code, an older run's rows) has the defaults."""
    return IMPORTERS[source_format].facts if source_format in IMPORTERS else FormatFacts()


def detect(source: Source) -> Importer:
    """The one importer whose format `source` is; none, or two, is an error naming the formats."""
    reasons: list[str] = []
    matched: list[Importer] = []
    for importer in IMPORTERS.values():
        reason = importer.match(source)
        if reason is None:
            matched.append(importer)
        else:
            reasons.append(f"  - {importer.name}: {reason}")
    if len(matched) > 1:
        names = " and ".join(repr(importer.name) for importer in matched)
        raise SessionError(
            source.path, None, f"ambiguous session format: the file matches {names}; name its format (--format NAME)"
        )
    if matched:
        return matched[0]
    raise SessionError(source.path, None, "unknown session format. Formats tried:\n" + "\n".join(reasons))


def load_file(path: Path | str, *, lenient: bool = False, format: str | None = None) -> list[Session]:
    """Read one file and return its sessions (most formats hold exactly one).

    Strict mode raises `SessionError` naming file and line at the first damaged record;
    lenient mode skips damaged records and records each one in `Session.skipped`.
    """
    source = Source(path)
    importer = get_importer(format) if format else None
    issues = RecordIssues(source.path, lenient)
    try:
        importer = importer or detect(source)
        sessions = _accounted(source, importer.load(source, issues), issues)
    except SessionError:
        raise
    except RecursionError as exc:
        raise SessionError(source.path, None, TOO_DEEP) from exc
    except (TypeError, ValueError, KeyError, IndexError, AttributeError, OverflowError) as exc:
        # A shape no check foresaw. It still names the file, so that --lenient counts the file and
        # goes on with the others; "internal error" marks it as a bug to fix (the fuzz test looks).
        reader = f"the {importer.name} importer" if importer else "format detection"
        raise SessionError(
            source.path, None, f"internal error in {reader} on an unexpected shape of data: {type(exc).__name__}: {exc}"
        ) from exc
    return [_printable(t) for t in sessions]


def _accounted(source: Source, sessions: list[Session], issues: RecordIssues) -> list[Session]:
    """The sessions, with every skip of the file shown on one of them and no id twice.

    A skip recorded after the last session was built (a damaged header that left its session
    out, say) would otherwise be counted nowhere."""
    twice = next((i for i, n in Counter(t.id for t in sessions).items() if n > 1), None)
    if twice is not None:
        raise SessionError(source.path, None, f"two sessions in this file have the id {twice!r}")
    for session in sessions:
        _check_message_sizes(source, session)
    if not issues.skipped or any(t.skipped for t in sessions):
        return sessions
    first = issues.skipped[0]
    if not sessions:
        raise SessionError(
            source.path, first.line, f"no session left ({len(issues.skipped)} records skipped; the first: {first.reason})"
        )
    return [replace(sessions[0], skipped=tuple(issues.skipped)), *sessions[1:]]


# The text one message may hold. Replaying a session costs more than linear time and memory in a
# single message's size (docs/performance.md), while the largest message of the real datasets holds
# 74 thousand characters: a message past this budget is refused up front.
MESSAGE_BUDGET_MB = 2.0
MESSAGE_BUDGET_VARIABLE = "COMPACTLAB_MAX_MESSAGE_MB"


def message_budget() -> int:
    """The most characters of text one message may hold (MESSAGE_BUDGET_MB unless configured)."""
    configured = os.environ.get(MESSAGE_BUDGET_VARIABLE)
    try:
        return int(float(configured or MESSAGE_BUDGET_MB) * (1 << 20))
    except ValueError:
        raise ValueError(f"{MESSAGE_BUDGET_VARIABLE}={configured!r}: expected a number of MiB") from None


def _check_message_sizes(source: Source, session: Session) -> None:
    budget = message_budget()
    for index, message in enumerate(session.messages):
        size = len(message.text())
        if size > budget:
            where = f"message {index}" + (f" ({message.source_id})" if message.source_id and message.line is None else "")
            raise SessionError(
                source.path,
                message.line,
                (
                    f"{where} holds {size / (1 << 20):.1f} MiB of text, over the per-message budget of "
                    f"{budget / (1 << 20):g} MiB (set {MESSAGE_BUDGET_VARIABLE} to raise it)"
                ),
            )


def utf8_text(text: str) -> str:
    """`text` as UTF-8 can hold it: bytes of a file name that are not UTF-8 (kept by Python as lone
    surrogates) are written as \\xNN, so the text can be written to UTF-8 files and shown."""
    text = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _printable(session: Session) -> Session:
    """Ids are written to UTF-8 files and shown: bytes of a file name that are not UTF-8 (kept by
    Python as lone surrogates) are written as \\xNN."""
    try:
        session.id.encode("utf-8")
        return session
    except UnicodeEncodeError:
        return replace(session, id=utf8_text(session.id))
