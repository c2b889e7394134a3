"""What a next step relies on: the items next-step preservation (compactlab.scoring.preservation) scores.

An item is something the step *consumes*, never something it produces, whatever wraps it. The
reader's rule is docs/needed-items-labelling.md; the hand-labelled sample (tests.scripts.needed_sample)
measures precision and recall by it. Extraction reads only assistant steps, never tool results:
  * tool calls: path-valued arguments (`file_path`, `path`, ...) and `url`s as they are, except the
    path of a file written whole (`Write`, `create`: produced like its content); written content
    (`new_string`, pi's `newText`, `content`, `todos`, an `ExitPlanMode` `plan`, ...) gives nothing;
    old text and search patterns give their code-like names; numbers only from line/offset-like keys;
    other strings are read like prose, one-word values are options. Tool-call ids and JSON keys are
    never read.
  * shell commands (a `command` argument, Codex argv, or a ```bash block in text, as mini-swe-agent
    v1 writes them): the first line, whitespace-normalised, without a leading `cd DIR &&`, as a
    command item unless it opens a script (heredoc, unclosed quote) or is plain words and options
    only (`git status -sb`); its paths, URLs, names and numbers, but not the programs it runs
    (`apply_patch`), the module `-m` runs, a heredoc's delimiter, the text `echo`/`printf` print,
    the script of `python -c`/`node -e`, or the file a `>`/`>>` redirection writes. A heredoc's
    body is written content, except a patch's: for `apply_patch` and diffs (`cat > x.patch <<EOF`
    included), the files updated and the removed and context lines are consumed, added lines produced.
  * text and thinking: URLs; pytest node ids; paths (a known extension, absolute paths of 2+
    components, `./` `../` `~/` paths, not right after a placeholder's `]`); error names;
    identifiers: one token in backticks, or code-like tokens (snake_case, CamelCase with an inner
    capital, dotted.names, `name(`), a dotted name ending in a type's own method reduced to what it
    is called on (`order_items.append` → `order_items`); a quoted path may hold spaces; numbers
    with 3+ digits or a decimal point, but not option values (`-n 200`), display limits
    (`'1,200p'`), the last group of `6,623`, or digits glued to names.
  * never: keywords, builtins, names whose first part is a standard-library module or a JavaScript
    global (`os.path.join`, `console.log`), protocol names (`__dict__`), redaction marks
    (`[REDACTED_IP]`), public hosts (`github.com`), acronyms after one lower-case letter (`dGPU`),
    URL templates (`http://localhost:${PORT}`), a glob's `**/` read as a root.
  * a prose word in upper camel case (`WhereNode`, `WireGuard`) is listed, and `step_items` marks
    it: compactlab.scoring.preservation needs it only when the history uses it as code, and never a name of
    one of the session's tools (`TodoWrite`).
Known limits: extension-less relative paths (`src/app`), bare words (`asgiref`), commit hashes,
2-digit numbers and file names with two dots (`pdl.schema.json`, found as a name) are missed;
only a command's first line is read.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from operator import itemgetter
from typing import Literal

from compactlab.memo import IdentityMemo
from compactlab.scoring.known_names import (
    DOM_PROPERTIES,
    DOM_TARGETS,
    EVENT_NAMES,
    GENERAL_NAMES,
    HOST,
    PREFIXED_ACRONYM,
    STOP_WORDS,
    TYPE_METHODS,
)
from compactlab.scoring.matching import Item, Kind
from compactlab.scoring.shell_lines import PATCH_START, command_item, command_line, consumed_part
from compactlab.sessions.messages import FILE_EXTENSIONS  # one list of "file extensions" for the whole project
from compactlab.sessions.model import Message, TextPart, ThinkingPart, ToolCallPart

_URL = re.compile(r"https?://[^\s'\"<>`)\]}]+")
_NODE_ID = re.compile(r"(?<![\w/.-])(?:[\w.-]+/)*[\w.-]+\.py(?:::[\w\[\].-]+)+")
_PATH = re.compile(
    # absolute paths of 2+ components first, so `/a/b.py.backup` is one path, not `/a/b.py`; every
    # kind holds a `.` or a `/`, which the lookahead asks for first (a plain word fails at once
    # instead of after trying each way to split it)
    rf"(?<![\w.$\]!@-])(?=[\w.@+~/:!-]*[./])(?:(?:[A-Za-z]:)?/(?:[\w.@+!-]+(?:\([\w.-]+\))?/)+[\w.@+-]+/?|(?:~|\.{{1,2}})?/?(?:[\w.@+!-]+/)*[\w@+-]+\.(?:{FILE_EXTENSIONS})(?![\w/(])"
    r"|(?:~|\.{1,2})/[\w.@+/-]+)"
)
# Error names: `(?<![\w.])[A-Z]\w*(?:Error|Exception|Warning)(?!\w)|\b(?:StopIteration|KeyboardInterrupt|SystemExit)\b`,
# written to start with the capital it needs, then to look behind it: Python's regular expressions
# skip quickly to where a pattern's first character can match, but try every position of the
# text when it starts by looking behind (the same matches; docs/performance.md).
# A quoted path whose names hold spaces (`"/Users/x/Documents/PAI - TPOS/notes.txt"`): one path, where
# _PATH would find only its fragments. A space must be followed by a further `/`, so that quoted prose
# or a command that starts with a path (`"/compact now"`) is not read as one. (Written, like _ERROR
# below, to start with its first character, the `/` right after the quote.)
_SPACED_PATH = re.compile(r"""/(?<=["'`]/)[^"'`\n<>|;&]*? [^"'`\n<>|;&]*/[^"'`\n<>|;&]*(?=["'`])""")
# A Windows path with backslashes (`D:\\game\\wiki`, `C:\\Users\\x\\a.lua`, doubled in a quoted string): one
# path, where the rules below would read its folders as names. (Its components hold no spaces: a spaced one ends it.)
_WINDOWS_PATH = re.compile(
    r"(?<![\w])[A-Za-z]:\\+(?:[^\s\\\"'`<>|*?]+\\*)*"
    rf"|(?<![\w\\.-])(?:[\w.-]+\\+)+[\w.-]+\.(?:{FILE_EXTENSIONS})(?![\w])"  # and a relative one with a file name
)
_ERROR = re.compile(
    r"[A-Z](?:(?<![\w.][A-Z])\w*(?:Error|Exception|Warning)(?!\w)|(?<=\bS)topIteration\b|(?<=\bK)eyboardInterrupt\b|(?<=\bS)ystemExit\b)"
)
_TOKEN = re.compile(r"(?<![\w.$@/-])[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
# The tokens `_is_identifier` can accept, found without visiting every plain word in Python: a
# `_`, or an ASCII capital after the first letter, in the first name; a dot; or a `(` after it.
# The same token boundaries as _TOKEN (the lookahead only filters), so the same items are found.
# (Read as `(?<![\w.$@-])(?=_|[A-Za-z]\w*?[_A-Z]|[A-Za-z]\w*\.[A-Za-z_]|[A-Za-z]\w*\()` + _TOKEN without its
# lookbehind; written, like _ERROR above, to start with the token's first character.)
_CANDIDATE = re.compile(r"[A-Za-z_](?<![\w.$@/-][A-Za-z_])(?:(?<=_)|(?=\w*?[_A-Z]|\w*\.[A-Za-z_]|\w*\())\w*(?:\.[A-Za-z_]\w*)*")
_ERROR_WORDS = ("Error", "Exception", "Warning", "StopIteration", "KeyboardInterrupt", "SystemExit")
# Numbers: `(?:(?<=\bv)|(?<![\w.]))(?:\d+(?:\.\d+)+|\d{3,})(?!(?!p\b)\w|\.\d)`: not glued to a word or a
# dot, except `v1.2`; a trailing `p` is allowed for sed ranges (`'670,690p'`), other glued letters
# (`100px`) are not. Written, like _ERROR, to start with its first digit.
_NUMBER = re.compile(r"\d(?:(?<=\bv\d)|(?<![\w.]\d))(?:\d*(?:\.\d+)+|\d{2,})(?!(?!p\b)\w|\.\d|-\d\d-\d)")
_OPTION_BEFORE = re.compile(r"(?:^|\s)--?[A-Za-z][\w-]*[ =]$")  # `-n ` / `--lines=` just before
_RANGE_FROM_START = re.compile(r"(?:^|[\s'\"])1,$")
_THOUSANDS = re.compile(r"(?<![\d,.])\d{1,3},$")
_GLOB_STARS = re.compile(r"\*+/")
_BACKTICK = re.compile(r"`([^`\n]+)`")
_FENCE = re.compile(r"```([^\n`]*)\n(.*?)(?:```|\Z)", re.S)  # an unclosed fence runs to the end
PATH_KEYS = frozenset({"file_path", "path", "notebook_path", "filename", "file", "dir", "directory"})
COMMAND_KEYS = frozenset({"command", "cmd"})
URL_KEYS = frozenset({"url", "uri"})
OLD_TEXT_KEYS = frozenset({"old_string", "old_str", "old_text", "oldtext"})  # (keys are read lower-cased: pi's `oldText`)
PATTERN_KEYS = frozenset({"pattern", "regex", "query", "glob", "symbol"})
# What a tool stores is produced by the step: file contents, new text, a todo list, the plan a step
# proposes (Claude Code's `ExitPlanMode`: one such plan named 220 items of the session it was written from).
WRITTEN_KEYS = frozenset(
    {"new_string", "new_str", "new_text", "newtext", "content", "file_text", "contents", "insert_text", "todos", "plan"}
    # and text a step writes for another reader (issue 41): the prompt of a sub-agent (Claude Code's
    # `Agent`/`Task`) or of a fetch, a task it files (`TaskCreate`'s subject), the prompts
    # `ExitPlanMode` asks leave for, the questions it puts to the user
    | {"prompt", "subject", "allowedprompts", "questions", "activeform"}
)
# A call that gives a sub-agent or a task its text: its `description` is written for that reader too
# (a shell command's `description` is the step's own label of what it runs, read like prose).
BRIEF_KEYS = frozenset({"prompt", "subject"})
WHOLE_FILE_KEYS = frozenset({"content", "file_text", "contents"})  # the whole of a file a tool writes
NUMBER_KEYS = frozenset({"offset", "line", "lines", "line_number", "start_line", "end_line", "view_range", "insert_line", "port"})
SHELL_FENCES = frozenset({"bash", "sh", "shell", "zsh", "console"})
# A prose word in upper camel case (`WhereNode`, but also `WireGuard`): kind "name" until the
# history shows it used as code (compactlab.scoring.preservation); then it is an identifier.
_NAME: Literal["name"] = "name"
# A bare capitalised `.js` name in prose (`Next.js`, `Three.js`): a library's name, or a file of the
# session (`Button.js`); kind "bare" until the history shows it as a file, below a folder (`src/Button.js`).
_BARE: Literal["bare"] = "bare"
_LIBRARY_NAME = re.compile(r"[A-Z][A-Za-z0-9]*\.js")
# What the scanners find: an item kind, or a prose name not yet known to be an identifier.
ScanKind = Kind | Literal["name", "bare"]


@lru_cache(maxsize=1 << 16)  # the same words recur in every step of a session
def _is_identifier(token: str, followed_by: str) -> bool:
    """Whether a word-like token is code-like enough to count (see the module docstring)."""
    if token in STOP_WORDS or len(token) < 3 or token.split(".", 1)[0] in GENERAL_NAMES:
        return False
    if HOST.fullmatch(token) or PREFIXED_ACRONYM.fullmatch(token):
        return False
    if token.startswith("__") and token.endswith("__"):  # a protocol name of the language (`__get__`)
        return False
    if followed_by == "(":
        return True
    if "." in token:
        return len(token) >= 5 and not token.replace(".", "").isdigit()
    stripped = token.strip("_")
    if "_" in stripped:
        return any(c.isalpha() for c in stripped)
    # CamelCase with an inner capital (`applyFilters`, `WhereNode`), but not plurals like `URLs`.
    return bool(re.search(r"[a-z]", token) and re.search(r"[A-Z]", token[1:]) and not re.fullmatch(r"[A-Z]+s", token))


def _receiver(token: str, called: bool) -> str | None:
    """A call of a type's own method (`order_items.append(`, `self.rows.append(`), or JavaScript's
    `.length`, is the name it is called on (`order_items`, `self.rows`), or None when that is no item
    either (`lines`); other names stay as they are. Not called, the name may be an attribute of the
    session's data that shares a method's name (`l.title`, `row.index`)."""
    parts = token.split(".")
    platform = next(
        (
            i
            for i, part in enumerate(parts)
            if (i == 1 and part in DOM_TARGETS and parts[0] in EVENT_NAMES)
            or (i and part in DOM_PROPERTIES and i < len(parts) - 1)
        ),
        None,
    )
    if platform is not None:  # `e.target.value`: the DOM's own objects, reached through `e`
        head = ".".join(parts[:platform])
        return head if _is_identifier(head, "") else None
    head, _, last = token.rpartition(".")
    if not head or last not in TYPE_METHODS or not (called or last == "length"):
        return token
    return head if _is_identifier(head, "") else None


def _path_item(value: str) -> str | None:
    """A path without `./` or a trailing `/`; None for a bare word like `test` (too common) or `/dev/null`."""
    value = value.strip().removeprefix("./").rstrip("/\\")
    if "\n" in value or value.startswith("/dev/") or ("/" not in value and "." not in value and "\\" not in value):
        return None
    return value


def _scan(text: str, found: list[tuple[ScanKind, str]], *, numbers: bool = True, prose: bool = False) -> None:
    """Append the items of one piece of prose or command text to `found`, in text order.

    Higher-priority matches (URL, node id, path, error) are blanked out before the later rules run,
    so that the parts of a path are not found again as identifiers or numbers.
    """
    hits: list[tuple[int, ScanKind, str]] = []

    def take(pattern: re.Pattern[str], kind: Kind) -> None:
        nonlocal text
        matches = list(pattern.finditer(text))
        if not matches:
            return
        for m in matches:
            value = m.group(0).rstrip(".,:;!?'\"")
            if kind == "path":
                if value.endswith(")") and value.count(")") > value.count("("):
                    value = value[:-1]  # `(see C:\\Windows\\MEMORY.DMP)`: the bracket closes the prose
                path = _path_item(value)
                if not path:
                    continue
                value = path
            elif kind == "url" and ("${" in value or "{{" in value):
                continue  # a template (`http://localhost:${PORT}/notify`), cut at its `}`: no URL of the session
            hits.append((m.start(), _BARE if prose and kind == "path" and _LIBRARY_NAME.fullmatch(value) else kind, value))
            if kind == "identifier" and "::" in value:  # a node id also names its file
                hits.append((m.start(), "path", value.split("::", 1)[0]))
        text = _blanked(text, matches)

    take(_URL, "url")
    if ".py::" in text:  # every node id holds it; the pattern is slow on text without one
        take(_NODE_ID, "identifier")
    take(_SPACED_PATH, "path")
    if "\\" in text:  # every Windows path holds one
        take(_WINDOWS_PATH, "path")
    take(_PATH, "path")
    if any(word in text for word in _ERROR_WORDS):  # likewise for error names
        take(_ERROR, "error")
    for m in _CANDIDATE.finditer(text):
        end = m.end()
        following = text[end : end + 3]
        if following == "(s)":  # "file(s)" is English, not a call
            continue
        token = m.group()
        start = m.start()
        if start and text[start - 1] == "[" and following[:1] == "]" and token.isupper():
            continue  # a placeholder or redaction mark (`[REDACTED_IP]`), not a name
        if _is_identifier(token, following[:1]) and "." in token:
            receiver = _receiver(token, following[:1] == "(")
            if receiver is None:
                continue
            if receiver != token:
                hits.append((start, "identifier", receiver))
                continue
        if _is_identifier(token, following[:1]):
            weak = prose and token[0].isupper() and following[:1] != "(" and "_" not in token and "." not in token
            hits.append((start, _NAME if weak else "identifier", token))
    if numbers:
        for m in _NUMBER.finditer(text):
            start = m.start()
            before = text[max(0, start - 40) : start]
            if before.endswith("-") and not before[-2:-1].isdigit():  # `-100`, `django-15213`
                continue
            if _RANGE_FROM_START.search(before):  # `sed -n '1,200p'`: how much to show, not a line
                continue
            if before.endswith(",") and _THOUSANDS.search(before) and text[m.end() : m.end() + 1] != "p":
                continue  # the last group of `6,623`, not a number of its own (`670,690p` is a range)
            if not _OPTION_BEFORE.search(before):
                hits.append((start, "number", m.group()))
    hits.sort(key=itemgetter(0))  # stable: a node id's path stays after the node id
    found.extend((kind, value) for _, kind, value in hits)


def _blanked(text: str, matches: list[re.Match[str]]) -> str:
    """`text` with the matched spans replaced by as many spaces (what `pattern.sub` would give)."""
    pieces: list[str] = []
    end = 0
    for m in matches:
        pieces += (text[end : m.start()], " " * (m.end() - m.start()))
        end = m.end()
    pieces.append(text[end:])
    return "".join(pieces)


def _scan_prose(text: str, found: list[tuple[ScanKind, str]]) -> None:
    """Text or thinking: code blocks and backticked spans first, since the author marked them as code.

    A shell block (```bash) is a command, read as a tool call's command is: mini-swe-agent v1 acts
    by writing one, and a heredoc in it is content being written."""
    if "```" in text:
        for info, block in _FENCE.findall(text):
            if info.strip().lower() in SHELL_FENCES:
                _scan_command(block, found)
            else:
                _scan(block, found, numbers=False)
        text = _FENCE.sub(" ", text)
    for span in _BACKTICK.findall(text):
        token = span.strip().removesuffix("()")
        called = token != span.strip()
        is_name = re.fullmatch(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*", token) and not _PATH.fullmatch(token)
        general = token.split(".", 1)[0] in GENERAL_NAMES or (token.startswith("__") and token.endswith("__"))
        if is_name and _ERROR.fullmatch(token):
            found.append(("error", token))  # builtin error names too: the step reacts to one it saw
        elif is_name and token not in STOP_WORDS and len(token) >= 3 and not general and not HOST.fullmatch(token):
            if (name := _receiver(token, called)) is not None:
                found.append(("identifier", name))  # `session_nav.html` stays a path
        elif not is_name:
            _scan(f"`{span}`", found)  # in its backticks: a path in them may hold spaces (_SPACED_PATH)
    _scan(_BACKTICK.sub(" ", text), found, prose=True)


def _scan_command(value: object, found: list[tuple[ScanKind, str]]) -> None:
    """A shell command: its first line, and the consumed part of a patch it applies."""
    if isinstance(value, list) and len(value) == 2 and value[0] == "apply_patch" and isinstance(value[1], str):
        _scan_patch(value[1], found)  # Codex argv ["apply_patch", PATCH]
        return
    line = command_line(value)
    if not line:
        return
    if item := command_item(line):
        found.append(("command", item))
    _scan(consumed_part(line), found)
    if isinstance(value, list):
        value = value[-1]
    if isinstance(value, str) and (PATCH_START in value or "\n--- " in value) and "\n" in value:
        _scan_patch(value.split("\n", 1)[1], found)  # a patch given on standard input (`apply_patch <<EOF`)


def _scan_patch(patch: str, found: list[tuple[ScanKind, str]]) -> None:
    """A patch (Codex's `*** Begin Patch` or a unified diff): the files it updates or deletes and
    the text it removes or keeps as context are consumed; added lines and added files are produced."""
    consumed = []
    for line in patch.splitlines():
        for marker in ("*** Update File:", "*** Delete File:", "--- a/", "--- "):
            if line.startswith(marker):
                if path := _path_item(line[len(marker) :]):
                    found.append(("path", path))
                break
        else:
            if line.startswith(("-", " ")):
                consumed.append(line[1:])
            elif line.startswith("@@"):
                consumed.append(line.strip("@ "))
    if consumed:
        _scan("\n".join(consumed), found, numbers=False, prose=True)


def _scan_arguments(value: object, key: str, found: list[tuple[ScanKind, str]]) -> None:
    """Walk tool-call arguments by value; the key only decides how a value is read."""
    if key in WRITTEN_KEYS:
        return
    if isinstance(value, dict):
        # A file written whole (`Write`, `create`): its path is where the step puts what it writes,
        # produced like the content, whether or not the file was there before.
        whole = any(str(k).lower() in WHOLE_FILE_KEYS for k in value)
        brief = any(str(k).lower() in BRIEF_KEYS for k in value)
        for sub_key, sub_value in value.items():
            name = str(sub_key).lower()
            if not (whole and name in PATH_KEYS) and not (brief and name == "description"):
                _scan_arguments(sub_value, name, found)
    elif isinstance(value, list) and key not in COMMAND_KEYS:
        for element in value:
            _scan_arguments(element, key, found)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        if key in NUMBER_KEYS and _NUMBER.fullmatch(str(value)):
            found.append(("number", str(value)))
    elif key in COMMAND_KEYS:
        _scan_command(value, found)
    elif not isinstance(value, str):
        return
    elif key in PATH_KEYS:
        if path := _path_item(value):
            found.append(("path", path))
    elif key in URL_KEYS:
        found.append(("url", value.strip()))
    elif key in PATTERN_KEYS:  # a glob's `**/` is no root: `**/claude.md` names claude.md, not /claude.md
        _scan(_GLOB_STARS.sub(" ", value), found, numbers=False, prose=True)
    elif key in OLD_TEXT_KEYS:
        _scan(value, found, numbers=False, prose=True)  # old text may be prose too (a README's)
    elif value.startswith(PATCH_START):  # a patch as the whole input (`{"input": PATCH}`)
        _scan_patch(value, found)
    elif len(value.split()) > 1:  # prose (a description, a prompt); one word is an option value
        _scan_prose(value, found)


def extract_items(messages: Sequence[Message]) -> list[Item]:
    """What these messages rely on, deduplicated by text (first kind wins), in order of appearance.

    A prose word in upper camel case is listed as an identifier here; `step_items` says which
    ones are only that, for a caller that can check the history for its use as code."""
    return step_items(messages)[0]


def step_items(messages: Sequence[Message]) -> tuple[list[Item], frozenset[str]]:
    """`extract_items`, and the texts among them found only as prose words in upper camel case
    (`WhereNode`, `WireGuard`) or as bare capitalised `.js` names (`Next.js`): names of code or of
    products, which only the history can tell."""
    seen: dict[str, Item] = {}
    weak: set[str] = set()
    strong: set[str] = set()
    for message in messages:
        for kind, text in _message_items(message):
            if not text:
                continue
            (weak if kind in (_NAME, _BARE) else strong).add(text)
            if text not in seen:
                seen[text] = Item("identifier" if kind == _NAME else "path" if kind == _BARE else kind, text)
    return list(seen.values()), frozenset(weak - strong)


# Each message's found items, in order, kept while the message lives: a sweep scores the same
# next steps at the same compaction points under many settings. The entry holds the message so
# its id cannot be reused by another object while the entry lives.
_ITEMS: IdentityMemo[list[tuple[ScanKind, str]]] = IdentityMemo(100_000)


def _message_items(message: Message) -> list[tuple[ScanKind, str]]:
    return _ITEMS.of(message, _items_of)


def _items_of(message: Message) -> list[tuple[ScanKind, str]]:
    found: list[tuple[ScanKind, str]] = []
    for part in message.parts:
        if isinstance(part, (TextPart, ThinkingPart)):
            _scan_prose(part.text, found)
        elif isinstance(part, ToolCallPart):
            arguments = part.parsed_arguments()
            if isinstance(arguments, (dict, list)):
                _scan_arguments(arguments, "", found)
            elif str(arguments).startswith(PATCH_START):  # raw text input: Codex's apply_patch
                _scan_patch(str(arguments), found)
            else:  # other raw text input: read it like prose
                _scan_prose(str(arguments), found)
    return found
