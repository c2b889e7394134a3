"""opencode's session store: the SQLite database `opencode.db` (from 1.2) or the JSON files of
`storage/` before it (`~/.local/share/opencode/`).

Facts of the format this importer relies on (sst/opencode `packages/opencode/src/session/session.sql.ts`
and `storage/json-migration.ts`; anomalyco/opencode issue 48542; files written by opencode itself):
- The database holds tables `session` (`id`, `parent_id`: the session that started this sub-agent
  session, `title`, `version`), `message` (`id`, `session_id`, `time_created`, `data`: the message's
  JSON less its ids) and `part` (`id`, `message_id`, `data`). Every session of the database is read.
  opencode 2 moved to `session_v2`/`session_message` tables: a database without the `message` and
  `part` tables is refused, naming the tables it has.
- Before 1.2 the same JSON lives in files: `storage/session/<project>/<ses_id>.json` (the session),
  `storage/message/<ses_id>/<msg_id>.json` and `storage/part/<msg_id>/<prt_id>.json`. The session's
  file is the one named: its messages and parts are read from the folders beside it.
- Messages are in `time.created` order (ties by id), parts in id order. What a message and its parts
  mean: `opencode_messages`.
- The database is opened read-only; a database still being written (its `-wal` file beside it) is
  read with what that file holds.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

from compactlab.sessions import model
from compactlab.sessions.importers.importer import FormatFacts
from compactlab.sessions.importers.opencode_messages import OpencodeBuilder
from compactlab.sessions.source import RecordIssues, SessionError, Source

SQLITE_HEADER = b"SQLite format 3\x00"
TABLES = ("session", "message", "part")


class OpencodeImporter:
    name = "opencode"
    description = "opencode sessions: opencode.db (SQLite, from 1.2) or storage/session/*/ses_*.json with its messages and parts"
    facts = FormatFacts(system_prompt_in_file=False, engine_preset="opencode")

    def match(self, source: Source) -> str | None:
        if source.raw[:16] == SQLITE_HEADER:
            tables = _tables(source)
            if tables is None:
                return "an SQLite database that cannot be opened"
            return None if set(TABLES) <= tables else f"an SQLite database without opencode's tables {', '.join(TABLES)}"
        if _storage_session(source) is not None:
            return None
        return "neither opencode.db (an SQLite database with session, message and part tables) nor storage/session/*/ses_*.json"

    def load(self, source: Source, issues: RecordIssues) -> list[model.Session]:
        if source.raw[:16] == SQLITE_HEADER:
            return _load_database(source, issues)
        session = _storage_session(source)
        if session is None:
            raise SessionError(source.path, None, "not an opencode session file: expected an object whose `id` starts with ses_")
        return [_load_storage(source, session, issues)]


def _connect(source: Source) -> sqlite3.Connection:
    if source.path.suffix == ".gz":  # a gzipped copy: read from memory
        connection = sqlite3.connect(":memory:")
        connection.deserialize(source.raw)
        return connection
    return sqlite3.connect(f"{source.path.absolute().as_uri()}?mode=ro", uri=True)


def _tables(source: Source) -> set[str] | None:
    try:
        with closing(_connect(source)) as connection:
            return {name for (name,) in connection.execute("select name from sqlite_master where type = 'table'")}
    except sqlite3.Error:
        return None


def _load_database(source: Source, issues: RecordIssues) -> list[model.Session]:
    tables = _tables(source) or set()
    if not set(TABLES) <= tables:
        raise SessionError(
            source.path,
            None,
            f"an SQLite database without opencode's tables {', '.join(TABLES)} (it has: {', '.join(sorted(tables))})",
        )
    try:
        with closing(_connect(source)) as connection:
            sessions = connection.execute("select id, parent_id from session order by time_created, id").fetchall()
            messages = connection.execute(
                "select session_id, id, data from message order by session_id, time_created, id"
            ).fetchall()
            parts = connection.execute("select message_id, id, data from part order by message_id, id").fetchall()
    except sqlite3.Error as exc:
        raise SessionError(source.path, None, f"cannot read the opencode database: {exc}") from exc
    parts_of: dict[str, list[tuple[str, object]]] = {}
    for message_id, part_id, data in parts:
        parts_of.setdefault(message_id, []).append((part_id, data))
    messages_of: dict[str, list[tuple[str, object]]] = {}
    for session_id, message_id, data in messages:
        messages_of.setdefault(session_id, []).append((message_id, data))
    out = []
    for session_id, parent_id in sessions:
        builder = OpencodeBuilder(issues)
        for message_id, data in messages_of.get(session_id, []):
            parsed = [(part_id, builder.parse(f"part {part_id}", text)) for part_id, text in parts_of.get(message_id, [])]
            builder.add(message_id, builder.parse(f"message {message_id}", data), parsed)
        out.append(builder.build(str(session_id), OpencodeImporter.name, str(source.path), subagent=parent_id is not None))
    return out


def _storage_session(source: Source) -> dict | None:
    """The session object of a storage/session/<project>/ses_*.json file, or None."""
    if not source.path.name.startswith("ses_") or source.path.parent.parent.name != "session":
        return None
    if not source.is_single_document():
        return None
    data = source.document
    if isinstance(data, dict) and isinstance(data.get("id"), str) and data["id"].startswith("ses_") and "version" in data:
        return data
    return None


def _load_storage(source: Source, session: dict, issues: RecordIssues) -> model.Session:
    storage = source.path.parent.parent.parent
    folder = storage / "message" / session["id"]
    if not folder.is_dir():
        raise SessionError(source.path, None, f"no folder {folder} of this session's messages beside it")
    builder = OpencodeBuilder(issues)
    infos = [(path, builder.parse(str(path), _read(path, builder))) for path in sorted(folder.glob("msg_*.json"))]
    infos.sort(key=lambda item: (_created(item[1]), item[0].name))
    for path, info in infos:
        message_id = path.stem
        files = sorted((storage / "part" / message_id).glob("prt_*.json"))
        builder.add(message_id, info, [(p.stem, builder.parse(str(p), _read(p, builder))) for p in files])
    parent = session.get("parentID")
    return builder.build(session["id"], OpencodeImporter.name, str(source.path), subagent=isinstance(parent, str))


def _read(path: Path, builder: OpencodeBuilder) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        builder.issues.report(None, f"{path}: cannot be read ({exc})")
        return None


def _created(info: object) -> float:
    time = info.get("time") if isinstance(info, dict) else None
    created = time.get("created") if isinstance(time, dict) else None
    return float(created) if isinstance(created, (int, float)) and not isinstance(created, bool) else 0.0
