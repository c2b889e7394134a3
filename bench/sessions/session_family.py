"""The family of a session: a sub-agent's session goes with the parent session that started it.

Claude Code writes a sub-agent's conversation to a file of its own, whose records carry the
`sessionId` of the parent session (the same id every record of the parent's file carries). Text a
sub-agent read or wrote is largely its parent's, so a train/test split must keep a session and its
sub-agents on one side: a split by file lets a parent's material leak into "out of sample" through
its sub-agents (issue 27). Other formats have no sub-agent files: a session is its own family.
"""

from __future__ import annotations

import gzip
import json
from functools import lru_cache
from pathlib import Path

from compactlab.sessions.importers import format_facts
from compactlab.sessions.model import Session

_LINES_READ = 50  # the session id is on the first records; a file without it in these is its own family


def session_family(session: Session) -> str:
    """The id of `session`'s family: its Claude Code `sessionId`, which a parent session's file
    and its sub-agents' files share; else the session's own id (a family of one)."""
    key = format_facts(session.source_format).family_key  # the importer says which format has sub-agent files
    if key is None:
        return session.id
    return _session_id(session.source_path, key) or session.id


@lru_cache(maxsize=4096)
def _session_id(path: str, key: str) -> str | None:
    """The first `key` (`sessionId`) among the file's first records (None: unreadable, or none there)."""
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(Path(path), "rt", encoding="utf-8", errors="replace") as lines:
            for _, line in zip(range(_LINES_READ), lines):
                if f'"{key}"' not in line:
                    continue
                try:
                    record = json.loads(line)
                except ValueError:  # a damaged line: the next record will say it
                    continue
                if isinstance(record, dict) and isinstance(record.get(key), str):
                    return record[key]
    except OSError:
        return None
    return None
