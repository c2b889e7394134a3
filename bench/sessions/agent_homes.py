"""Agents' own folders of a home directory (`~/.claude`, `~/.codex`, `~/.pi`, `~/.cline`,
`~/.local/share/opencode`) read as a dataset.

A folder named on the command line may be a whole home directory, or one of the agents' folders in
it. Beside their sessions these folders hold files that are no sessions although their names say
so: `~/.claude/history.jsonl` and `~/.codex/history.jsonl` (the prompts typed), settings, `auth.json`,
a Cline session's manifest `<id>.json` beside its `<id>.messages.json`. Inside an agent's folder only
the files of its session folder, named as the agent names its sessions, are sessions (`ROOTS`);
the rest are passed over, counted and shown. Each session is named by its folder relative to the
home (`.codex/sessions/2025/11/17/rollout-...`), so the same layout names the same session alike
wherever the home is, and two agents' sessions never share a name. Claude Code's sub-agent files
(`<session>/subagents/agent-*.jsonl`) sit in their parent's folder: their records name the parent
(`session_family`), whatever the path.
"""

from __future__ import annotations

import fnmatch
from pathlib import Path, PurePath

# The agent's folder in a home, the folder of its sessions inside it, and the names its sessions have
# (Claude Code: projects/<project>/<session>.jsonl; Codex: sessions/YYYY/MM/DD/rollout-*.jsonl and
# archived_sessions/; pi: agent/sessions/--<cwd>--/*.jsonl; Cline SDK: data/sessions/<id>/<id>.messages.json).
ROOTS: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
    ".claude": (("projects", ("*.jsonl", "*.jsonl.gz")),),
    ".codex": (
        ("sessions", ("rollout-*.jsonl", "rollout-*.jsonl.gz")),
        ("archived_sessions", ("rollout-*.jsonl", "rollout-*.jsonl.gz")),
    ),
    ".pi": (("agent/sessions", ("*.jsonl", "*.jsonl.gz")),),
    ".cline": (("data/sessions", ("*.messages.json", "*.messages.json.gz")),),
    # opencode: its database, or (before 1.2) storage/session/<project>/ses_*.json with storage/message
    # and storage/part beside it (the importer reads those from the session's file).
    ".local/share/opencode": ((".", ("opencode.db",)), ("storage/session", ("ses_*.json",))),
}
# Agents whose sessions are named by the agent's folder alone: opencode 1.2 copies the JSON files'
# sessions into its database and leaves the files (storage/json-migration.ts deletes none), so a session found in both gets one name, and the
# second is refused as the same session twice rather than counted twice.
NAMED_BY_FOLDER = (".local/share/opencode",)


def _agent_part(path: PurePath) -> tuple[int, str] | None:
    """(the index in `path.parts` just past the last agent folder it passes through, that folder's
    key in ROOTS), or None."""
    found = None
    folders = path.parts[:-1]
    for key in ROOTS:
        wanted = tuple(key.split("/"))
        for start in range(len(folders) - len(wanted) + 1):
            if folders[start : start + len(wanted)] == wanted and (found is None or start + len(wanted) > found[0]):
                found = (start + len(wanted), key)
    return found


def in_agent_folder(path: Path) -> bool:
    """Whether `path` lies inside one of the agents' folders of a home (`ROOTS`)."""
    return _agent_part(Path(path).absolute()) is not None


def is_agent_session(path: Path) -> bool:
    """Whether a file inside an agent's folder is one of its sessions: in its session folder, named
    as the agent names them."""
    absolute = Path(path).absolute()
    found = _agent_part(absolute)
    if found is None:
        return False
    end, key = found
    inside = PurePath(*absolute.parts[end:])
    for folder, names in ROOTS[key]:
        placed = inside.parent == PurePath(".") if folder == "." else inside.is_relative_to(folder)
        if placed and any(fnmatch.fnmatchcase(absolute.name, n) for n in names):
            return True
    return False


def home_name(path: Path) -> str | None:
    """The folder of an agent's session file relative to the home (`.claude/projects/-src-app`), which
    its sessions' names start with; None for a file outside the agents' session folders."""
    if not is_agent_session(path):
        return None
    absolute = Path(path).absolute()
    found = _agent_part(absolute)
    assert found is not None
    end, key = found
    if key in NAMED_BY_FOLDER:
        return key
    return PurePath(*absolute.parts[end - len(key.split("/")) : -1]).as_posix()
