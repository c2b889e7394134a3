"""What a recorded tool call did to the agent's environment: read it, fetched from the web, wrote
files, had other side effects, depended on the time, or ran something the session cannot judge.

Both the recoverability rule (`compactlab.scoring.recoverability`: can a lost item be read again?)
and the recoverability-aware eviction strategy (`compactlab.strategies.evict`) ask this of a call,
so the vocabulary lives here, below both. It reads only the call: its tool's name and arguments,
and for shell commands the command line (not a heredoc body, which is content, not an action).

    read         a file read, a listing or a search: the same call would show the same thing while
                 nothing changed what it shows (`paths`: the files a single-file read shows)
    fetch        a URL fetched (WebFetch, curl/wget without a body)
    write        it wrote files (`paths`): Write, Edit, apply_patch, `sed -i`, redirection, `tee`, ...
    side_effect  it changed something else for good: rm, mv, git commit, installs, kills, ...
    time         its output depends on when it ran: date, ps, top, uptime, a web search
    run          anything else (a script, a test run, a build, a sub-agent): it can be run again,
                 but whether it would print the same the session cannot tell
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Literal

from compactlab.memo import IdentityMemo
from compactlab.sessions.messages import _SHELL_PATH, _SHELL_WRITES, PATH_KEYS, WRITE_TOOLS
from compactlab.sessions.model import ToolCallPart

Effect = Literal["read", "fetch", "write", "side_effect", "time", "run"]

# Tool names (lower case) of the agents in the shared data and their kin.
_FILE_READ_TOOLS = frozenset({"read", "read_file", "view", "notebookread", "cat"})
_SEARCH_TOOLS = frozenset({"grep", "glob", "ls", "list_dir", "list_directory", "search", "find", "codebase_search"})
_FETCH_TOOLS = frozenset({"webfetch", "web_fetch", "fetch", "fetch_url"})
_TIME_TOOLS = frozenset({"websearch", "web_search", "bashoutput", "taskoutput"})
_SHELL_TOOLS = frozenset({"bash", "shell", "shell_command", "exec_command", "run_terminal_cmd", "terminal"})

# Programs whose output shows the files or the repository as they are (no option of theirs used
# here writes; `sed -i` and `find -delete` are caught before). `git` only with these subcommands.
_READ_PROGRAMS = frozenset(
    {"cat", "head", "tail", "less", "more", "nl", "sed", "grep", "egrep", "rg", "ag", "find", "ls", "tree", "wc", "file",
     "stat", "du", "diff", "awk", "sort", "uniq", "cut", "tr", "pwd", "which", "jq", "realpath", "basename", "dirname",
     "readlink", "cd", "echo", "printf", "true", "column", "xxd", "od", "md5sum", "sha256sum", "type"}
)  # fmt: skip
_GIT_READS = frozenset({"log", "status", "diff", "show", "blame", "branch", "ls-files", "grep", "rev-parse", "remote", "config"})
_TIME_PROGRAMS = frozenset({"date", "ps", "top", "htop", "uptime", "df", "free", "ping", "docker", "kubectl", "lsof", "netstat"})
_SIDE_EFFECT_PROGRAMS = frozenset(
    {"rm", "rmdir", "mv", "cp", "mkdir", "touch", "chmod", "chown", "ln", "kill", "pkill", "pip", "pip3", "npm", "pnpm",
     "yarn", "apt", "apt-get", "brew", "cargo", "uv", "poetry", "conda", "patch", "tar", "unzip", "gh"}
)  # fmt: skip
_FETCH_PROGRAMS = frozenset({"curl", "wget"})
_SEGMENTS = re.compile(r"\|\|?|&&|;")
_ENV_ASSIGNMENT = re.compile(r"^\w+=")
# A Codex patch names each file it changes: `*** Update File: PATH` (what, path).
PATCH_FILE = re.compile(r"^\*\*\* (Update|Add|Delete) File: (.+)$", re.M)


@dataclass(frozen=True)
class CallEffect:
    effect: Effect
    paths: tuple[str, ...] = ()  # the files a single-file read shows, or the files a write changed
    command: str | None = None  # a shell command's line, whitespace-normalised (what re-running it repeats)

    def describe(self, name: str) -> str:
        """How to get the call's output back, in a few words: the path, or the command."""
        if self.command:
            return f"run `{self.command[:160]}` again"
        if self.paths:
            return f"{name} {', '.join(self.paths[:3])} again"
        return f"call {name} again"


def call_effect(call: ToolCallPart) -> CallEffect:
    """What `call` did to the environment (module docstring). Read once per call: every compaction
    of a session asks again about the same calls."""
    return _EFFECTS.of(call, _effect_of)


# The entry holds the call, so its id is not reused while it lives (`compactlab.memo`).
_EFFECTS: IdentityMemo[CallEffect] = IdentityMemo(100_000)


def _effect_of(call: ToolCallPart) -> CallEffect:
    name = call.name.lower()
    arguments = call.parsed_arguments()
    if name == "apply_patch":
        patch = arguments.get("input", "") if isinstance(arguments, dict) else call.arguments
        return CallEffect("write", tuple(m.group(2).strip() for m in PATCH_FILE.finditer(str(patch))))
    if not isinstance(arguments, dict):
        return CallEffect("run")
    paths = tuple(str(arguments[k]) for k in PATH_KEYS if isinstance(arguments.get(k), str))
    command = _command(arguments.get("command", arguments.get("cmd")))
    if command is not None and (name in _SHELL_TOOLS or not paths):
        return shell_effect(command)
    if name in WRITE_TOOLS or (("write" in name or "edit" in name) and paths):  # not TodoWrite: it names no file
        return CallEffect("write", paths)
    if name in _FILE_READ_TOOLS:
        return CallEffect("read", paths)
    if name in _SEARCH_TOOLS:
        return CallEffect("read")  # a listing or search: what it shows is not one file
    if name in _FETCH_TOOLS or (isinstance(arguments.get("url"), str) and "navigate" not in name):
        return CallEffect("fetch")
    if name in _TIME_TOOLS:
        return CallEffect("time")
    return CallEffect("run")


def shell_effect(command: str) -> CallEffect:
    """A shell command's effect: the strongest of its pipeline's programs (write > side effect >
    time > run > fetch > read). Only the first line counts: a heredoc body is content."""
    line = " ".join(command.split("\n", 1)[0].split())
    paths = tuple(dict.fromkeys(_SHELL_PATH.findall(line)))
    if _SHELL_WRITES.search(line) or re.search(r"\bfind\b.*\s-(?:delete|exec)\b", line):
        return CallEffect("write", paths, line)
    effects = {_program_effect(segment) for segment in _SEGMENTS.split(line) if segment.strip()}
    if "side_effect" in effects:
        return CallEffect("side_effect", paths, line)  # `rm x.py`, `mv a.py b.py`: the files it changed
    strongest: tuple[Effect, ...] = ("time", "run", "fetch")
    for effect in strongest:
        if effect in effects:
            return CallEffect(effect, (), line)
    # A read of one named file shows that file; a listing or search shows no one file.
    return CallEffect("read", paths if len(paths) == 1 else (), line)


def _program_effect(segment: str) -> Effect:
    try:
        words = shlex.split(segment)
    except ValueError:  # an unclosed quote: split on whitespace
        words = segment.split()
    words = [w for w in words if not _ENV_ASSIGNMENT.match(w)]
    if not words:
        return "read"
    program = words[0].rsplit("/", 1)[-1]
    if program == "git":
        sub = next((w for w in words[1:] if not w.startswith("-")), "")
        return "read" if sub in _GIT_READS else "side_effect"
    if program in _READ_PROGRAMS:
        return "read"
    if program in _FETCH_PROGRAMS:
        return "run" if any(w in ("-d", "--data", "-X", "-F", "-T", "--upload-file") for w in words) else "fetch"
    if program in _TIME_PROGRAMS:
        return "time"
    if program in _SIDE_EFFECT_PROGRAMS:
        return "side_effect"
    return "run"


def _command(value: object) -> str | None:
    """A shell command given as text or as an argv list (Codex: ["bash", "-lc", "the command"])."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return value[-1] if len(value) >= 3 and value[1] in ("-c", "-lc") else " ".join(value)
    return None


def same_file(a: str, b: str) -> bool:
    """Whether two paths name one file: equal, or one a suffix of the other at a `/` (`x/y.py`,
    `/repo/x/y.py`), as tools name files from different roots."""
    a, b = a.removeprefix("./"), b.removeprefix("./")
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)
