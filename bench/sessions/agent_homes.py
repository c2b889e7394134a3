"""Agents' own folders of a home directory (`~/.claude`, `~/.codex`, `~/.pi`, `~/.cline`) read as a dataset.

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
}


def _agent_part(path: PurePath) -> int | None:
    """The index in `path.parts` of the last agent folder it passes through, or None."""
    found = [i for i, part in enumerate(path.parts[:-1]) if part in ROOTS]
    return found[-1] if found else None


def in_agent_folder(path: Path) -> bool:
    """Whether `path` lies inside one of the agents' folders of a home (`ROOTS`)."""
    return _agent_part(Path(path).absolute()) is not None


def is_agent_session(path: Path) -> bool:
    """Whether a file inside an agent's folder is one of its sessions: in its session folder, named
    as the agent names them."""
    absolute = Path(path).absolute()
    at = _agent_part(absolute)
    if at is None:
        return False
    inside = PurePath(*absolute.parts[at + 1 :])
    for folder, names in ROOTS[absolute.parts[at]]:
        if inside.is_relative_to(folder) and any(fnmatch.fnmatchcase(absolute.name, n) for n in names):
            return True
    return False


def home_name(path: Path) -> str | None:
    """The folder of an agent's session file relative to the home (`.claude/projects/-src-app`), which
    its sessions' names start with; None for a file outside the agents' session folders."""
    if not is_agent_session(path):
        return None
    absolute = Path(path).absolute()
    at = _agent_part(absolute)
    assert at is not None
    return PurePath(*absolute.parts[at:-1]).as_posix()
