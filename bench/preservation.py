"""Next-step preservation: does the compacted context still hold what the agent does next needs?

Replay is open-loop: after a compaction the recorded future is replayed unchanged. So we can look
at the next k recorded assistant steps (k = 1 and 5), list what they rely on (file paths,
identifiers, commands, URLs, error names, numbers), keep the items the history before the
compaction already contained, and score the share still present in the compacted context:

    score = len(kept) / len(needed)      (None when nothing is needed: "not applicable")

Items that are absent from the history are new information the step found itself (e.g. a path it
guessed or a name it invented) and no compaction could have kept them, so they are not needed.

Extraction (`extract_items`) reads only the assistant steps, never tool results: it wants what the
step *uses*. It is precise rather than greedy, so each item is something a reader would agree on:
  * tool calls: path-valued arguments (`file_path`, `path`, ...) and `url`s as they are; shell
    commands by their first line (heredoc bodies are content being written), whitespace-normalised
    and without a leading `cd DIR &&`, plus the paths, URLs, identifiers and numbers in that line;
    `old_string`-like and search-pattern arguments give their code-like identifiers (the step
    must know the text it replaces or looks for); written content (`new_string`, `content`, ...)
    gives nothing; numbers only from line/offset-like keys (never limits or timeouts); other
    strings are read like prose, except one-word values, which are tool options
    (`"status": "in_progress"`, `"output_mode": "content"`).
    Tool-call ids and JSON keys are never read.
  * text and thinking: URLs; pytest node ids (`tests/a.py::T::test_x`); paths (a name with a known
    extension, absolute paths of 2+ components, `./` `../` `~/` paths); error names (`ValueError`,
    the name only, not the message after `:`); identifiers: a single token in backticks, or
    code-like tokens: snake_case, CamelCase with an inner capital, dotted.names, `name(`;
    numbers with 3+ digits or a decimal point (`956`, `8000`, `3.11`), but not option values
    (`head -100`, `-n 200`, `--timeout=300`) and not digits glued to names (`django-15213`).
Known limits: extension-less relative paths (`src/app`), bare words (`asgiref`), commit hashes
and 2-digit numbers are missed; the body of a heredoc or `python -c "..."` script is treated as
written content, so the names it imports are missed too; raw-text tool input (a patch) is read
like prose, added lines included; keywords, builtins and product names are dropped by small stop
lists, so other code-looking common words can slip in; a common number (`100`) may count as
needed only because it occurs somewhere in the history.

Matching (`present`, `Haystack`) lives in `bench.matching`.
"""

from __future__ import annotations

import re
from functools import lru_cache
from itertools import islice
from operator import itemgetter
from collections.abc import Sequence
from dataclasses import dataclass

from bench.matching import Item, Kind, TranscriptText
from bench.model import Message, TextPart, ThinkingPart, ToolCallPart
from strategies.base import _EXTENSIONS  # one list of "file extensions" for the whole project

@dataclass(frozen=True)
class StepScore:
    k: int
    needed: tuple[Item, ...]
    kept: tuple[Item, ...]
    lost: tuple[Item, ...]
    score: float | None  # None: the steps needed nothing from the history (not applicable)


# --- extraction ----------------------------------------------------------------------------------

_URL = re.compile(r"https?://[^\s'\"<>`)\]}]+")
_NODE_ID = re.compile(r"(?<![\w/.-])(?:[\w.-]+/)*[\w.-]+\.py(?:::[\w\[\].-]+)+")
_PATH = re.compile(
    # absolute paths of 2+ components first, so `/a/b.py.backup` is one path, not `/a/b.py`; every
    # kind holds a `.` or a `/`, which the lookahead asks for first (a plain word fails at once
    # instead of after trying each way to split it)
    rf"(?<![\w.$-])(?=[\w.@+~/-]*[./])(?:/(?:[\w.@+-]+/)+[\w.@+-]+/?|(?:~|\.{{1,2}})?/?(?:[\w.@+-]+/)*[\w@+-]+\.(?:{_EXTENSIONS})(?![\w/(])"
    r"|(?:~|\.{1,2})/[\w.@+/-]+)"
)
# Error names: `(?<![\w.])[A-Z]\w*(?:Error|Exception|Warning)(?!\w)|\b(?:StopIteration|KeyboardInterrupt|SystemExit)\b`,
# written to start with the capital it needs, then to look behind it: Python's regular expressions
# skip quickly to where a pattern's first character can match, but try every position of the
# text when it starts by looking behind (four times slower here; the same matches).
_ERROR = re.compile(
    r"[A-Z](?:(?<![\w.][A-Z])\w*(?:Error|Exception|Warning)(?!\w)|(?<=\bS)topIteration\b|(?<=\bK)eyboardInterrupt\b|(?<=\bS)ystemExit\b)"
)
_TOKEN = re.compile(r"(?<![\w.$@-])[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
# The tokens `_is_identifier` can accept, found without visiting every plain word in Python: a
# `_`, or an ASCII capital after the first letter, in the first name; a dot; or a `(` after it.
# The same token boundaries as _TOKEN (the lookahead only filters), so the same items are found.
# (Read as `(?<![\w.$@-])(?=_|[A-Za-z]\w*?[_A-Z]|[A-Za-z]\w*\.[A-Za-z_]|[A-Za-z]\w*\()` + _TOKEN without its
# lookbehind; written, like _ERROR above, to start with the token's first character.)
_CANDIDATE = re.compile(r"[A-Za-z_](?<![\w.$@-][A-Za-z_])(?:(?<=_)|(?=\w*?[_A-Z]|\w*\.[A-Za-z_]|\w*\())\w*(?:\.[A-Za-z_]\w*)*")
_ERROR_WORDS = ("Error", "Exception", "Warning", "StopIteration", "KeyboardInterrupt", "SystemExit")
# Numbers: `(?:(?<=\bv)|(?<![\w.]))(?:\d+(?:\.\d+)+|\d{3,})(?!(?!p\b)\w|\.\d)`: not glued to a word or a
# dot, except `v1.2`; a trailing `p` is allowed for sed ranges (`'670,690p'`), other glued letters
# (`100px`) are not. Written, like _ERROR, to start with its first digit (five times faster).
_NUMBER = re.compile(r"\d(?:(?<=\bv\d)|(?<![\w.]\d))(?:\d*(?:\.\d+)+|\d{2,})(?!(?!p\b)\w|\.\d)")
_OPTION_BEFORE = re.compile(r"(?:^|\s)--?[A-Za-z][\w-]*[ =]$")  # `-n ` / `--lines=` just before
_BACKTICK = re.compile(r"`([^`\n]+)`")
_FENCE = re.compile(r"```[^\n]*\n(.*?)```", re.S)
_CD_PREFIX = re.compile(r"^cd\s+\S+\s*&&\s*")
# Text `shlex.split` accepts: every quote closed, no backslash left at the end. (A regular
# expression, because shlex's character-by-character Python tokenizer was a fifth of extraction.)
_SHELL_WORDS = re.compile(r"""(?:[^'"\\]|\\.|'[^']*'|"(?:[^"\\]|\\.)*")*""", re.S)

# Code-like words that say nothing about this session: keywords, builtins, product names.
_STOP = frozenset(
    "None True False self cls this null undefined true false def class return import from print else elif "
    "for while with async await lambda pass yield not and raise try except finally const let var function "
    "len str int dict list set tuple range open type isinstance super repr format echo getattr hasattr "
    "setattr sorted enumerate zip object NotImplemented "
    "JavaScript TypeScript GitHub GitLab PostgreSQL MySQL SQLite macOS iOS iPhone iPad OpenAI "
    "ChatGPT YouTube LinkedIn PowerShell VSCode PyPI NumPy DeepSeek LaTeX".split()
)
PATH_KEYS = frozenset({"file_path", "path", "notebook_path", "filename", "file", "dir", "directory"})
COMMAND_KEYS = frozenset({"command", "cmd"})
URL_KEYS = frozenset({"url", "uri"})
OLD_TEXT_KEYS = frozenset({"old_string", "old_str", "old_text"})
PATTERN_KEYS = frozenset({"pattern", "regex", "query", "glob", "symbol"})
WRITTEN_KEYS = frozenset({"new_string", "new_str", "new_text", "content", "file_text", "contents", "insert_text"})
NUMBER_KEYS = frozenset({"offset", "line", "lines", "line_number", "start_line", "end_line", "view_range", "insert_line", "port"})


@lru_cache(maxsize=1 << 16)  # the same words recur in every step of a session
def _is_identifier(token: str, followed_by: str) -> bool:
    """Whether a word-like token is code-like enough to count (see the module docstring)."""
    if token in _STOP or len(token) < 3:
        return False
    if followed_by == "(":
        return True
    if "." in token:
        return len(token) >= 5 and not token.replace(".", "").isdigit()
    stripped = token.strip("_")
    if "_" in stripped or (token.startswith("__") and token.endswith("__")):
        return any(c.isalpha() for c in stripped)
    # CamelCase with an inner capital (`applyFilters`, `WhereNode`), but not plurals like `URLs`.
    return bool(re.search(r"[a-z]", token) and re.search(r"[A-Z]", token[1:]) and not re.fullmatch(r"[A-Z]+s", token))


def _path_item(value: str) -> str | None:
    """A path without `./` or a trailing `/`; None for a bare word like `test` (too common) or `/dev/null`."""
    value = value.strip().removeprefix("./").rstrip("/")
    if "\n" in value or value.startswith("/dev/") or ("/" not in value and "." not in value):
        return None
    return value


def _scan(text: str, found: list[tuple[Kind, str]], *, numbers: bool = True) -> None:
    """Append the items of one piece of prose or command text to `found`, in text order.

    Higher-priority matches (URL, node id, path, error) are blanked out before the later rules run,
    so that the parts of a path are not found again as identifiers or numbers.
    """
    hits: list[tuple[int, Kind, str]] = []

    def take(pattern: re.Pattern[str], kind: Kind) -> None:
        nonlocal text
        matches = list(pattern.finditer(text))
        if not matches:
            return
        for m in matches:
            value = m.group(0).rstrip(".,:;!?'\"")
            if kind == "path" and not (value := _path_item(value)):
                continue
            hits.append((m.start(), kind, value))
            if kind == "identifier" and "::" in value:  # a node id also names its file
                hits.append((m.start(), "path", value.split("::", 1)[0]))
        text = _blanked(text, matches)

    take(_URL, "url")
    if ".py::" in text:  # every node id holds it; the pattern is slow on text without one
        take(_NODE_ID, "identifier")
    take(_PATH, "path")
    if any(word in text for word in _ERROR_WORDS):  # likewise for error names
        take(_ERROR, "error")
    for m in _CANDIDATE.finditer(text):
        end = m.end()
        following = text[end : end + 3]
        if following == "(s)":  # "file(s)" is English, not a call
            continue
        token = m.group()
        if _is_identifier(token, following[:1]):
            hits.append((m.start(), "identifier", token))
    if numbers:
        for m in _NUMBER.finditer(text):
            start = m.start()
            before = text[max(0, start - 40) : start]
            if before.endswith("-") and not before[-2:-1].isdigit():  # `-100`, `django-15213`
                continue
            if not _OPTION_BEFORE.search(before):
                hits.append((start, "number", m.group()))
    hits.sort(key=itemgetter(0))  # stable: a node id's path stays after the node id
    found.extend((kind, value) for _, kind, value in hits)


def _blanked(text: str, matches: list[re.Match[str]]) -> str:
    """`text` with the matched spans replaced by as many spaces (what `pattern.sub` would give)."""
    pieces, end = [], 0
    for m in matches:
        pieces += (text[end : m.start()], " " * (m.end() - m.start()))
        end = m.end()
    pieces.append(text[end:])
    return "".join(pieces)


def _scan_prose(text: str, found: list[tuple[Kind, str]]) -> None:
    """Text or thinking: code blocks and backticked spans first, since the author marked them as code."""
    for block in _FENCE.findall(text):
        _scan(block, found, numbers=False)
    text = _FENCE.sub(" ", text)
    for span in _BACKTICK.findall(text):
        token = span.strip().removesuffix("()")
        is_name = re.fullmatch(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*", token) and not _PATH.fullmatch(token)
        if is_name and token not in _STOP and len(token) >= 3:  # `session_nav.html` stays a path
            found.append(("error" if _ERROR.fullmatch(token) else "identifier", token))
        else:
            _scan(span, found)
    _scan(_BACKTICK.sub(" ", text), found)


def _command_line(value: object) -> str | None:
    """The first line of a shell command, whitespace-normalised, without a leading `cd DIR &&`."""
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        # Codex-style argv: ["bash", "-lc", "the command"] means the last element.
        value = value[-1] if value[0] in ("bash", "sh", "zsh") and len(value) >= 3 else " ".join(value)
    if not isinstance(value, str):
        return None
    line = " ".join(value.strip().split("\n", 1)[0].split())
    return _CD_PREFIX.sub("", line) or None


def _opens_script(line: str) -> bool:
    """A first line that only opens a heredoc or a multi-line quoted script (`python -c "`): the
    command is really the script, which is content being written, so the line is no command item."""
    return "<<" in line or _SHELL_WORDS.fullmatch(line) is None  # no closing quotation on this line


def _scan_arguments(value: object, key: str, found: list[tuple[Kind, str]]) -> None:
    """Walk tool-call arguments by value; the key only decides how a value is read."""
    if isinstance(value, dict):
        for sub_key, sub_value in value.items():
            _scan_arguments(sub_value, str(sub_key).lower(), found)
    elif isinstance(value, list) and key not in COMMAND_KEYS:
        for element in value:
            _scan_arguments(element, key, found)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        if key in NUMBER_KEYS and _NUMBER.fullmatch(str(value)):
            found.append(("number", str(value)))
    elif key in COMMAND_KEYS:
        line = _command_line(value)
        if line and " " in line and not _opens_script(line):
            found.append(("command", line))
        if line:
            _scan(line, found)
    elif not isinstance(value, str) or key in WRITTEN_KEYS:
        return
    elif key in PATH_KEYS:
        if path := _path_item(value):
            found.append(("path", path))
    elif key in URL_KEYS:
        found.append(("url", value.strip()))
    elif key in OLD_TEXT_KEYS or key in PATTERN_KEYS:
        _scan(value, found, numbers=False)
    elif len(value.split()) > 1:  # prose (a description, a prompt); one word is an option value
        _scan_prose(value, found)


def extract_items(messages: Sequence[Message]) -> list[Item]:
    """What these messages rely on, deduplicated by text (first kind wins), in order of appearance."""
    seen: dict[str, Item] = {}
    for message in messages:
        for kind, text in _message_items(message):
            if text and text not in seen:
                seen[text] = Item(kind, text)
    return list(seen.values())


# Each message's found items, in order, kept while the message lives: a sweep scores the same
# next steps at the same compaction points under many settings. The entry holds the message so
# its id cannot be reused by another object while the entry lives.
_ITEMS: dict[int, tuple[Message, list[tuple[Kind, str]]]] = {}


def _message_items(message: Message) -> list[tuple[Kind, str]]:
    entry = _ITEMS.get(id(message))
    if entry is None or entry[0] is not message:
        if len(_ITEMS) > 100_000:
            _ITEMS.clear()
        found: list[tuple[Kind, str]] = []
        for part in message.parts:
            if isinstance(part, (TextPart, ThinkingPart)):
                _scan_prose(part.text, found)
            elif isinstance(part, ToolCallPart):
                arguments = part.parsed_arguments()
                if isinstance(arguments, (dict, list)):
                    _scan_arguments(arguments, "", found)
                else:  # raw text input (e.g. a patch): read it like prose
                    _scan_prose(str(arguments), found)
        entry = _ITEMS[id(message)] = (message, found)
    return entry[1]


def preservation(
    history_before: Sequence[Message], compacted: Sequence[Message], next_steps: Sequence[Message], k: int
) -> StepScore:
    """Score one compaction on the next `k` recorded assistant steps.

    `next_steps` are the recorded messages after the compaction point; only the first `k` assistant
    messages among them are read (fewer near the end of a session). `history_before` is the full
    uncompacted history, `compacted` the context the strategy produced (including its summary).
    """
    messages = (*history_before, *next_steps)
    return preservation_at(messages, len(history_before), compacted, (k,))[k]


def preservation_at(
    messages: Sequence[Message], index: int, compacted: Sequence[Message], ks: Sequence[int] = (1, 5)
) -> dict[int, StepScore]:
    """`preservation` for a compaction before `messages[index]`, for several k at once.

    What the next steps need depends only on the session and the position, not on the strategy,
    and where an item occurs in the session is the same for every compaction of it: a sweep that
    compacts the same session many times extracts each step's items once and searches the
    session's text once per item (`TranscriptText`, kept for the last few sessions).
    """
    key = (id(messages), index, id(compacted), tuple(ks))
    found = _SCORES.get(key)
    if found is not None and found[0] is messages and found[1] is compacted:
        return found[2]
    text = _transcript_text(messages)
    needed_by_k = _needed_at(text, index, tuple(ks))
    items = list(dict.fromkeys(i for needed in needed_by_k.values() if needed for i in needed))
    found = dict(zip(items, text.in_context(items, compacted)))
    scores = {}
    for k, needed in needed_by_k.items():
        if needed is None:
            scores[k] = StepScore(k, (), (), (), None)
            continue
        kept = tuple(i for i in needed if found[i])
        lost = tuple(i for i in needed if not found[i])
        scores[k] = StepScore(k, needed, kept, lost, len(kept) / len(needed) if needed else None)
    if len(_SCORES) > 256:
        _SCORES.clear()
    _SCORES[key] = (messages, compacted, scores)
    return scores


# The scores of the last compactions, by the identity of the session and the compacted context:
# settings that share a compaction (bench.shared_compactions) hand over the same context, scored
# once. The entry holds both, so their ids cannot be reused while it lives.
_SCORES: dict[tuple, tuple[Sequence[Message], Sequence[Message], dict[int, StepScore]]] = {}


_TEXTS: dict[int, TranscriptText] = {}


def _transcript_text(messages: Sequence[Message]) -> TranscriptText:
    found = _TEXTS.get(id(messages))
    if found is None or found.messages is not messages:  # it holds `messages`, so the id is not reused
        if len(_TEXTS) >= 8:
            _TEXTS.clear()
        found = _TEXTS[id(messages)] = TranscriptText(messages)
    return found


_NEEDED: dict[tuple[int, int, tuple[int, ...]], tuple[TranscriptText, dict]] = {}


def _needed_at(text: TranscriptText, index: int, ks: tuple[int, ...]) -> dict[int, tuple[Item, ...] | None]:
    key = (id(text), index, ks)
    found = _NEEDED.get(key)
    if found is not None and found[0] is text:
        return found[1]
    steps = list(islice((m for m in text.messages[index:] if m.role == "assistant"), max(ks)))
    result: dict[int, tuple[Item, ...] | None] = {}
    for k in ks:
        items = extract_items(steps[:k])
        # Items absent from the history are what the step found itself: not needed (module docstring).
        result[k] = tuple(i for i in items if text.in_history(i, index)) if items else None
    if len(_NEEDED) > 512:
        _NEEDED.clear()
    _NEEDED[key] = (text, result)
    return result


def needed_items(messages: Sequence[Message], index: int, ks: Sequence[int] = (1, 5)) -> dict[int, tuple[Item, ...] | None]:
    """What the next k recorded assistant steps after `messages[index]` need from the history, for
    each k (None: the steps use nothing at all), with the session's text (`TranscriptText`) that
    `preservation_at` searches: for other scores of the same compaction (`bench.summary_recall`)."""
    return _needed_at(_transcript_text(messages), index, tuple(ks))


def transcript_text(messages: Sequence[Message]) -> TranscriptText:
    """The searchable text of a session, shared with `preservation_at` (kept for the last few sessions)."""
    return _transcript_text(messages)
