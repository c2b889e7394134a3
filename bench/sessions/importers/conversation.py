"""What an importer gathers of one session while it reads a store that is not one record a line."""

from __future__ import annotations

from collections import Counter

from compactlab.sessions import model
from compactlab.sessions.importers.importer import ToolPairing, is_cost
from compactlab.sessions.source import RecordIssues


class Conversation:
    """The messages read so far (tool results without their call dropped, `ToolPairing`), the real
    compactions, what was ignored by design and the models of the calls; `session` makes the
    `Session`, with the skips reported since it began (a store of several sessions shares `issues`)."""

    def __init__(self, issues: RecordIssues):
        self.issues = issues
        self.pairing = ToolPairing(issues)
        self.messages: list[model.Message] = []
        self.compactions: list[model.CompactionMarker] = []
        self.ignored: Counter[str] = Counter()
        self.models: set[str] = set()
        self.skips_before = len(issues.skipped)

    def append(self, message: model.Message) -> None:
        kept = self.pairing.filter(message)
        if kept is not None and kept.parts:
            if kept.call is not None:
                self.models.add(kept.call.model)
            self.messages.append(kept)

    def bad_cost(self, value: object, where: str) -> bool:
        """Whether a recorded cost is no cost in USD (then reported): absent (None) is no cost recorded."""
        if value is None or is_cost(value):
            return False
        self.issues.report(None, f"{where} must be a cost in USD, got {value!r:.40}")
        return True

    def session(self, id: str, source_format: str, path: str, subagent: bool = False) -> model.Session:
        return model.Session(
            id=id,
            source_format=source_format,
            source_path=path,
            messages=tuple(self.messages),
            models=tuple(sorted(self.models)),
            compactions=tuple(self.compactions),
            skipped=tuple(self.issues.skipped[self.skips_before :]),
            ignored=tuple(sorted(self.ignored.items())),
            is_subagent=subagent,
        )


def model_name(value: object) -> str:
    """The model a call names, or "unknown"."""
    return value if isinstance(value, str) and value else "unknown"
