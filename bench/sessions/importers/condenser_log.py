"""Condenser logs: real (context → summary) pairs written by a summarizing condenser.

Each JSONL line records one real compaction: `input` is the whole context the condenser was
given, serialised as `[Message N] role:\\n<content>` blocks, and `output` is the summary it wrote
(see datasets/condenser-pairs-gpt5mini/README.md for the source). Each line becomes one
session whose messages are that context, followed by a `CompactionMarker` at its end holding
the summary. The logs hold no per-call token usage, so these sessions have no `LLMCall`s:
they serve to compare a strategy's summary with a production one on the same history.
"""

from __future__ import annotations

import re
from dataclasses import replace

from compactlab.sessions.importers.importer import FormatFacts
from compactlab.sessions.model import CompactionMarker, Message, Session, TextPart, is_role
from compactlab.sessions.source import RecordIssues, SessionError, Source

_HEADER = re.compile(r"^\[Message (\d+)\] (system|user|assistant|tool):\n", re.MULTILINE)
REQUIRED = ("input", "output")


class CondenserLogImporter:
    name = "condenser-log"
    description = "condenser log JSONL: one (serialised input context → summary) pair per line"
    facts = FormatFacts()

    def match(self, source: Source) -> str | None:
        head = source.head_records(limit=3)
        if head and all(
            isinstance(r.data, dict) and all(k in r.data for k in REQUIRED) and "summary_model_calls" in r.data for r in head
        ):
            return None
        return "no lines with `input`, `output` and `summary_model_calls` fields"

    def load(self, source: Source, issues: RecordIssues) -> list[Session]:
        stem = source.path.name.removesuffix(".gz").removesuffix(".jsonl")
        sessions: list[Session] = []
        lines_of: dict[tuple[str, str], int] = {}
        for record in source.records(issues):
            data = record.data
            if not isinstance(data, dict) or not all(isinstance(data.get(k), str) for k in REQUIRED):
                issues.report(record.line, "expected an object with string `input` and `output` fields")
                continue
            pair = (data["input"], data["output"])
            if pair in lines_of:  # one compaction logged twice would be measured twice
                issues.report(record.line, f"duplicate of line {lines_of[pair]}: the same context and summary again")
                continue
            lines_of[pair] = record.line
            messages = _parse_context(data["input"], record.line)
            if not messages:
                issues.report(record.line, "`input` holds no `[Message N] role:` blocks")
                continue
            marker = CompactionMarker(
                at_message=len(messages), trigger="auto", pre_tokens=None, summary=data["output"], line=record.line
            )
            model = data.get("model_name")
            sessions.append(
                Session(
                    id=f"{stem}#{record.line}",
                    source_format=self.name,
                    source_path=str(source.path),
                    messages=tuple(messages),
                    models=(model,) if isinstance(model, str) else (),
                    compactions=(marker,),
                )
            )
        if not sessions and issues.skipped:
            first = issues.skipped[0]
            raise SessionError(
                source.path, first.line, f"no readable record ({len(issues.skipped)} skipped; the first: {first.reason})"
            )
        # The file's skips are known only at its end; they are shown once, on its first session.
        return [replace(sessions[0], skipped=tuple(issues.skipped)), *sessions[1:]] if sessions else []


def _parse_context(text: str, line: int) -> list[Message]:
    headers = list(_HEADER.finditer(text))
    messages = []
    for i, header in enumerate(headers):
        end = headers[i + 1].start() if i + 1 < len(headers) else len(text)
        body = text[header.end() : end].removesuffix("\n\n")
        # The log flattens tool output into user messages (mini-swe-agent v1 style), so roles are
        # kept as written rather than guessed into tool calls.
        role = header.group(2)
        assert is_role(role), role  # _HEADER matches the canonical roles only
        messages.append(Message(role=role, parts=(TextPart(body),), source_id=f"message {header.group(1)}", line=line))
    return messages
